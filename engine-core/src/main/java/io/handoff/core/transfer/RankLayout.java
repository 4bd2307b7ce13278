package io.handoff.core.transfer;

import io.handoff.core.model.parallel.TensorShard;
import io.handoff.spi.transfer.MemoryRegion;
import io.handoff.spi.transfer.RegionSlice;
import io.handoff.spi.transfer.SliceMap;

import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.zip.CRC32C;

import static java.util.Objects.requireNonNull;

/**
 * How a server's KV is spread over its tensor-parallel ranks, as its transfer regions list it: {@code ranks} ranks, each
 * with the same {@code regionsPerRank} regions (layer by layer, key before value), rank by rank; a row of a region is one
 * token slot of the KV heads the rank holds, side by side, {@code headBytes[k]} bytes per head in region {@code k} of a
 * rank. Rank {@code r} holds the heads {@link TensorShard} gives it (replicated when there are more ranks than heads); an
 * MLA latent counts as one head, held by every rank.
 *
 * <p>From two layouts of the same model it builds the {@link SliceMap} that gives each receiving rank exactly the heads
 * it holds, and it reads a page in one canonical order (region kind, token slot, head) whatever the layout, so a page's
 * checksum is the same on both sides of a transfer between different layouts.
 */
public record RankLayout(int ranks, int kvHeads, boolean latent, int pageSize, long[] headBytes)
{
    public RankLayout
    {
        requireNonNull(headBytes, "headBytes is null");
        headBytes = headBytes.clone();
        if (ranks < 1 || kvHeads < 1 || pageSize < 1 || headBytes.length == 0) {
            throw new IllegalArgumentException("a layout needs ranks, heads, a page size and regions: " + ranks + ", " + kvHeads + ", " + pageSize
                    + ", " + headBytes.length);
        }
        if (latent && kvHeads != 1) {
            throw new IllegalArgumentException("an MLA latent is one head, not " + kvHeads);
        }
        for (long bytes : headBytes) {
            if (bytes < 1) {
                throw new IllegalArgumentException("a head of " + bytes + " bytes");
            }
        }
    }

    /**
     * The layout of {@code regions} (every rank's, rank by rank) of a server of {@code ranks} ranks serving {@code kvHeads} KV
     * heads ({@code latent}: one MLA latent row).
     */
    public static RankLayout of(int ranks, int kvHeads, boolean latent, int pageSize, List<MemoryRegion> regions)
    {
        if (regions.isEmpty() || regions.size() % ranks != 0) {
            throw new IllegalArgumentException(regions.size() + " regions do not split over " + ranks + " ranks");
        }
        int perRank = regions.size() / ranks;
        int held = new RankLayout(ranks, latent ? 1 : kvHeads, latent, pageSize, new long[] {1}).headCount(0);
        long[] headBytes = new long[perRank];
        for (int k = 0; k < perRank; k++) {
            long rowBytes = regions.get(k).pageStride() / pageSize;
            if (rowBytes * pageSize != regions.get(k).pageStride() || rowBytes % held != 0) {
                throw new IllegalArgumentException("region " + k + "'s pages of " + regions.get(k).pageStride() + " bytes are not " + pageSize
                        + " rows of " + held + " heads");
            }
            headBytes[k] = rowBytes / held;
        }
        return new RankLayout(ranks, latent ? 1 : kvHeads, latent, pageSize, headBytes);
    }

    /** The same model and pages on {@code otherRanks} ranks: what a peer of that size holds. */
    public RankLayout withRanks(int otherRanks)
    {
        return new RankLayout(otherRanks, kvHeads, latent, pageSize, headBytes);
    }

    public int regionsPerRank()
    {
        return headBytes.length;
    }

    /** The first head rank {@code rank} holds. */
    public int firstHead(int rank)
    {
        return latent ? 0 : new TensorShard(rank, ranks).firstKvHead(kvHeads);
    }

    /** How many heads each rank holds. */
    public int headCount(int rank)
    {
        return latent ? 1 : new TensorShard(rank, ranks).kvHeadsPerRank(kvHeads);
    }

    private boolean holds(int rank, int head)
    {
        return head >= firstHead(rank) && head < firstHead(rank) + headCount(rank);
    }

    /** The ranks holding {@code head}, lowest first. */
    private List<Integer> holders(int head)
    {
        List<Integer> holders = new ArrayList<>();
        for (int rank = 0; rank < ranks; rank++) {
            if (holds(rank, head)) {
                holders.add(rank);
            }
        }
        return holders;
    }

    /** Bytes of one row (token slot) of region kind {@code k} on a rank. */
    private long rowBytes(int k)
    {
        return headBytes[k] * headCount(0);
    }

