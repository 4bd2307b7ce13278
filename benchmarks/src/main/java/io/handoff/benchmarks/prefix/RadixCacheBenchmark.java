package io.handoff.benchmarks.prefix;

import io.handoff.core.kv.PagePool;
import io.handoff.core.prefix.PrefixInsert;
import io.handoff.core.prefix.RadixCache;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.Warmup;
import org.openjdk.jmh.infra.Blackhole;

import java.util.Arrays;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;

/**
 * The radix prefix cache with {@value #CACHED_PROMPTS} cached prompts that share their first half (a system prompt,
 * locked, as a running request would hold it) and differ in the second:
 * <ul>
 * <li>{@code match}: admission's lookup of a whole cached prompt;</li>
 * <li>{@code insertCached}: a prompt offered again (what each chunk of a chunked prefill does with pages already
 * cached): the walk and the comparisons, no new node;</li>
 * <li>{@code insertNewAndEvict}: a new prompt on the shared prefix (a leaf added, its pages retained), then the least
 * recently used leaf evicted, so the cache stays at its size;</li>
 * <li>{@code compareTokensReference}: the least a match must do, reading the prompt's tokens once against a copy.</li>
 * </ul>
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.SECONDS)
@Fork(1)
@Warmup(iterations = 2, time = 1)
@Measurement(iterations = 3, time = 1)
public class RadixCacheBenchmark
{
    private static final int PAGE_SIZE = 16;
    private static final int CACHED_PROMPTS = 64;
    private static final int VOCAB = 32_000;

    @Param({"256", "4096"})
    public int promptTokens;

    private RadixCache cache;
    private int[][] prompts;
    private int[][] copies;
    private int[][] pagesOf;
    private int next;

    // insertNewAndEvict: a prompt whose tail's first token counts up (unique among the cached leaves), and one more
    // set of tail pages than leaves, so the leaf evicted never holds the pages just inserted
    private int[] newPrompt;
    private int[] newPages;
    private int[][] tailPages;
    private int counter;

    @Setup
    public void setUp()
    {
        int promptPages = promptTokens / PAGE_SIZE;
        int prefixPages = promptPages / 2;
        int tailPageCount = promptPages - prefixPages;
        PagePool pool = new PagePool(prefixPages + tailPageCount * (2 * CACHED_PROMPTS + 1) + promptPages);
        cache = new RadixCache(PAGE_SIZE, pool);
        SplittableRandom random = new SplittableRandom(13);
        int[] prefix = random.ints(prefixPages * PAGE_SIZE, 0, VOCAB).toArray();
        int[] prefixPageIds = pool.allocate(prefixPages).orElseThrow();
        prompts = new int[CACHED_PROMPTS][];
        copies = new int[CACHED_PROMPTS][];
        pagesOf = new int[CACHED_PROMPTS][];
        for (int p = 0; p < CACHED_PROMPTS; p++) {
            int[] prompt = Arrays.copyOf(prefix, promptTokens);
            for (int i = prefix.length; i < promptTokens; i++) {
                prompt[i] = random.nextInt(VOCAB);
            }
            int[] pages = Arrays.copyOf(prefixPageIds, promptPages);
            System.arraycopy(pool.allocate(tailPageCount).orElseThrow(), 0, pages, prefixPages, tailPageCount);
            PrefixInsert inserted = cache.insert(prompt, promptTokens, pages);
            if (inserted.duplicates().length != 0) {
                throw new IllegalStateException("setup: the cached prompts should share their prefix pages");
            }
            prompts[p] = prompt;
            copies[p] = prompt.clone();
            pagesOf[p] = pages;
        }
        cache.lock(cache.match(prefix).node());

        newPrompt = Arrays.copyOf(prefix, promptTokens);
        for (int i = prefix.length; i < promptTokens; i++) {
            newPrompt[i] = random.nextInt(VOCAB);
        }
        // a token id past the vocabulary: no cached prompt's tail starts like a new one's
        newPrompt[prefix.length + 1] = VOCAB;
        newPages = Arrays.copyOf(prefixPageIds, promptPages);
        tailPages = new int[CACHED_PROMPTS + 1][];
        for (int t = 0; t < tailPages.length; t++) {
            tailPages[t] = pool.allocate(tailPageCount).orElseThrow();
        }
    }

    @Benchmark
    public Object match()
    {
        int p = next++ & (CACHED_PROMPTS - 1);
        return cache.match(prompts[p], promptTokens);
    }

    @Benchmark
    public Object insertCached()
    {
        int p = next++ & (CACHED_PROMPTS - 1);
        return cache.insert(prompts[p], promptTokens, pagesOf[p]);
    }

    @Benchmark
    public int insertNewAndEvict(Blackhole blackhole)
    {
        int prefixTokens = promptTokens / PAGE_SIZE / 2 * PAGE_SIZE;
        int[] tail = tailPages[Math.floorMod(counter, tailPages.length)];
        newPrompt[prefixTokens] = counter++;
        System.arraycopy(tail, 0, newPages, prefixTokens / PAGE_SIZE, tail.length);
        blackhole.consume(cache.insert(newPrompt, promptTokens, newPages));
        return cache.evict(tail.length);
    }

    @Benchmark
    public boolean compareTokensReference()
    {
        int p = next++ & (CACHED_PROMPTS - 1);
        return Arrays.equals(prompts[p], copies[p]);
    }
}
