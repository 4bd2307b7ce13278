package io.handoff.benchmarks.kv;

import io.handoff.core.kv.PagePool;
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

import java.util.concurrent.TimeUnit;
import java.util.stream.IntStream;

/**
 * The KV page allocator: one request's pages taken and given back ({@link PagePool#allocate} then
 * {@link PagePool#release}), from a free list that is one run or every other page (a pool after many requests of
 * mixed lengths). The reference is the least a free list can do for the same pages: copy that many ids off a stack
 * of free ids and push them back, with none of the pool's states, refcounts, generations, checks or lock.
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.SECONDS)
@Fork(1)
@Warmup(iterations = 2, time = 1)
@Measurement(iterations = 3, time = 1)
public class PagePoolBenchmark
{
    private static final int POOL_PAGES = 65_536;

    /** Pages per call: a decode step's one page, a chunk of 256 tokens, a 4096-token prompt (page size 16). */
    @Param({"1", "16", "256"})
    public int pages;

    /** {@code contiguous}: every page free; {@code fragmented}: every other page held by someone else. */
    @Param({"contiguous", "fragmented"})
    public String freeList;

    private PagePool pool;
    private int[] freeStack;
    private int freeTop;

    @Setup
    public void setUp()
    {
        pool = new PagePool(POOL_PAGES);
        int[] free = IntStream.range(0, POOL_PAGES).toArray();
        switch (freeList) {
            case "contiguous" -> {}
            case "fragmented" -> {
                pool.allocate(POOL_PAGES).orElseThrow();
                pool.release(IntStream.range(0, POOL_PAGES).filter(page -> page % 2 == 1).toArray());
                free = IntStream.range(0, POOL_PAGES).filter(page -> page % 2 == 1).toArray();
            }
            default -> throw new IllegalArgumentException("freeList is contiguous or fragmented, not " + freeList);
        }
        // the stack pops the lowest ids first, as the pool hands them out
        freeStack = new int[free.length];
        for (int i = 0; i < free.length; i++) {
            freeStack[i] = free[free.length - 1 - i];
        }
        freeTop = free.length;
    }

    @Benchmark
    public int allocateAndRelease(Blackhole blackhole)
    {
        int[] taken = pool.allocate(pages).orElseThrow();
        blackhole.consume(taken);
        return pool.release(taken);
    }

    @Benchmark
    public int freeListReference(Blackhole blackhole)
    {
        int[] taken = new int[pages];
        for (int i = 0; i < pages; i++) {
            taken[i] = freeStack[--freeTop];
        }
        blackhole.consume(taken);
        for (int i = pages - 1; i >= 0; i--) {
            freeStack[freeTop++] = taken[i];
        }
        return pages;
    }
}
