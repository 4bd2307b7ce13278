package io.handoff.plugin.aiter;

import java.util.Arrays;
import java.util.Comparator;
import java.util.stream.IntStream;

/**
 * A decode batch's work and reduce plan, built before any kernel runs. Work item {@code i} is split
 * {@code itemFrom[i] / SPLIT_TOKENS} of request {@code itemRequest[i]}: its key positions
 * {@code itemFrom[i] .. itemTo[i]-1}. Items are numbered request by request, split by split, and a
 * partial is stored under its item number, so the reduce map of request {@code r} is the item range
 * {@code reduceIndptr[r] .. reduceIndptr[r+1]-1}, merged in that (split) order.
 *
 * <p>{@code workerItems[w]} lists the items worker {@code w} computes. Balancing decides only which
 * thread computes an item, never how: the partials, and so the output, are the same for any number of
 * workers and any batch composition.
 */
record WorkSchedule(int[] itemRequest, int[] itemFrom, int[] itemTo, int[][] workerItems, int[] reduceIndptr)
{
    static WorkSchedule forDecode(int[] seqLens, int splitTokens, int workers)
    {
        int batch = seqLens.length;
        int[] reduceIndptr = new int[batch + 1];
        for (int r = 0; r < batch; r++) {
            reduceIndptr[r + 1] = reduceIndptr[r] + (seqLens[r] + splitTokens - 1) / splitTokens;
        }
        int items = reduceIndptr[batch];
        int[] itemRequest = new int[items];
        int[] itemFrom = new int[items];
        int[] itemTo = new int[items];
        long[] keys = new long[items];
        for (int r = 0; r < batch; r++) {
            for (int item = reduceIndptr[r]; item < reduceIndptr[r + 1]; item++) {
                itemRequest[item] = r;
                itemFrom[item] = (item - reduceIndptr[r]) * splitTokens;
                itemTo[item] = Math.min(itemFrom[item] + splitTokens, seqLens[r]);
                keys[item] = itemTo[item] - itemFrom[item];
            }
        }
        return new WorkSchedule(itemRequest, itemFrom, itemTo, balance(keys, workers), reduceIndptr);
    }

    int items()
    {
        return itemRequest.length;
    }

    /**
     * Greedy longest-first assignment: items by descending cost (ties by number) each go to the least
     * loaded worker (ties to the lowest worker). The most and least loaded workers then differ by at
     * most the largest item's cost. Each worker's list is in ascending item order.
     */
    static int[][] balance(long[] costs, int workers)
    {
        if (workers < 1) {
            throw new IllegalArgumentException("workers must be positive: " + workers);
        }
        Integer[] order = IntStream.range(0, costs.length).boxed().toArray(Integer[]::new);
        Arrays.sort(order, Comparator.<Integer>comparingLong(item -> -costs[item]).thenComparingInt(item -> item));
        long[] load = new long[workers];
        int[] owner = new int[costs.length];
        int[] counts = new int[workers];
        for (int item : order) {
            int least = 0;
            for (int w = 1; w < workers; w++) {
                if (load[w] < load[least]) {
                    least = w;
                }
            }
            load[least] += costs[item];
            owner[item] = least;
            counts[least]++;
        }
        int[][] lists = new int[workers][];
        for (int w = 0; w < workers; w++) {
            lists[w] = new int[counts[w]];
            counts[w] = 0;
        }
        for (int item = 0; item < costs.length; item++) {
            lists[owner[item]][counts[owner[item]]++] = item;
        }
        return lists;
    }
}
