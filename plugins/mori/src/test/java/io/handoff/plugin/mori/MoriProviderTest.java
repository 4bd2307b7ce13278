package io.handoff.plugin.mori;

import io.handoff.spi.Availability;
import io.handoff.spi.ProviderKind;
import io.handoff.spi.transfer.TransferCapability;
import io.handoff.spi.transfer.TransferBackend;
import io.handoff.testkit.transfer.RecordingContext;
import io.handoff.testkit.transfer.ReferenceSettings;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.util.EnumSet;
import java.util.List;
import java.util.Optional;

import static io.handoff.spi.transfer.TransferCapability.DRAIN_ACK;
import static io.handoff.spi.transfer.TransferCapability.FORWARD_SYNC;
import static io.handoff.spi.transfer.TransferCapability.ONE_SIDED;
import static io.handoff.spi.transfer.TransferCapability.REMOTE;
import static io.handoff.spi.transfer.TransferCapability.SAME_HOST;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class MoriProviderTest
{
    private final MoriProvider provider = new MoriProvider();
    private final ReferenceSettings settings = ReferenceSettings.of(provider);

    @TempDir
    Path folder;

    @Test
    void isAnAvailableTransferBackendWithItsDefaults()
    {
        assertThat(provider.id()).isEqualTo("mori");
        assertThat(provider.kind()).isEqualTo(ProviderKind.TRANSFER);
        assertThat(settings.declared()).containsOnly(java.util.Map.entry("forward-sync", "true"), java.util.Map.entry("max-copy-bytes", "4MiB"));
        assertThat(provider.availability(settings.defaults())).isEqualTo(Availability.AVAILABLE);
        assertThat(provider.availability(settings.with("forward-sync", "false"))).isEqualTo(Availability.AVAILABLE);

        Availability tinyCopies = provider.availability(settings.with("max-copy-bytes", "1KiB"));
        assertThat(tinyCopies.available()).isFalse();
        assertThat(tinyCopies.reason()).contains("handoff.plugins.mori.max-copy-bytes = 1024").contains("4KiB");
    }

    @Test
    void declaresForwardSyncExactlyWhenTheTransferThreadWaitsOnTheFenceAndNeverStaging()
    {
        assertThat(provider.capabilities(settings.with("forward-sync", "true")))
                .isEqualTo(EnumSet.of(ONE_SIDED, SAME_HOST, DRAIN_ACK, FORWARD_SYNC, TransferCapability.HEAD_SLICES));
        assertThat(provider.capabilities(settings.with("forward-sync", "false")))
                .isEqualTo(EnumSet.of(ONE_SIDED, SAME_HOST, DRAIN_ACK, TransferCapability.HEAD_SLICES));
        assertThat(provider.capabilityNames(settings.defaults())).containsExactly("DRAIN_ACK", "FORWARD_SYNC", "HEAD_SLICES", "ONE_SIDED", "SAME_HOST");
    }

    @Test
    void declaresRemoteOnlyWhenTheRdmaPathIsUsable()
    {
        // Whatever this machine has, this version has no RDMA data path, so it never claims REMOTE.
        assertThat(RdmaTransport.probe().usable()).isFalse();
        assertThat(provider.capabilities(settings.defaults())).doesNotContain(REMOTE);

        // The rule itself, with probe results handed in (a usable one cannot occur on any machine in this version).
        RdmaTransport.Probe usable = new RdmaTransport.Probe(List.of("mlx5_0"), Optional.empty());
        RdmaTransport.Probe devicesOnly = new RdmaTransport.Probe(List.of("mlx5_0"), Optional.of("no data path"));
        assertThat(new MoriProvider(folder, () -> usable).capabilities(settings.defaults())).contains(REMOTE);
        assertThat(new MoriProvider(folder, () -> devicesOnly).capabilities(settings.defaults())).doesNotContain(REMOTE);
    }

    @Test
    void theDescriptionReportsTheRdmaProbe()
    {
        assertThat(provider.description()).contains("shared memory").endsWith("RDMA (ibverbs) " + RdmaTransport.probe().summary());
        assertThat(RdmaTransport.probe().summary()).startsWith("unavailable: ");
    }

    @Test
    void isUnavailableWithAReasonWithoutTheSharedMemoryDirectoryAndHasNoFenceTimeoutOfItsOwn()
    {
        Path missing = folder.resolve("no-shm");
        Availability noShm = new MoriProvider(missing, RdmaTransport::probe).availability(settings.defaults());
        assertThat(noShm.available()).isFalse();
        assertThat(noShm.reason()).contains(missing + " does not exist").contains("RDMA path is unavailable: ");

        // The fence is waited on for mori by the core's handoff.disaggregation.fence-timeout: mori has no timeout of its own.
        assertThatThrownBy(() -> settings.with("fence-timeout", "60s")).hasMessageContaining("fence-timeout");
    }

    @Test
    void wantsSharedFileMemoryAndRefusesToOpenWithoutAWritableSharedMemoryDirectory()
    {
        try (TransferBackend backend = provider.open(new RecordingContext("h", folder), settings.defaults())) {
            assertThat(backend.wantsSharedFileMemory()).isTrue();
        }
        Path missing = folder.resolve("missing");
        assertThatThrownBy(() -> provider.open(new RecordingContext("h", missing), settings.defaults()))
                .isInstanceOf(IllegalStateException.class)
                .hasMessageContaining(missing + ", which is not a writable directory");
    }

    @Test
    void everyKeyIsDocumentedInTheReferenceAndTimesCarryTheirType()
    {
        assertThat(settings.undocumented()).isEmpty();
    }
}
