package io.handoff.core.transfer;

import io.handoff.core.kv.KvGeometry;
import io.handoff.core.kv.KvPool;
import io.handoff.core.kv.KvRegion;
import io.handoff.spi.attention.KvDtype;
import io.handoff.spi.transfer.MemoryRegion;
import io.handoff.spi.transfer.PoolDescription;
import io.handoff.spi.transfer.SharedPoolMapping;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.lang.foreign.Arena;
import java.lang.foreign.ValueLayout;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class PoolDescriptionsTest
{
    private static final KvGeometry GEOMETRY = new KvGeometry(2, 12, 8, false, KvDtype.F32, 4);

    @Test
    void aDescriptionReadsBackAsTheHostTheFileAndThePageGeometry(@TempDir Path dir)
            throws Exception
    {
        try (KvPool pool = KvPool.mapShared(GEOMETRY, 16, dir.resolve("pool"))) {
            List<MemoryRegion> regions = regions(pool);
            PoolDescription read = PoolDescriptions.read(PoolDescriptions.describe("host-a", regions, dir.resolve("pool")));

            assertThat(read.hostId()).isEqualTo("host-a");
            assertThat(read.sharedFile()).contains(dir.resolve("pool").toAbsolutePath());
            assertThat(read.geometry()).isEqualTo(io.handoff.spi.transfer.PageGeometry.of(regions));
        }
    }

    @Test
    void anAnonymousPoolIsDescribedWithoutAFileAndCannotBeMapped(@TempDir Path dir)
    {
        try (KvPool pool = KvPool.allocate(GEOMETRY, 8)) {
            byte[] description = PoolDescriptions.describe("host-a", regions(pool), null);

            assertThat(PoolDescriptions.read(description).sharedFile()).isEmpty();
            assertThatThrownBy(() -> PoolDescriptions.map("host-a", description, dir)).hasMessageContaining("is not a shared file");
        }
    }

    @Test
    void aMappingWritesIntoTheReceiversPoolAndNowhereElse(@TempDir Path dir)
            throws Exception
    {
        try (KvPool pool = KvPool.mapShared(GEOMETRY, 16, dir.resolve("pool"));
                SharedPoolMapping mapping = PoolDescriptions.map("host-a", PoolDescriptions.describe("host-a", regions(pool), dir.resolve("pool")), dir)) {
            assertThat(mapping.regions()).hasSize(pool.regions().size());
            mapping.regions().get(1).page(3).fill((byte) 7);

            MemoryRegion receiver = regions(pool).get(1);
            assertThat(receiver.page(3).toArray(ValueLayout.JAVA_BYTE)).containsOnly(7);
            assertThat(receiver.page(2).toArray(ValueLayout.JAVA_BYTE)).containsOnly(0);
            assertThat(regions(pool).get(0).page(3).toArray(ValueLayout.JAVA_BYTE)).containsOnly(0);
        }
    }

    @Test
    void aPoolOnAnotherHostIsRefusedNamingBothHosts(@TempDir Path dir)
            throws Exception
    {
        try (KvPool pool = KvPool.mapShared(GEOMETRY, 16, dir.resolve("pool"))) {
            byte[] description = PoolDescriptions.describe("host-b", regions(pool), dir.resolve("pool"));

            assertThatThrownBy(() -> PoolDescriptions.map("host-a", description, dir)).hasMessageContaining("host-b").hasMessageContaining("host-a");
        }
    }

    @Test
    void malformedDescriptionsAreRefusedWithWhatIsWrong()
    {
        try (KvPool pool = KvPool.allocate(GEOMETRY, 8)) {
            byte[] good = PoolDescriptions.describe("host-a", regions(pool), null);

            assertThatThrownBy(() -> PoolDescriptions.read(new byte[] {1, 2, 3})).hasMessageContaining("truncated pool description");
            byte[] wrongMagic = good.clone();
            wrongMagic[0] ^= 1;
            assertThatThrownBy(() -> PoolDescriptions.read(wrongMagic)).hasMessageContaining("not a pool description");
            assertThatThrownBy(() -> PoolDescriptions.read(Arrays.copyOf(good, good.length - 3))).hasMessageContaining("truncated");
            assertThatThrownBy(() -> PoolDescriptions.read(Arrays.copyOf(good, good.length + 2))).hasMessageContaining("trailing bytes");
        }
    }

    @Test
    void aRegionLargerThanTheFileIsRefusedBeforeAnythingIsMapped(@TempDir Path dir)
            throws Exception
    {
        try (KvPool small = KvPool.mapShared(GEOMETRY, 4, dir.resolve("small"));
                KvPool large = KvPool.allocate(GEOMETRY, 64);
                Arena arena = Arena.ofConfined()) {
            // the large pool's shapes, claimed to live in the small pool's file
            List<MemoryRegion> claimed = new ArrayList<>();
            for (MemoryRegion region : regions(large)) {
                claimed.add(new MemoryRegion(region.index(), region.segment(), region.pageStride(), region.index() * region.segment().byteSize()));
            }
            byte[] description = PoolDescriptions.describe("host-a", claimed, dir.resolve("small"));

            assertThatThrownBy(() -> PoolDescriptions.map("host-a", description, dir)).hasMessageContaining("which has");
        }
    }

    private static List<MemoryRegion> regions(KvPool pool)
    {
        List<MemoryRegion> regions = new ArrayList<>();
        for (KvRegion region : pool.regions()) {
            regions.add(new MemoryRegion(regions.size(), region.segment(), region.pageStride(), region.fileOffset()));
        }
        return regions;
    }
}
