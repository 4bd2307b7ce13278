package io.handoff.spi.transfer;

import static java.util.Objects.requireNonNull;

/**
 * One chunk of a room's KV, as runs of contiguous pages: run {@code i} copies pages
 * {@code srcPages[i] .. srcPages[i]+runLengths[i]-1} of every source region to pages
 * {@code dstPages[i] ..} of the same region on the peer. Runs are coalesced on both sides by the core;
 * a plan is a handful of ints, never a per-page object.
 *
 * @param chunk the chunk's index within its room (0, 1, ...)
 * @param firstPageIndex the room-relative index of the plan's first page (for fault points and checks)
 * @param fence completion of the forward that wrote the source pages; see {@link ProducerFence}
 */
public record TransferPlan(RoomKey room, int chunk, int firstPageIndex, int[] srcPages, int[] dstPages, int[] runLengths,
        ProducerFence fence)
{
    public TransferPlan
    {
        requireNonNull(room, "room is null");
        requireNonNull(srcPages, "srcPages is null");
        requireNonNull(dstPages, "dstPages is null");
        requireNonNull(runLengths, "runLengths is null");
        requireNonNull(fence, "fence is null");
        if (srcPages.length != dstPages.length || srcPages.length != runLengths.length) {
            throw new IllegalArgumentException("runs disagree: " + srcPages.length + " sources, " + dstPages.length
                    + " destinations, " + runLengths.length + " lengths");
        }
        for (int length : runLengths) {
            if (length < 1) {
                throw new IllegalArgumentException("empty run in plan for room " + room);
            }
        }
    }

    public int runs()
    {
        return runLengths.length;
    }

    public int pages()
    {
        int pages = 0;
        for (int length : runLengths) {
            pages += length;
        }
        return pages;
    }
}
