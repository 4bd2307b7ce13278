package io.handoff.core.kv;

import java.util.Arrays;
import java.util.BitSet;
import java.util.Optional;

import static java.util.Objects.requireNonNull;

/**
 * The page allocator: page states, refcounts, generations and the free list over pages {@code 0..total-1}.
 *
 * <p>Allocation always hands out the lowest free page ids first, so a run (and a test) is reproducible.
 * Every {@code FREE -> OWNED} transition bumps the page's generation, so anything that remembers a page
 * can tell a reused page from the one it knew.
 *
 * <p>Every batch operation checks all its pages before changing any, so a refused call (an
 * {@link IllegalStateException} naming the page and its state) leaves the pool as it was. Running out
 * of pages is not an error: {@link #allocate} returns empty.
 *
 * <p>The scheduler thread drives it, but transfer threads quarantine and release pages, so every public
 * method is synchronized; every call is short (O(pages in the call)).
 */
public final class PagePool
{
    private final PageState[] states;
    private final int[] refCounts;
    private final long[] generations;
    // bit set iff the page is FREE; nextSetBit gives the lowest free id
    private final BitSet free;
    // duplicate detection inside one batch: seen[page] == stamp means "already in this batch"
    private final int[] seen;
    private int stamp;

    private final int partitions;
    private int freeCount;
    private int ownedCount;
    private int receivingCount;
    private int quarantinedCount;

    public PagePool(int totalPages)
    {
        this(totalPages, 1);
    }

    /**
     * A pool of {@code partitions} equal parts, pages {@code [p * totalPages / partitions, (p + 1) * ...)} being part
     * {@code p}: a data-parallel server's pool, part {@code p} held by rank {@code p}, so that a request's pages, all from
     * one part ({@link #allocate(int, int)}), are all in its rank's memory.
     */
    public PagePool(int totalPages, int partitions)
    {
        if (partitions < 1 || totalPages % partitions != 0) {
            throw new IllegalArgumentException(totalPages + " pages do not split into " + partitions + " equal parts");
        }
        this.partitions = partitions;
        if (totalPages < 1) {
            throw new IllegalArgumentException("a page pool needs at least one page, got " + totalPages);
        }
        this.states = new PageState[totalPages];
        this.refCounts = new int[totalPages];
        this.generations = new long[totalPages];
        this.free = new BitSet(totalPages);
        this.seen = new int[totalPages];
        Arrays.fill(states, PageState.FREE);
        free.set(0, totalPages);
        freeCount = totalPages;
    }

    public int totalPages()
    {
        return states.length;
    }

    public synchronized int freePages()
    {
        return freeCount;
    }

    /** Parts of the pool ({@link #PagePool(int, int)}); 1 for an undivided pool. */
    public int partitions()
    {
        return partitions;
    }

    /** The part page {@code page} belongs to. */
    public int partitionOf(int page)
    {
        return page / (states.length / partitions);
    }

    /** Free pages of part {@code partition}. */
    public synchronized int freePages(int partition)
    {
        int size = states.length / partitions;
        int from = partition * size;
        int count = 0;
        for (int page = free.nextSetBit(from); page >= 0 && page < from + size; page = free.nextSetBit(page + 1)) {
            count++;
        }
        return count;
    }

    /**
     * As {@link #allocate(int)}, from part {@code partition} only: its lowest free ids. Empty, changing nothing, when that
     * part has fewer than {@code count} free pages.
     */
    public synchronized Optional<int[]> allocate(int count, int partition)
    {
        if (partition < 0 || partition >= partitions) {
            throw new IllegalArgumentException("part " + partition + " is not in 0.." + (partitions - 1));
        }
        if (partitions == 1) {
            return allocate(count);
        }
        if (count < 0) {
            throw new IllegalArgumentException("page count must be >= 0, was " + count);
        }
        if (count > freePages(partition)) {
            return Optional.empty();
        }
        return Optional.of(take(count, partition * (states.length / partitions)));
    }

