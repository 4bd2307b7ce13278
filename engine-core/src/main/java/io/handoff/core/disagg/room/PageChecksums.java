package io.handoff.core.disagg.room;

import io.handoff.core.transfer.RankLayout;
import io.handoff.spi.transfer.MemoryRegion;

import java.util.List;
import java.util.zip.CRC32C;

import static java.util.Objects.requireNonNull;

/**
 * Per-page CRC32C over a KV pool (invariant I3): a page's checksum covers its bytes in every region, so it changes if
 * any layer's keys or values of that page differ by one bit. Prefill takes them after the producing forward's fence,
 * decode on arrival. A single-rank pool is read in region order; a pool of several tensor-parallel ranks in its
 * {@link RankLayout}'s canonical order (region kind, token slot, head), which is the same for every layout of the same
 * model, so a prefill and a decode of different layouts get equal checksums for equal KV. Where heads are replicated
 * over ranks, every replica is read: replicas that disagree make the checksum differ from the first replica's, so a
 * torn write into any of them is caught.
 */
public final class PageChecksums
{
    private final List<MemoryRegion> regions;
    private final RankLayout layout;

    public PageChecksums(List<MemoryRegion> regions)
    {
        this(regions, null);
    }

    /** @param layout how {@code regions} spread over tensor-parallel ranks; null for one rank's regions */
    public PageChecksums(List<MemoryRegion> regions, RankLayout layout)
    {
        this.layout = layout;
        this.regions = List.copyOf(requireNonNull(regions, "regions is null"));
        if (this.regions.isEmpty()) {
            throw new IllegalArgumentException("no regions to checksum");
        }
    }

    /** Bytes of one page across every region: what a transfer of one page moves. */
    public long bytesPerPage()
    {
        long bytes = 0;
        for (MemoryRegion region : regions) {
            bytes += region.pageStride();
        }
        return bytes;
    }

    public int checksum(int page)
    {
        if (layout != null && layout.ranks() > 1) {
            int first = layout.checksum(regions, page, 0);
            for (int replica = 1; replica < layout.replicas(); replica++) {
                if (layout.checksum(regions, page, replica) != first) {
                    // not the sender's (which is every replica's when none is torn), whichever replica is wrong
                    return first + 1;
                }
            }
            return first;
        }
        CRC32C crc = new CRC32C();
        for (MemoryRegion region : regions) {
            // a direct ByteBuffer view lets the JDK use its CRC32C intrinsic over off-heap memory
            crc.update(region.page(page).asByteBuffer());
        }
        return (int) crc.getValue();
    }

    public int[] checksums(int[] pages)
    {
        int[] checksums = new int[pages.length];
        for (int i = 0; i < pages.length; i++) {
            checksums[i] = checksum(pages[i]);
        }
        return checksums;
    }
}
