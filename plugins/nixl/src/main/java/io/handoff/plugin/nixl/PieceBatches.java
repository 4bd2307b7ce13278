package io.handoff.plugin.nixl;

import io.handoff.spi.transfer.PageGeometry;
import io.handoff.spi.transfer.RegionSlice;
import io.handoff.spi.transfer.SliceMap;
import io.handoff.spi.transfer.TransferPlan;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

import static java.util.Objects.requireNonNull;

/**
 * Cuts a plan into batches of at most {@code batchBytes} (whole pages, every slice of the connection's {@link SliceMap}),
 * and each batch into pieces: one run of one region between servers of one layout (or the part of a run that fits), one
 * row of a head slice between layouts. A piece is one put. The arrays grow to the largest batch and are refilled by each
 * {@link #next}; a batch's pieces lie back to back in a staging slot, in the order they are cut. No UCX here: this is
 * the plan arithmetic both send modes share.
 */
final class PieceBatches
{
    private final int[] srcPages;
    private final int[] dstPages;
    private final int[] runLengths;
    private final SliceMap slices;
    private final long batchBytes;
    private final long bytesPerPage;
    // The current batch.
    private long[] sourceOffset = new long[16];
    private long[] stagingOffset = new long[16];
    private long[] remoteOffset = new long[16];
    private long[] bytes = new long[16];
    private int[] region = new int[16];
    private int[] remoteRegion = new int[16];
    private int pieces;
    private int firstPage;
    private int endPage;
    private long batchTotal;
    // Where the next batch starts.
    private int run;
    private int done;

    /**
     * Region by region (the identity map of these strides).
     *
     * @param strides every region's page stride, in region order
     * @param batchBytes the most bytes a batch holds; at least one page of every region
     */
    PieceBatches(TransferPlan plan, long[] strides, long batchBytes)
    {
        this(plan, identity(strides), batchBytes);
    }

    /** @param batchBytes the most bytes a batch holds; at least one page of every slice */
    PieceBatches(TransferPlan plan, SliceMap slices, long batchBytes)
    {
        requireNonNull(plan, "plan is null");
        this.srcPages = plan.srcPages();
        this.dstPages = plan.dstPages();
        this.runLengths = plan.runLengths();
        this.slices = requireNonNull(slices, "slices is null");
        long perPage = slices.bytesPerPage();
        if (perPage > batchBytes) {
            throw new IllegalArgumentException("a batch of " + batchBytes + " bytes cannot hold one page of every region (" + perPage + " bytes)");
        }
        this.bytesPerPage = perPage;
        this.batchBytes = batchBytes;
        this.endPage = plan.firstPageIndex();
        this.firstPage = endPage;
    }

    private static SliceMap identity(long[] strides)
    {
        List<Long> list = new ArrayList<>();
        for (long stride : strides) {
            list.add(stride);
        }
        return SliceMap.identity(new PageGeometry(list, 0));
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
        long[] used = {0};
        while (run < runLengths.length) {
            int count = (int) Math.min(runLengths[run] - done, (batchBytes - used[0]) / bytesPerPage);
            if (count == 0) {
                break;
            }
            for (int slice = 0; slice < slices.slices().size(); slice++) {
                RegionSlice part = slices.slices().get(slice);
                slices.pieces(slice, srcPages[run] + (long) done, dstPages[run] + (long) done, count, (ignored, srcOffset, dstOffset, length) -> {
                    add(part.srcRegion(), part.dstRegion(), srcOffset, used[0], dstOffset, length);
                    used[0] += length;
                });
            }
            endPage += count;
            done += count;
            if (done == runLengths[run]) {
                run++;
                done = 0;
            }
        }
        batchTotal = used[0];
    }

    private void add(int source, int remote, long srcOffset, long staging, long dstOffset, long length)
    {
        if (pieces == bytes.length) {
            int grown = pieces * 2;
            sourceOffset = Arrays.copyOf(sourceOffset, grown);
            stagingOffset = Arrays.copyOf(stagingOffset, grown);
            remoteOffset = Arrays.copyOf(remoteOffset, grown);
            bytes = Arrays.copyOf(bytes, grown);
            region = Arrays.copyOf(region, grown);
            remoteRegion = Arrays.copyOf(remoteRegion, grown);
        }
        sourceOffset[pieces] = srcOffset;
        stagingOffset[pieces] = staging;
        remoteOffset[pieces] = dstOffset;
        bytes[pieces] = length;
        region[pieces] = source;
        remoteRegion[pieces] = remote;
        pieces++;
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

    /** The piece's source region. */
    int region(int piece)
    {
        return region[piece];
    }

    /** The receiver's region the piece goes to. */
    int remoteRegion(int piece)
    {
        return remoteRegion[piece];
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