    /**
     * The map that moves this layout's pages into {@code receiver}'s: the identity when the layouts are equal (rank r's
     * regions into rank r's); otherwise, for every receiving rank and region kind, its heads from sending ranks that hold
     * them (of several holders, the receiving rank's index modulo their count, so replicated heads are read from every
     * holder in turn), contiguous heads from one rank in one slice. Each receiving rank gets its heads once; no byte goes
     * where it is not kept.
     */
    public SliceMap slicesTo(RankLayout receiver)
    {
        if (receiver.kvHeads != kvHeads || receiver.latent != latent || receiver.pageSize != pageSize || !Arrays.equals(receiver.headBytes, headBytes)) {
            throw new IllegalArgumentException("the layouts are of different KV: " + this + " and " + receiver);
        }
        int perRank = regionsPerRank();
        if (receiver.ranks == ranks) {
            List<RegionSlice> identity = new ArrayList<>();
            for (int region = 0; region < ranks * perRank; region++) {
                long stride = rowBytes(region % perRank) * pageSize;
                identity.add(new RegionSlice(region, region, stride, stride, 0, 0, stride));
            }
            return new SliceMap(1, identity);
        }
        List<RegionSlice> slices = new ArrayList<>();
        for (int d = 0; d < receiver.ranks; d++) {
            for (int k = 0; k < perRank; k++) {
                int first = receiver.firstHead(d);
                int h = first;
                while (h < first + receiver.headCount(d)) {
                    List<Integer> holders = holders(h);
                    int p = holders.get(d % holders.size());
                    int n = 1;
                    while (h + n < first + receiver.headCount(d) && holds(p, h + n)) {
                        n++;
                    }
                    slices.add(new RegionSlice(p * perRank + k, d * perRank + k, rowBytes(k), receiver.rowBytes(k),
                            (h - firstHead(p)) * headBytes[k], (h - first) * headBytes[k], n * headBytes[k]));
                    h += n;
                }
            }
        }
        return new SliceMap(pageSize, slices);
    }

    /** How many ranks hold each head: 1, or more when heads are replicated (an MLA latent is held by every rank). */
    public int replicas()
    {
        return holders(0).size();
    }

    /**
     * CRC32C of {@code page} of {@code regions} (laid out as this layout says) in the canonical order: region kind, then
     * token slot, then head, each head read from its {@code replica}-th holder (modulo their count; 0 the lowest). With
     * one rank this is the page's bytes in region order, as a single-rank server has always checksummed them. Every
     * replica of a page holds the same bytes, so every replica has the sender's checksum.
     */
    public int checksum(List<MemoryRegion> regions, int page, int replica)
    {
        CRC32C crc = new CRC32C();
        int perRank = regionsPerRank();
        if (ranks == 1) {
            for (MemoryRegion region : regions) {
                crc.update(region.page(page).asByteBuffer());
            }
            return (int) crc.getValue();
        }
        // the runs of heads in canonical order, each read from one rank: once per call, not per slot and region
        List<int[]> runs = new ArrayList<>();
        for (int h = 0; h < kvHeads; ) {
            List<Integer> holders = holders(h);
            int p = holders.get(replica % holders.size());
            int n = Math.min(kvHeads, firstHead(p) + headCount(p)) - h;
            runs.add(new int[] {p, h - firstHead(p), n});
            h += n;
        }
        for (int k = 0; k < perRank; k++) {
            long rowBytes = rowBytes(k);
            MemorySegment[] pages = new MemorySegment[runs.size()];
            for (int r = 0; r < pages.length; r++) {
                pages[r] = regions.get(runs.get(r)[0] * perRank + k).page(page);
            }
            for (int slot = 0; slot < pageSize; slot++) {
                for (int r = 0; r < pages.length; r++) {
                    int[] run = runs.get(r);
                    crc.update(pages[r].asSlice(slot * rowBytes + run[1] * headBytes[k], run[2] * headBytes[k]).asByteBuffer());
                }
            }
        }
        return (int) crc.getValue();
    }

    @Override
    public String toString()
    {
        return ranks + " rank(s), " + (latent ? "MLA latent" : kvHeads + " KV heads") + ", page size " + pageSize + ", head bytes "
                + Arrays.toString(headBytes);
    }

    @Override
    public boolean equals(Object other)
    {
        return other instanceof RankLayout that && ranks == that.ranks && kvHeads == that.kvHeads && latent == that.latent
                && pageSize == that.pageSize && Arrays.equals(headBytes, that.headBytes);
    }

    @Override
    public int hashCode()
    {
        return 31 * (31 * (31 * ranks + kvHeads) + pageSize) + Arrays.hashCode(headBytes);
    }
}
