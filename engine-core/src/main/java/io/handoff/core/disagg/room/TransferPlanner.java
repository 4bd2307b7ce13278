package io.handoff.core.disagg.room;

import io.handoff.spi.transfer.ProducerFence;
import io.handoff.spi.transfer.RoomKey;
import io.handoff.spi.transfer.TransferPlan;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

import static java.util.Objects.requireNonNull;

/**
 * Turns one chunk's page mapping into transfer plans: runs of pages contiguous on both sides become one
 * run (a backend moves a run with one descriptor per region), and no plan holds more than
 * {@code maxPagesPerPlan} pages, so a very long prompt is sent as several bounded batches instead of one
 * huge synchronous one. A run that crosses a plan boundary is split there.
 */
public final class TransferPlanner
{
    private TransferPlanner() {}

    /**
     * Plans copying {@code sourcePages[i]} to {@code destinationPages[i]} for every {@code i}, in order.
     *
     * @param firstPageIndex the room-relative index of {@code sourcePages[0]}
     */
    public static List<TransferPlan> plan(RoomKey room, int chunk, int firstPageIndex, int[] sourcePages, int[] destinationPages,
            int maxPagesPerPlan, ProducerFence fence)
    {
        requireNonNull(room, "room is null");
        requireNonNull(sourcePages, "sourcePages is null");
        requireNonNull(destinationPages, "destinationPages is null");
        requireNonNull(fence, "fence is null");
        if (sourcePages.length != destinationPages.length) {
            throw new IllegalArgumentException("chunk " + chunk + " of room " + room + " maps " + sourcePages.length + " source pages to "
                    + destinationPages.length + " destination pages");
        }
        if (maxPagesPerPlan < 1 || firstPageIndex < 0) {
            throw new IllegalArgumentException("bad plan bounds: maxPagesPerPlan=" + maxPagesPerPlan + " firstPageIndex=" + firstPageIndex);
        }
        List<TransferPlan> plans = new ArrayList<>((sourcePages.length + maxPagesPerPlan - 1) / maxPagesPerPlan);
        for (int start = 0; start < sourcePages.length; start += maxPagesPerPlan) {
            int end = Math.min(start + maxPagesPerPlan, sourcePages.length);
            plans.add(planOf(room, chunk, firstPageIndex + start, sourcePages, destinationPages, start, end, fence));
        }
        return plans;
    }

    private static TransferPlan planOf(RoomKey room, int chunk, int firstPageIndex, int[] src, int[] dst, int start, int end, ProducerFence fence)
    {
        int[] runSrc = new int[end - start];
        int[] runDst = new int[end - start];
        int[] runLength = new int[end - start];
        int runs = 0;
        for (int i = start; i < end; i++) {
            if (runs > 0 && src[i] == runSrc[runs - 1] + runLength[runs - 1] && dst[i] == runDst[runs - 1] + runLength[runs - 1]) {
                runLength[runs - 1]++;
            }
            else {
                runSrc[runs] = src[i];
                runDst[runs] = dst[i];
                runLength[runs] = 1;
                runs++;
            }
        }
        return new TransferPlan(room, chunk, firstPageIndex, Arrays.copyOf(runSrc, runs), Arrays.copyOf(runDst, runs),
                Arrays.copyOf(runLength, runs), fence);
    }
}
