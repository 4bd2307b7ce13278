package io.handoff.plugin.mori;

import io.handoff.spi.transfer.MemoryRegion;
import io.handoff.spi.transfer.PageGeometry;
import io.handoff.spi.transfer.PoolDescription;
import io.handoff.spi.transfer.WriteGuard;
import io.handoff.testkit.transfer.Pool;
import io.handoff.testkit.transfer.RecordingContext;
import io.handoff.testkit.transfer.ReferenceSettings;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** The handshake: what a decode's descriptor says, and which peers a prefill refuses, with what message. */
class ConnectTest
{
    @TempDir
    Path folder;

    @Test
    void theDescriptorIsTheCoresDescriptionOfTheHostThePoolFileAndThePageGeometry()
    {
        try (Pool decodePool = Pool.mapped(folder.resolve("pool"));
                MoriBackend decode = backend("host-a")) {
            PoolDescription described = context("host-a").readPool(decode.expose(decodePool.regions(), decodePool.file(), WriteGuard.ALLOW_ALL));

            assertThat(described.hostId()).isEqualTo("host-a");
            assertThat(described.sharedFile()).contains(decodePool.file().toAbsolutePath());
            assertThat(described.geometry()).isEqualTo(PageGeometry.of(decodePool.regions()));
        }
    }

    @Test
    void aDecodeOnAnotherHostIsRefusedWithTheReasonThereIsNoRdmaPath()
    {
        try (Pool decodePool = Pool.mapped(folder.resolve("pool"));
                Pool prefillPool = Pool.anonymous();
                MoriBackend decode = backend("decode-host");
                MoriBackend prefill = backend("prefill-host")) {
            byte[] descriptor = decode.expose(decodePool.regions(), decodePool.file(), WriteGuard.ALLOW_ALL);
            prefill.registerSources(prefillPool.regions());

            assertThatThrownBy(() -> prefill.connect("decode-host", descriptor))
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("mori cannot reach the decode on host decode-host from host prefill-host")
                    .hasMessageContaining("RDMA path is " + RdmaTransport.probe().summary())
                    .hasMessageContaining("use a transfer backend that works between hosts");
        }
    }

    @Test
    void aPoolInAnonymousMemoryCannotBeExposed()
    {
        try (Pool anonymous = Pool.anonymous();
                MoriBackend decode = backend("host-a")) {
            assertThatThrownBy(() -> decode.expose(anonymous.regions(), null, WriteGuard.ALLOW_ALL))
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("was exposed as anonymous memory");
        }
    }

    @Test
    void aDescriptorThatIsNoPoolDescriptionIsRefused()
    {
        try (Pool prefillPool = Pool.anonymous();
                MoriBackend prefill = backend("host-a")) {
            prefill.registerSources(prefillPool.regions());
            assertThatThrownBy(() -> prefill.connect("host-a", new byte[] {1, 0, 4, 'h', 0, 0, 0, 0}))
                    .hasMessageContaining("not a pool description");
        }
    }

    @Test
    void aDecodeWithAnotherGeometryOrAVanishedPoolFileIsRefused()
            throws Exception
    {
        try (Pool prefillPool = Pool.anonymous();
                Pool wide = Pool.anonymous(Pool.PAGES, new long[] {1024, 1024, 1024});
                MoriBackend prefill = backend("host-a")) {
            prefill.registerSources(prefillPool.regions());
            List<MemoryRegion> regions = inFile(prefillPool.regions());

            byte[] twoRegions = context("host-a").describePool(regions.subList(0, 2), folder.resolve("pool"));
            assertThatThrownBy(() -> prefill.connect("host-a", twoRegions))
                    .hasMessageContaining("the receiver exposed 2 regions, this sender has 3");

            byte[] wideStride = context("host-a").describePool(inFile(wide.regions()), folder.resolve("pool"));
            assertThatThrownBy(() -> prefill.connect("host-a", wideStride))
                    .hasMessageContaining("region 2 has 1024-byte pages on the receiver and 512-byte pages here");

            byte[] vanished = context("host-a").describePool(regions, folder.resolve("gone"));
            assertThatThrownBy(() -> prefill.connect("host-a", vanished))
                    .hasMessageContaining("cannot map the receiver's pool file " + folder.resolve("gone"));

            Files.write(folder.resolve("short"), new byte[100]);
            byte[] shortFile = context("host-a").describePool(regions, folder.resolve("short"));
            assertThatThrownBy(() -> prefill.connect("host-a", shortFile))
                    .hasMessageContaining("ends at byte").hasMessageContaining(folder.resolve("short") + ", which has 100 bytes");
        }
    }

    /** The regions as if laid out one after another in a pool file. */
    private static List<MemoryRegion> inFile(List<MemoryRegion> regions)
    {
        List<MemoryRegion> placed = new java.util.ArrayList<>();
        long offset = 0;
        for (MemoryRegion region : regions) {
            placed.add(new MemoryRegion(region.index(), region.segment(), region.pageStride(), offset));
            offset += region.segment().byteSize();
        }
        return placed;
    }

    @Test
    void registerSourcesMustComeBeforeConnectAndRegionsMustBeInOrder()
    {
        try (Pool prefillPool = Pool.anonymous();
                MoriBackend prefill = backend("host-a")) {
            assertThatThrownBy(() -> prefill.connect("host-a", new byte[0])).hasMessageContaining("registerSources must come before connect");
            List<MemoryRegion> reversed = prefillPool.regions().reversed();
            assertThatThrownBy(() -> prefill.registerSources(reversed)).hasMessageContaining("region at position 0 has index 2");
        }
    }

    private RecordingContext context(String hostId)
    {
        return new RecordingContext(hostId, folder);
    }

    private MoriBackend backend(String hostId)
    {
        return new MoriBackend(context(hostId), MoriConfig.from(ReferenceSettings.of(new MoriProvider()).defaults()), RdmaTransport.probe());
    }
}
