package io.handoff.core.prefix;

import io.handoff.core.kv.PagePool;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.Combinators;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import net.jqwik.api.constraints.IntRange;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Random;
import java.util.Set;
import java.util.TreeSet;
import java.util.stream.IntStream;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Requests start (match, lock, allocate), insert finished chunks, finish, and the cache evicts, in random
 * order. A naive reference (a map from each cached page-aligned token prefix to its page) predicts every
 * match and insert; after every step the pool and the cache hold their invariants, no locked prefix was
 * evicted, and every page is accounted for: its refcount is one for the cache plus one per request
 * holding it, and it is free exactly when nobody holds it.
 */
class RadixCachePropertiesTest
{
    enum Kind
    {
        START, CHUNK, FINISH, EVICT, MATCH
    }

    record Op(Kind kind, long seed) {}

    @Provide
    Arbitrary<List<Op>> operations()
    {
        return Combinators.combine(Arbitraries.of(Kind.class), Arbitraries.longs()).as(Op::new).list().ofMaxSize(50);
    }

    @Provide
    Arbitrary<Integer> pageSizes()
    {
        return Arbitraries.of(1, 2, 4);
    }

    @Property(tries = 300, seed = "2718")
    void cacheAgreesWithNaiveReferenceAndAccountsForEveryPage(
            @ForAll("pageSizes") int pageSize,
            @ForAll @IntRange(min = 4, max = 24) int totalPages,
            @ForAll("operations") List<Op> ops)
    {
        Simulation simulation = new Simulation(pageSize, totalPages);
        for (Op op : ops) {
            simulation.apply(op);
            simulation.checkAccounting();
        }
        simulation.finishAll();
        simulation.checkAccounting();
        assertThat(simulation.cache.lockedPages()).isZero();
        simulation.cache.evict(Integer.MAX_VALUE);
        assertThat(simulation.pool.freePages()).isEqualTo(totalPages);
    }

    private static final class Request
    {
        final int[] tokens;
        final int[] pages;
        PrefixMatch prefix;

        Request(int[] tokens, int[] pages, PrefixMatch prefix)
        {
            this.tokens = tokens;
            this.pages = pages;
            this.prefix = prefix;
        }
    }

    private static final class Simulation
    {
        final int pageSize;
        final PagePool pool;
        final RadixCache cache;
        final Map<List<Integer>, Integer> reference = new HashMap<>();
        final List<Request> running = new ArrayList<>();
        final List<int[]> history = new ArrayList<>();

        Simulation(int pageSize, int totalPages)
        {
            this.pageSize = pageSize;
            this.pool = new PagePool(totalPages);
            this.cache = new RadixCache(pageSize, pool);
        }

        void apply(Op op)
        {
            Random random = new Random(op.seed());
            switch (op.kind()) {
                case START -> start(tokens(random));
                case MATCH -> {
                    int[] tokens = tokens(random);
                    assertMatch(cache.match(tokens), tokens, tokens.length);
                }
                case CHUNK -> {
                    if (!running.isEmpty()) {
                        Request request = running.get(random.nextInt(running.size()));
                        chunk(request, random.nextInt(request.tokens.length + 1));
                    }
                }
                case FINISH -> {
                    if (!running.isEmpty()) {
                        finish(running.remove(random.nextInt(running.size())));
                    }
                }
                case EVICT -> {
                    int asked = random.nextInt(6);
                    int evictable = cache.evictablePages();
                    int cached = cache.cachedPages();
                    int evicted = cache.evict(asked);
                    assertThat(evicted).isGreaterThanOrEqualTo(Math.min(asked, evictable));
                    assertThat(cache.cachedPages()).isEqualTo(cached - evicted);
                    syncEviction();
                }
            }
        }

        // token sequences from a small alphabet, often extending an earlier one, so prefixes are shared
        int[] tokens(Random random)
        {
            int length = 1 + random.nextInt(12);
            int[] tokens = random.ints(length, 0, 2).toArray();
            if (!history.isEmpty() && random.nextBoolean()) {
                int[] earlier = history.get(random.nextInt(history.size()));
                System.arraycopy(earlier, 0, tokens, 0, Math.min(length, random.nextInt(earlier.length + 1)));
            }
            history.add(tokens);
            return tokens;
        }

        void start(int[] tokens)
        {
            PrefixMatch match = cache.match(tokens);
            assertMatch(match, tokens, tokens.length);
            cache.lock(match.node());
            pool.retain(match.pages());
            int needed = (tokens.length + pageSize - 1) / pageSize - match.pageCount();
            if (pool.freePages() < needed) {
                cache.evictUntilFree(needed);
                syncEviction();
            }
            Optional<int[]> allocated = pool.allocate(needed);
            if (allocated.isEmpty()) {
                // nothing left to evict: every cached page is locked
                assertThat(cache.evictablePages()).isZero();
                cache.unlock(match.node());
                pool.release(match.pages());
                return;
            }
            int[] pages = IntStream.concat(Arrays.stream(match.pages()), Arrays.stream(allocated.get())).toArray();
            running.add(new Request(tokens, pages, match));
        }

