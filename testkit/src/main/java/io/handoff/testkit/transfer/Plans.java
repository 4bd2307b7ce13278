package io.handoff.testkit.transfer;

import io.handoff.spi.transfer.ProducerFence;
import io.handoff.spi.transfer.RoomKey;
import io.handoff.spi.transfer.TransferPlan;

import java.util.LinkedHashMap;
import java.util.Map;

/** Transfer plans written the way tests read them, and what they should leave in a destination {@link Pool}. */
public final class Plans
{
    private Plans() {}

    /** A plan of runs {@code {src, dst, length}}. */
    public static TransferPlan plan(RoomKey room, int chunk, int firstPageIndex, ProducerFence fence, int[]... runs)
    {
        int[] src = new int[runs.length];
        int[] dst = new int[runs.length];
        int[] length = new int[runs.length];
        for (int i = 0; i < runs.length; i++) {
            src[i] = runs[i][0];
            dst[i] = runs[i][1];
            length[i] = runs[i][2];
        }
        return new TransferPlan(room, chunk, firstPageIndex, src, dst, length, fence);
    }

    /** Destination page to source page, for every page the plans copy, in the order they copy them. */
    public static Map<Integer, Integer> pagesOf(TransferPlan... plans)
    {
        Map<Integer, Integer> pages = new LinkedHashMap<>();
        for (TransferPlan plan : plans) {
            for (int run = 0; run < plan.runs(); run++) {
                for (int i = 0; i < plan.runLengths()[run]; i++) {
                    pages.put(plan.dstPages()[run] + i, plan.srcPages()[run] + i);
                }
            }
        }
        return pages;
    }

    /** Destination page to source page for the first {@code count} pages the plan copies. */
    public static Map<Integer, Integer> firstPages(TransferPlan plan, int count)
    {
        Map<Integer, Integer> pages = new LinkedHashMap<>();
        pagesOf(plan).entrySet().stream().limit(count).forEach(page -> pages.put(page.getKey(), page.getValue()));
        return pages;
    }

    /** The bytes a plan moves between two pools of the default {@link Pool#STRIDES}. */
    public static long bytesOf(TransferPlan plan)
    {
        long perPage = 0;
        for (long stride : Pool.STRIDES) {
            perPage += stride;
        }
        return plan.pages() * perPage;
    }
}
