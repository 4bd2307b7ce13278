package io.handoff.core.disagg.room;

import io.handoff.spi.transfer.MemoryRegion;

import java.util.List;
import java.util.zip.CRC32C;

import static java.util.Objects.requireNonNull;

/**
 * Per-page CRC32C over a KV pool (invariant I3): a page's checksum covers its bytes in every region, in
 * region order, so it changes if any layer's keys or values of that page differ by one bit. Prefill takes
 * them after the producing forward's fence, decode on arrival; both sides have the same regions in the
 * same order (the handshake checked the geometry), so equal pages give equal checksums.
 */
public final class PageChecksums
{
    private final List<MemoryRegion> regions;

    public PageChecksums(List<MemoryRegion> regions)
    {
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