    /** The {@code count} lowest free pages from {@code from} on, made OWNED (refcount 1, a new generation); the caller checked they exist. */
    private int[] take(int count, int from)
    {
        int[] pages = new int[count];
        int page = from - 1;
        for (int i = 0; i < count; i++) {
            page = free.nextSetBit(page + 1);
            free.clear(page);
            states[page] = PageState.OWNED;
            refCounts[page] = 1;
            generations[page]++;
            pages[i] = page;
        }
        freeCount -= count;
        ownedCount += count;
        return pages;
    }

    /**
     * Takes {@code count} free pages, lowest ids first, each {@code OWNED} with refcount 1 and a new
     * generation. Returns empty, changing nothing, when fewer than {@code count} pages are free.
     */
    public synchronized Optional<int[]> allocate(int count)
    {
        if (count < 0) {
            throw new IllegalArgumentException("page count must be >= 0, was " + count);
        }
        if (count > freeCount) {
            return Optional.empty();
        }
        return Optional.of(take(count, 0));
    }

    /** Adds one reference to each page; each must be {@code OWNED} (a receiving page has exactly one owner). */
    public synchronized void retain(int[] pages)
    {
        validate(pages, "retain", page -> states[page] == PageState.OWNED ? null : "only an OWNED page can gain an owner");
        for (int page : pages) {
            refCounts[page]++;
        }
    }

    /**
     * Drops one reference from each page; a page whose count reaches 0 returns to the free list.
     * A {@code RECEIVING} page cannot be released: a write may still land in it, so it must be
     * {@linkplain #quarantine quarantined} (or committed first).
     *
     * @return how many of the pages became free
     */
    public synchronized int release(int[] pages)
    {
        validate(pages, "release", page -> switch (states[page]) {
            case OWNED -> null;
            case RECEIVING -> "a write may still land in it: quarantine it, or commit it first";
            case FREE -> "double release";
            case QUARANTINED -> "a quarantined page is released only with releaseQuarantined and a proof";
        });
        int freed = 0;
        for (int page : pages) {
            if (--refCounts[page] == 0) {
                states[page] = PageState.FREE;
                free.set(page);
                ownedCount--;
                freeCount++;
                freed++;
            }
        }
        return freed;
    }

    /** Marks exclusively owned pages (refcount 1) as the destination of a transfer: {@code OWNED -> RECEIVING}. */
    public synchronized void markReceiving(int[] pages)
    {
        validate(pages, "mark receiving", page -> states[page] == PageState.OWNED && refCounts[page] == 1
                ? null
                : "only an OWNED page with one owner can receive (a shared page must never be written remotely)");
        for (int page : pages) {
            states[page] = PageState.RECEIVING;
        }
        ownedCount -= pages.length;
        receivingCount += pages.length;
    }

    /** The transfer into these pages committed: {@code RECEIVING -> OWNED}, still with one owner. */
    public synchronized void commitReceived(int[] pages)
    {
        validate(pages, "commit", page -> states[page] == PageState.RECEIVING ? null : "only a RECEIVING page can be committed");
        for (int page : pages) {
            states[page] = PageState.OWNED;
        }
        receivingCount -= pages.length;
        ownedCount += pages.length;
    }

    /**
     * Takes pages a remote writer may still write into out of use: their single owner gives up its
     * reference, but the pages do not become free. Each must be {@code RECEIVING}, or {@code OWNED} by
     * exactly one owner.
     */
    public synchronized void quarantine(int[] pages)
    {
        validate(pages, "quarantine", page -> switch (states[page]) {
            case RECEIVING -> null;
            case OWNED -> refCounts[page] == 1 ? null : "it has other owners, who would keep reading a page that may be overwritten";
            case FREE, QUARANTINED -> "only an owned or receiving page can be quarantined";
        });
        for (int page : pages) {
            if (states[page] == PageState.OWNED) {
                ownedCount--;
            }
            else {
                receivingCount--;
            }
            states[page] = PageState.QUARANTINED;
            refCounts[page] = 0;
        }
        quarantinedCount += pages.length;
    }

