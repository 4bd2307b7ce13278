package io.handoff.plugin.mooncake;

import io.handoff.spi.Availability;
import io.handoff.spi.ProviderKind;
import io.handoff.spi.transfer.TransferBackend;
import io.handoff.spi.transfer.TransferCapability;
import io.handoff.testkit.transfer.RecordingContext;
import io.handoff.testkit.transfer.ReferenceSettings;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.util.EnumSet;
import java.util.Set;

import static io.handoff.spi.transfer.TransferCapability.DRAIN_ACK;
import static io.handoff.spi.transfer.TransferCapability.FORWARD_SYNC;
import static io.handoff.spi.transfer.TransferCapability.ONE_SIDED;
import static io.handoff.spi.transfer.TransferCapability.PIPELINED;
import static io.handoff.spi.transfer.TransferCapability.RECEIVER_VALIDATED_WRITES;
import static io.handoff.spi.transfer.TransferCapability.REMOTE;
import static io.handoff.spi.transfer.TransferCapability.SAME_HOST;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class MooncakeProviderTest
{
    private final MooncakeProvider provider = new MooncakeProvider();
    private final ReferenceSettings settings = ReferenceSettings.of(provider);

    @TempDir
    Path folder;

    @Test
    void isAnAvailableTransferBackendWithItsDefaults()
    {
        assertThat(provider.id()).isEqualTo("mooncake");
        assertThat(provider.kind()).isEqualTo(ProviderKind.TRANSFER);
        assertThat(provider.availability(settings.defaults())).isEqualTo(Availability.AVAILABLE);
        assertThat(provider.availability(settings.with("transport", "tcp"))).isEqualTo(Availability.AVAILABLE);
    }

    @Test
    void declaresPerTransportWhatItsTestsProve()
    {
        assertThat(provider.capabilities(settings.with("transport", "tcp")))
                .isEqualTo(EnumSet.of(RECEIVER_VALIDATED_WRITES, REMOTE, SAME_HOST, DRAIN_ACK, FORWARD_SYNC, PIPELINED, TransferCapability.HEAD_SLICES));
        assertThat(provider.capabilities(settings.with("transport", "shm")))
                .isEqualTo(EnumSet.of(ONE_SIDED, SAME_HOST, DRAIN_ACK, FORWARD_SYNC, TransferCapability.HEAD_SLICES));
        assertThat(provider.capabilityNames(settings.defaults()))
                .containsExactly("DRAIN_ACK", "FORWARD_SYNC", "HEAD_SLICES", "REMOTE", "SAME_HOST");
    }

    @Test
    void autoPromisesOnlyTheGuaranteesBothTransportsKeep()
    {
        Set<TransferCapability> auto = provider.capabilities(settings.with("transport", "auto"));
        Set<TransferCapability> both = EnumSet.copyOf(Transport.TCP.capabilities());
        both.retainAll(Transport.SHM.capabilities());

        // REMOTE is reach, not a guarantee about writes: under auto a peer on another host always gets tcp.
        Set<TransferCapability> guarantees = EnumSet.copyOf(auto);
        guarantees.remove(REMOTE);
        assertThat(guarantees).isEqualTo(both);
        assertThat(auto).doesNotContain(RECEIVER_VALIDATED_WRITES, ONE_SIDED);
    }

    @Test
    void isUnavailableWithAReasonWhenItCannotListenOrIsMisconfigured()
    {
        // 192.0.2.1 is TEST-NET-1: never an address of this machine.
        Availability foreign = provider.availability(settings.with("listen-host", "192.0.2.1"));
        assertThat(foreign.available()).isFalse();
        assertThat(foreign.reason()).contains("cannot listen on 192.0.2.1").contains("listen-host");

        Availability tinyFrames = provider.availability(settings.with("max-frame-bytes", "1KiB"));
        assertThat(tinyFrames.available()).isFalse();
        assertThat(tinyFrames.reason()).contains("max-frame-bytes = 1024");
    }

    @Test
    void wantsSharedFileMemoryUnlessTcpOrTheDirectoryIsMissing()
    {
        Path missing = folder.resolve("missing");
        assertThat(wantsSharedFile("auto", folder)).isTrue();
        assertThat(wantsSharedFile("shm", folder)).isTrue();
        assertThat(wantsSharedFile("tcp", folder)).isFalse();
        assertThat(wantsSharedFile("auto", missing)).isFalse();
        assertThatThrownBy(() -> wantsSharedFile("shm", missing))
                .isInstanceOf(IllegalStateException.class)
                .hasMessageContaining(missing + ", which is not a writable directory");
    }

    @Test
    void everyKeyIsDocumentedInTheReferenceAndTimesAndSizesCarryTheirType()
    {
        assertThat(settings.undocumented()).isEmpty();
        assertThat(settings.declared()).containsKeys("transport", "listen-host", "advertise-host", "connect-timeout",
                "ack-timeout", "max-frame-bytes", "socket-buffer-bytes");
    }

    private boolean wantsSharedFile(String transport, Path directory)
    {
        try (TransferBackend backend = provider.open(new RecordingContext("h", directory), settings.with("transport", transport))) {
            return backend.wantsSharedFileMemory();
        }
    }
}
