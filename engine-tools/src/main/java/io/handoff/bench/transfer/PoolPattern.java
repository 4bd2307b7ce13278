package io.handoff.bench.transfer;

import io.handoff.core.transfer.RankLayout;
import io.handoff.spi.transfer.MemoryRegion;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.HexFormat;
import java.util.List;
import java.util.zip.CRC32C;

/**
 * The seeded bytes a source pool is filled with, and the checksums that prove a destination holds them: one CRC32C
 * per region over its pages in page order. Every 8 bytes of the pool are a distinct value of the seed, so a page
 * written to the wrong place, a region swapped, or a byte lost changes a checksum.
 */
final class PoolPattern
{
    private PoolPattern() {}

    static void fill(List<MemoryRegion> regions, long seed)
    {
        for (MemoryRegion region : regions) {
            MemorySegment segment = region.segment();
            long words = segment.byteSize() / Long.BYTES;
            long base = seed + ((long) region.index() << 40);
            for (long i = 0; i < words; i++) {
                segment.set(ValueLayout.JAVA_LONG_UNALIGNED, i * Long.BYTES, mix(base + i));
            }
        }
    }

    /** The receiver's side: each region's checksum over its pages as they lie. */
    static String checksums(List<MemoryRegion> regions)
    {
        long[] sums = new long[regions.size()];
        for (MemoryRegion region : regions) {
            CRC32C crc = new CRC32C();
            crc.update(region.segment().asByteBuffer());
            sums[region.index()] = crc.getValue();
        }
        return format(sums);
    }

    /**
     * The sender's side: the checksums a destination must have when its page {@code d} of every region holds source
     * page {@code sources[d]}, computed from the source pool itself.
     */
    static String expected(List<MemoryRegion> sources, int[] sourceOfDestination)
    {
        long[] sums = new long[sources.size()];
        for (MemoryRegion region : sources) {
            CRC32C crc = new CRC32C();
            for (int source : sourceOfDestination) {
                crc.update(region.page(source).asByteBuffer());
            }
            sums[region.index()] = crc.getValue();
        }
        return format(sums);
    }

    /**
     * The head-sliced pattern, receiver's side: each page's checksum over every rank's regions in the layout's canonical
     * order (region kind, slot, head), which does not depend on the layout.
     */
    static String pageChecksums(RankLayout layout, List<MemoryRegion> regions, int pages)
    {
        long[] sums = new long[pages];
        for (int page = 0; page < pages; page++) {
            sums[page] = layout.checksum(regions, page, 0);
        }
        return format(sums);
    }

    /** The head-sliced pattern, sender's side: what {@link #pageChecksums} must give when page {@code d} holds source page {@code sources[d]}. */
    static String expectedPages(RankLayout layout, List<MemoryRegion> sources, int[] sourceOfDestination)
    {
        long[] sums = new long[sourceOfDestination.length];
        for (int page = 0; page < sums.length; page++) {
            sums[page] = layout.checksum(sources, sourceOfDestination[page], 0);
        }
        return format(sums);
    }

    /** Which regions differ between two checksum lists (for the failure message); in the head-sliced pattern, which pages. */
    static String differences(String expected, String actual)
    {
        String[] wanted = expected.split(",");
        String[] seen = actual.split(",");
        if (wanted.length != seen.length) {
            return "the receiver hashed " + seen.length + " regions, " + wanted.length + " were sent";
        }
        StringBuilder regions = new StringBuilder();
        for (int i = 0; i < wanted.length; i++) {
            if (!wanted[i].equals(seen[i])) {
                regions.append(regions.isEmpty() ? "" : ", ").append(i);
            }
        }
        return "regions " + regions + " differ";
    }

    private static String format(long[] sums)
    {
        StringBuilder text = new StringBuilder();
        for (long sum : sums) {
            text.append(text.isEmpty() ? "" : ",").append(HexFormat.of().toHexDigits((int) sum));
        }
        return text.toString();
    }

    /** SplitMix64's finalizer: consecutive inputs give unrelated words. */
    private static long mix(long z)
    {
        z = (z ^ (z >>> 30)) * 0xbf58476d1ce4e5b9L;
        z = (z ^ (z >>> 27)) * 0x94d049bb133111ebL;
        return z ^ (z >>> 31);
    }
}