    /** Returns quarantined pages to the free list, on {@code proof} that no write into them can land any more. */
    public synchronized void releaseQuarantined(int[] pages, ReleaseProof proof)
    {
        requireNonNull(proof, "proof is null");
        validate(pages, "release quarantined", page -> states[page] == PageState.QUARANTINED ? null : "it is not quarantined");
        for (int page : pages) {
            states[page] = PageState.FREE;
            free.set(page);
        }
        quarantinedCount -= pages.length;
        freeCount += pages.length;
    }

    public synchronized PageState state(int page)
    {
        checkIndex(page);
        return states[page];
    }

    public synchronized int refCount(int page)
    {
        checkIndex(page);
        return refCounts[page];
    }

    /** How many times the page has been allocated; 0 for a page never handed out. */
    public synchronized long generation(int page)
    {
        checkIndex(page);
        return generations[page];
    }

    public synchronized PageAccounting accounting()
    {
        return new PageAccounting(states.length, freeCount, ownedCount, receivingCount, quarantinedCount);
    }

    /**
     * Checks the pool's structural invariants and throws {@link IllegalStateException} naming the first
     * violation: every page is in exactly one state, free pages have refcount 0 and are in the free list
     * (and only they are), owned and receiving pages have refcount >= 1 (receiving exactly 1), quarantined
     * pages have refcount 0, and the per-state counts add up to the total. O(pages); for tests and probes.
     */
    public synchronized void checkInvariants()
    {
        int[] counts = new int[PageState.values().length];
        for (int page = 0; page < states.length; page++) {
            PageState state = states[page];
            if (state == null) {
                throw new IllegalStateException("page " + page + " has no state");
            }
            counts[state.ordinal()]++;
            int refCount = refCounts[page];
            boolean ok = switch (state) {
                case FREE, QUARANTINED -> refCount == 0;
                case OWNED -> refCount >= 1;
                case RECEIVING -> refCount == 1;
            };
            if (!ok) {
                throw new IllegalStateException("page " + page + " is " + state + " with refcount " + refCount);
            }
            if (free.get(page) != (state == PageState.FREE)) {
                throw new IllegalStateException("page " + page + " is " + state + " but the free list "
                        + (free.get(page) ? "contains" : "lacks") + " it");
            }
        }
        if (free.length() > states.length) {
            throw new IllegalStateException("the free list holds ids beyond the pool: " + free);
        }
        PageAccounting recorded = accounting();
        PageAccounting actual = new PageAccounting(states.length, counts[PageState.FREE.ordinal()], counts[PageState.OWNED.ordinal()],
                counts[PageState.RECEIVING.ordinal()], counts[PageState.QUARANTINED.ordinal()]);
        if (!recorded.equals(actual) || free.cardinality() != freeCount) {
            throw new IllegalStateException("page counts drifted: recorded " + recorded + ", actual " + actual
                    + ", free list size " + free.cardinality());
        }
    }

    private interface PageCheck
    {
        /** Why {@code page} may not take part in the operation, or null when it may. */
        String violation(int page);
    }

    // checks every page before any is changed, so a refused batch leaves the pool untouched
    private void validate(int[] pages, String operation, PageCheck check)
    {
        requireNonNull(pages, "pages is null");
        if (++stamp == 0) {
            Arrays.fill(seen, 0);
            stamp = 1;
        }
        for (int page : pages) {
            checkIndex(page);
            if (seen[page] == stamp) {
                throw new IllegalStateException("cannot " + operation + " page " + page + ": it appears twice in one call");
            }
            seen[page] = stamp;
            String violation = check.violation(page);
            if (violation != null) {
                throw new IllegalStateException("cannot " + operation + " page " + page + ": it is " + states[page] + " (refcount "
                        + refCounts[page] + ", generation " + generations[page] + "); " + violation);
            }
        }
    }

    private void checkIndex(int page)
    {
        if (page < 0 || page >= states.length) {
            throw new IllegalArgumentException("page " + page + " is outside the pool of " + states.length + " pages");
        }
    }
}