        void chunk(Request request, int computed)
        {
            PrefixInsert inserted = insert(request, computed);
            int[] prefixPages = inserted.prefix().pages();
            for (int i = 0; i < prefixPages.length; i++) {
                if (request.pages[i] != prefixPages[i]) {
                    pool.release(new int[] {request.pages[i]});
                    pool.retain(new int[] {prefixPages[i]});
                    request.pages[i] = prefixPages[i];
                }
            }
            cache.lock(inserted.prefix().node());
            cache.unlock(request.prefix.node());
            request.prefix = inserted.prefix();
        }

        void finish(Request request)
        {
            insert(request, request.tokens.length);
            cache.unlock(request.prefix.node());
            pool.release(request.pages);
        }

        void finishAll()
        {
            while (!running.isEmpty()) {
                finish(running.removeLast());
                checkAccounting();
            }
        }

        // inserts into the cache and the reference, and checks they agree on the prefix and the duplicates
        PrefixInsert insert(Request request, int length)
        {
            PrefixInsert inserted = cache.insert(request.tokens, length, request.pages);
            int alignedPages = length / pageSize;
            int[] expectedPages = new int[alignedPages];
            List<Integer> expectedDuplicates = new ArrayList<>();
            for (int k = 1; k <= alignedPages; k++) {
                Integer cached = reference.putIfAbsent(key(request.tokens, k), request.pages[k - 1]);
                expectedPages[k - 1] = cached == null ? request.pages[k - 1] : cached;
                if (cached != null && cached != request.pages[k - 1]) {
                    expectedDuplicates.add(request.pages[k - 1]);
                }
            }
            assertThat(inserted.prefix().length()).isEqualTo(alignedPages * pageSize);
            assertThat(inserted.prefix().pages()).containsExactly(expectedPages);
            assertThat(inserted.duplicates()).containsExactly(expectedDuplicates.stream().mapToInt(Integer::intValue).toArray());
            return inserted;
        }

        void assertMatch(PrefixMatch match, int[] tokens, int length)
        {
            List<Integer> expected = new ArrayList<>();
            for (int k = 1; k * pageSize <= length && reference.containsKey(key(tokens, k)); k++) {
                expected.add(reference.get(key(tokens, k)));
            }
            assertThat(match.length()).isEqualTo(expected.size() * pageSize);
            assertThat(match.pages()).containsExactly(expected.stream().mapToInt(Integer::intValue).toArray());
        }

        // drops from the reference what the cache evicted; nothing locked may be among it
        void syncEviction()
        {
            Set<Integer> remaining = new HashSet<>();
            Arrays.stream(cache.cachedPageIds()).forEach(remaining::add);
            Set<List<Integer>> locked = lockedKeys();
            for (var entries = reference.entrySet().iterator(); entries.hasNext(); ) {
                var entry = entries.next();
                if (!remaining.contains(entry.getValue())) {
                    assertThat(locked).as("evicted a locked prefix").doesNotContain(entry.getKey());
                    entries.remove();
                }
            }
            for (List<Integer> key : reference.keySet()) {
                if (key.size() > pageSize) {
                    assertThat(reference).as("cached prefixes stay prefix-closed").containsKey(key.subList(0, key.size() - pageSize));
                }
            }
        }

        Set<List<Integer>> lockedKeys()
        {
            Set<List<Integer>> locked = new HashSet<>();
            for (Request request : running) {
                for (int k = 1; k <= request.prefix.pageCount(); k++) {
                    locked.add(key(request.tokens, k));
                }
            }
            return locked;
        }

        void checkAccounting()
        {
            pool.checkInvariants();
            cache.checkInvariants();
            assertThat(cache.cachedPageIds()).containsExactly(new TreeSet<>(reference.values()).stream().mapToInt(Integer::intValue).toArray());
            Set<List<Integer>> locked = lockedKeys();
            assertThat(reference.keySet()).containsAll(locked);
            assertThat(cache.lockedPages()).isEqualTo(locked.size());

            int[] expectedRefs = new int[pool.totalPages()];
            reference.values().forEach(page -> expectedRefs[page]++);
            running.forEach(request -> Arrays.stream(request.pages).forEach(page -> expectedRefs[page]++));
            int held = 0;
            for (int page = 0; page < expectedRefs.length; page++) {
                assertThat(pool.refCount(page)).as("refcount of page %d", page).isEqualTo(expectedRefs[page]);
                held += expectedRefs[page] > 0 ? 1 : 0;
            }
            assertThat(pool.freePages() + held).isEqualTo(pool.totalPages());
        }

        List<Integer> key(int[] tokens, int pages)
        {
            return Arrays.stream(tokens, 0, pages * pageSize).boxed().toList();
        }
    }
}
