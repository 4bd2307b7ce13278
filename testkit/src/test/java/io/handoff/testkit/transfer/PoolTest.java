package io.handoff.testkit.transfer;

import io.handoff.spi.transfer.MemoryRegion;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.lang.foreign.MemorySegment;
import java.nio.file.Path;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;

/** The pool is the kit's witness of what landed: it must see every kind of wrong copy. */
class PoolTest
{
    @TempDir
    Path folder;

    @Test
    void seesAPageFromTheWrongPlaceTheWrongRegionOrTheWrongMoment()
    {
        try (Pool source = Pool.anonymous().fill(0);
                Pool destination = Pool.anonymous().fillCanary()) {
            copy(source, 3, destination, 5);

            assertThat(destination.mismatches(Map.of(5, 3))).isEmpty();
            assertThat(destination.holds(5, 3)).isTrue();
            assertThat(destination.mismatches(Map.of(5, 4))).hasSize(Pool.STRIDES.length);
            assertThat(destination.mismatches(1, Map.of(5, 3))).hasSize(Pool.STRIDES.length);
            assertThat(destination.mismatches(Map.of())).containsExactly(
                    "region 0 page 5 offset 0: expected canary", "region 1 page 5 offset 0: expected canary",
                    "region 2 page 5 offset 0: expected canary");

            // Regions 0 and 1 have the same stride: a page copied across them is still seen.
            MemorySegment.copy(source.regions().get(0).page(7), 0, destination.regions().get(1).page(7), 0, Pool.STRIDES[0]);
            assertThat(destination.holds(7, 7)).isFalse();
            assertThat(destination.mismatches(Map.of(5, 3))).containsExactly("region 1 page 7 offset 0: expected canary");
        }
    }

    @Test
    void aPageRewrittenByALaterForwardHoldsItsPattern()
    {
        try (Pool pool = Pool.anonymous().fill(0)) {
            pool.writePage(9, 1);

            assertThat(pool.holds(9, 9, 1)).isTrue();
            assertThat(pool.holds(9, 9, 0)).isFalse();
            assertThat(pool.mismatches(0, pool.everyPage())).containsExactly(
                    "region 0 page 9 offset 0: expected source page 9 of pattern 0",
                    "region 1 page 9 offset 0: expected source page 9 of pattern 0",
                    "region 2 page 9 offset 0: expected source page 9 of pattern 0");
        }
    }

    @Test
    void aMappedPoolLaysItsRegionsBackToBackInItsFile()
    {
        Path file = folder.resolve("pool");
        try (Pool pool = Pool.mapped(file)) {
            assertThat(pool.file()).isEqualTo(file);
            assertThat(pool.regions()).extracting(MemoryRegion::fileOffset).containsExactly(0L, 64 * 1024L, 128 * 1024L);
            assertThat(pool.regions()).extracting(MemoryRegion::pages).containsOnly(Pool.PAGES);
        }
        try (Pool anonymous = Pool.anonymous(4, 256, 256)) {
            assertThat(anonymous.file()).isNull();
            assertThat(anonymous.regions()).extracting(MemoryRegion::pages).containsExactly(4, 4);
        }
    }

    private static void copy(Pool source, int src, Pool destination, int dst)
    {
        for (int region = 0; region < Pool.STRIDES.length; region++) {
            MemorySegment.copy(source.regions().get(region).page(src), 0, destination.regions().get(region).page(dst), 0, Pool.STRIDES[region]);
        }
    }
}
