package io.handoff.bench.transfer;

import java.util.SplittableRandom;

/**
 * Where each source page lands: page {@code i} of every source region goes to page {@code destinations[i]} of the
 * same region on the receiver. Contiguous maps {@code i} to {@code i}; scattered is a seeded random permutation
 * in which no two consecutive source pages land on neighbouring pages, as in a fragmented decode pool, so every
 * run of a plan is one page long.
 */
record PageMapping(int[] destinations, boolean scattered)
{
    static PageMapping contiguous(int pages)
    {
        int[] destinations = new int[pages];
        for (int i = 0; i < pages; i++) {
            destinations[i] = i;
        }
        return new PageMapping(destinations, false);
    }

    static PageMapping scattered(int pages, long seed)
    {
        if (pages < PayloadShape.MIN_SCATTER_PAGES) {
            throw new IllegalArgumentException("--scatter needs at least " + PayloadShape.MIN_SCATTER_PAGES + " pages per region, the payload has "
                    + pages + ": raise --bytes or lower --page-bytes or --layers");
        }
        SplittableRandom random = new SplittableRandom(seed);
        int[] destinations = contiguous(pages).destinations();
        // Shuffle, then repair neighbours by swapping with a random page that fits at both places; a small pool can be
        // left in a state no single swap repairs, so it is shuffled afresh then.
        for (int attempt = 0; attempt < 10_000; attempt++) {
            for (int i = pages - 1; i > 0; i--) {
                swap(destinations, i, random.nextInt(i + 1));
            }
            for (int pass = 0; pass < 50 && hasNeighbours(destinations); pass++) {
                for (int i = 1; i < pages; i++) {
                    if (adjacent(destinations[i - 1], destinations[i])) {
                        int j = random.nextInt(pages);
                        swap(destinations, i, j);
                        if (conflicts(destinations, i) || conflicts(destinations, j)) {
                            swap(destinations, i, j);
                        }
                    }
                }
            }
            if (!hasNeighbours(destinations)) {
                return new PageMapping(destinations, true);
            }
        }
        throw new IllegalStateException("no scattered mapping of " + pages + " pages found");
    }

    int pages()
    {
        return destinations.length;
    }

    /** The inverse: which source page destination page {@code d} holds. */
    int[] sources()
    {
        int[] sources = new int[destinations.length];
        for (int i = 0; i < destinations.length; i++) {
            sources[destinations[i]] = i;
        }
        return sources;
    }

    private static boolean hasNeighbours(int[] pages)
    {
        for (int i = 1; i < pages.length; i++) {
            if (adjacent(pages[i - 1], pages[i])) {
                return true;
            }
        }
        return false;
    }

    private static boolean conflicts(int[] pages, int i)
    {
        return (i > 0 && adjacent(pages[i - 1], pages[i])) || (i + 1 < pages.length && adjacent(pages[i], pages[i + 1]));
    }

    private static boolean adjacent(int a, int b)
    {
        return Math.abs(a - b) == 1;
    }

    private static void swap(int[] pages, int i, int j)
    {
        int page = pages[i];
        pages[i] = pages[j];
        pages[j] = page;
    }
}
