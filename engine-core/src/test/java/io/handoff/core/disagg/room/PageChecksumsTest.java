package io.handoff.core.disagg.room;

import io.handoff.spi.transfer.MemoryRegion;
import org.junit.jupiter.api.Test;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;

import static org.assertj.core.api.Assertions.assertThat;

class PageChecksumsTest
{
    static final int PAGES = 6;
    // three regions of different strides, as K and V of different layers may have
    static final long[] STRIDES = {64, 64, 48};

    private static List<MemoryRegion> regions(Arena arena, long seed)
    {
        Random random = new Random(seed);
        List<MemoryRegion> regions = new ArrayList<>();
        for (int r = 0; r < STRIDES.length; r++) {
            MemorySegment segment = arena.allocate(PAGES * STRIDES[r], 64);
            for (long i = 0; i < segment.byteSize(); i++) {
                segment.set(ValueLayout.JAVA_BYTE, i, (byte) random.nextInt());
            }
            regions.add(new MemoryRegion(r, segment, STRIDES[r], -1));
        }
        return regions;
    }

    @Test
    void equalPagesInTwoPoolsHaveEqualChecksums()
    {
        try (Arena arena = Arena.ofConfined()) {
            PageChecksums a = new PageChecksums(regions(arena, 1));
            PageChecksums b = new PageChecksums(regions(arena, 1));
            assertThat(b.checksums(new int[] {0, 1, 2, 3, 4, 5})).containsExactly(a.checksums(new int[] {0, 1, 2, 3, 4, 5}));
        }
    }

    @Test
    void aSingleFlippedBitInAnyRegionChangesThatPagesChecksumOnly()
    {
        try (Arena arena = Arena.ofConfined()) {
            List<MemoryRegion> regions = regions(arena, 2);
            PageChecksums checksums = new PageChecksums(regions);
            int[] all = {0, 1, 2, 3, 4, 5};
            int[] before = checksums.checksums(all);
            Random random = new Random(3);
            for (int trial = 0; trial < 50; trial++) {
                MemoryRegion region = regions.get(random.nextInt(regions.size()));
                int page = random.nextInt(PAGES);
                long offset = page * region.pageStride() + random.nextInt((int) region.pageStride());
                byte original = region.segment().get(ValueLayout.JAVA_BYTE, offset);
                region.segment().set(ValueLayout.JAVA_BYTE, offset, (byte) (original ^ (1 << random.nextInt(8))));

                int[] after = checksums.checksums(all);
                for (int p = 0; p < PAGES; p++) {
                    if (p == page) {
                        assertThat(after[p]).as("page %d after a flip in region %d", p, region.index()).isNotEqualTo(before[p]);
                    }
                    else {
                        assertThat(after[p]).isEqualTo(before[p]);
                    }
                }
                region.segment().set(ValueLayout.JAVA_BYTE, offset, original);
            }
            assertThat(checksums.checksums(all)).containsExactly(before);
        }
    }

    @Test
    void checksumCoversRegionsInOrder()
    {
        try (Arena arena = Arena.ofConfined()) {
            List<MemoryRegion> regions = regions(arena, 4);
            int forward = new PageChecksums(regions).checksum(2);
            int reversed = new PageChecksums(regions.reversed()).checksum(2);
            assertThat(forward).isNotEqualTo(reversed);
        }
    }
}
