package io.handoff.plugin.mori;

import io.handoff.spi.transfer.MemoryRegion;
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
    void theDescriptorNamesTheHostThePoolFileAndEveryRegionsPlaceInIt()
    {
        try (Pool decodePool = Pool.mapped(folder.resolve("pool"));
                MoriBackend decode = backend("host-a")) {
            PoolDescriptor descriptor = PoolDescriptor.decode(decode.expose(decodePool.regions(), decodePool.file(), WriteGuard.ALLOW_ALL));

            assertThat(descriptor.hostId()).isEqualTo("host-a");
            assertThat(descriptor.sharedFile()).isEqualTo(decodePool.file().toAbsolutePath());
            assertThat(descriptor.regions()).containsExactly(
                    new PoolDescriptor.Region(0, Pool.PAGES * 1024L, 1024),
                    new PoolDescriptor.Region(Pool.PAGES * 1024L, Pool.PAGES * 1024L, 1024),
                    new PoolDescriptor.Region(2 * Pool.PAGES * 1024L, Pool.PAGES * 512L, 512));
            assertThat(PoolDescriptor.decode(descriptor.encode())).isEqualTo(descriptor);
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
    void aDescriptorOfAnotherBackendOrVersionIsRefused()
    {
        try (Pool prefillPool = Pool.anonymous();
                MoriBackend prefill = backend("host-a")) {
            prefill.registerSources(prefillPool.regions());
            assertThatThrownBy(() -> prefill.connect("host-a", new byte[] {1, 0, 4, 'h'}))
                    .hasMessageContaining("not a mori descriptor");
            byte[] future = new PoolDescriptor("host-a", folder.resolve("pool"), List.of()).encode();
            future[4] = 2;
            assertThatThrownBy(() -> prefill.connect("host-a", future))
                    .hasMessageContaining("mori descriptor version 2, this Handoff reads version 1");
        }
    }

    @Test
    void aDecodeWithAnotherGeometryOrAVanishedPoolFileIsRefused()
            throws Exception
    {
        try (Pool prefillPool = Pool.anonymous();
                MoriBackend prefill = backend("host-a")) {
            prefill.registerSources(prefillPool.regions());
            List<PoolDescriptor.Region> regions = prefillPool.regions().stream()
                    .map(region -> new PoolDescriptor.Region(0, region.segment().byteSize(), region.pageStride())).toList();

            byte[] twoRegions = new PoolDescriptor("host-a", folder.resolve("pool"), regions.subList(0, 2)).encode();
            assertThatThrownBy(() -> prefill.connect("host-a", twoRegions))
                    .hasMessageContaining("the receiver exposed 2 regions, this sender has 3");

            byte[] wideStride = new PoolDescriptor("host-a", folder.resolve("pool"),
                    List.of(regions.get(0), regions.get(1), new PoolDescriptor.Region(0, Pool.PAGES * 1024L, 1024))).encode();
            assertThatThrownBy(() -> prefill.connect("host-a", wideStride))
                    .hasMessageContaining("region 2 has 1024-byte pages on the receiver and 512-byte pages here");

            byte[] vanished = new PoolDescriptor("host-a", folder.resolve("gone"), regions).encode();
            assertThatThrownBy(() -> prefill.connect("host-a", vanished))
                    .hasMessageContaining("cannot map the receiver's pool file " + folder.resolve("gone"));

            Files.write(folder.resolve("short"), new byte[100]);
            byte[] shortFile = new PoolDescriptor("host-a", folder.resolve("short"), regions).encode();
            assertThatThrownBy(() -> prefill.connect("host-a", shortFile))
                    .hasMessageContaining("region 0 ends at byte " + Pool.PAGES * 1024L + " of " + folder.resolve("short") + ", which has 100 bytes");
        }
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

    private MoriBackend backend(String hostId)
    {
        return new MoriBackend(new RecordingContext(hostId, folder), MoriConfig.from(ReferenceSettings.of(new MoriProvider()).defaults()), RdmaTransport.probe());
    }
}
