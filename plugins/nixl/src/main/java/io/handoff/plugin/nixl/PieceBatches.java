package io.handoff.plugin.nixl;

import io.handoff.spi.transfer.TransferPlan;

import static java.util.Objects.requireNonNull;

/**
 * Cuts a plan into batches of at most {@code batchBytes} (whole pages of every region), and each batch into pieces:
 * one run of one region, or the part of a run that fits. A piece is one put. The arrays are allocated once per plan
 * and refilled by each {@link #next}; a batch's pieces lie back to back in a staging slot, in the order they are cut.
 * No UCX here: this is the plan arithmetic both send modes share.
 */
final class PieceBatches
{
    private final int[] srcPages;
    private final int[] dstPages;
    private final int[] runLengths;
    private final long[] strides;
    private final long batchBytes;
    private final long bytesPerPage;
    // The current batch.
    private final long[] sourceOffset;
    private final long[] stagingOffset;
    private final long[] remoteOffset;
    private final long[] bytes;
    private final int[] region;
    private int pieces;
    private int firstPage;
    private int endPage;
    private long batchTotal;
    // Where the next batch starts.
    private int run;
    private int done;

    /**
     * @param strides every region's page stride, in region order
     * @param batchBytes the most bytes a batch holds; at least one page of every region
     */
    PieceBatches(TransferPlan plan, long[] strides, long batchBytes)
    {
        requireNonNull(plan, "plan is null");
        this.srcPages = plan.srcPages();
        this.dstPages = plan.dstPages();
        this.runLengths = plan.runLengths();
        this.strides = strides.clone();
        long perPage = 0;
        for (long stride : this.strides) {
            perPage += stride;
        }
        if (perPage > batchBytes) {
            throw new IllegalArgumentException("a batch of " + batchBytes + " bytes cannot hold one page of every region (" + perPage + " bytes)");
        }
        this.bytesPerPage = perPage;
        this.batchBytes = batchBytes;
        // A batch holds at most every run plus one split run, in every region.
        int most = (int) Math.min((long) (runLengths.length + 1) * strides.length, Integer.MAX_VALUE);
        this.sourceOffset = new long[most];
        this.stagingOffset = new long[most];
        this.remoteOffset = new long[most];
        this.bytes = new long[most];
        this.region = new int[most];
        this.endPage = plan.firstPageIndex();
        this.firstPage = endPage;
    }

    /** Whether pages are left for another batch. */
    boolean hasNext()
    {
        return run < runLengths.length;
    }

    /** Cuts the next batch; its pieces are read with the accessors until the next call. */
    void next()
    {
        if (!hasNext()) {
            throw new IllegalStateException("the plan has no pages left");
        }
        firstPage = endPage;
        pieces = 0;
        long used = 0;
        while (run < runLengths.length) {
            int count = (int) Math.min(runLengths[run] - done, (batchBytes - used) / bytesPerPage);
            if (count == 0) {
                break;
            }
            for (int r = 0; r < strides.length; r++) {
                long stride = strides[r];
                long length = count * stride;
                sourceOffset[pieces] = (srcPages[run] + (long) done) * stride;
                stagingOffset[pieces] = used;
                remoteOffset[pieces] = (dstPages[run] + (long) done) * stride;
                bytes[pieces] = length;
                region[pieces] = r;
                pieces++;
                used += length;
            }
            endPage += count;
            done += count;
            if (done == runLengths[run]) {
                run++;
                done = 0;
            }
        }
        batchTotal = used;
    }

    /** The room-relative index of the batch's first page. */
    int firstPage()
    {
        return firstPage;
    }

    /** One past the room-relative index of the batch's last page. */
    int endPage()
    {
        return endPage;
    }

    /** The batch's bytes, every region. */
    long batchBytes()
    {
        return batchTotal;
    }

    int pieces()
    {
        return pieces;
    }

    int region(int piece)
    {
        return region[piece];
    }

    /** The piece's offset in its source region. */
    long sourceOffset(int piece)
    {
        return sourceOffset[piece];
    }

    /** The piece's offset in the batch's staging slot. */
    long stagingOffset(int piece)
    {
        return stagingOffset[piece];
    }

    /** The piece's offset in the receiver's region. */
    long remoteOffset(int piece)
    {
        return remoteOffset[piece];
    }

    long bytes(int piece)
    {
        return bytes[piece];
    }
}
