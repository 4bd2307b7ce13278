package io.handoff.plugin.nixl;

import io.handoff.spi.Availability;
import io.handoff.spi.transfer.TransferBackend;
import io.handoff.spi.transfer.TransferCapability;
import io.handoff.testkit.transfer.RecordingContext;
import io.handoff.testkit.transfer.ReferenceSettings;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;

import static io.handoff.spi.transfer.TransferCapability.DRAIN_ACK;
import static io.handoff.spi.transfer.TransferCapability.ONE_SIDED;
import static io.handoff.spi.transfer.TransferCapability.REMOTE;
import static io.handoff.spi.transfer.TransferCapability.SAME_HOST;
import static io.handoff.spi.transfer.TransferCapability.STAGING;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** What the provider declares and reports, and how it refuses what it cannot do. */
class NixlProviderTest
{
    private final NixlProvider provider = new NixlProvider();
    private final ReferenceSettings settings = ReferenceSettings.of(provider);

    @TempDir
    Path folder;

    @Test
    void declaresStagingOneSidedDrainAckAndBothReachesButNotForwardSyncWhenItStages()
    {
        assertThat(provider.capabilities(settings.with("staging", "true"))).containsExactlyInAnyOrder(STAGING, ONE_SIDED, DRAIN_ACK, REMOTE, SAME_HOST, TransferCapability.HEAD_SLICES);
        assertThat(provider.capabilities(settings.with("staging", "true"))).doesNotContain(TransferCapability.FORWARD_SYNC,
                TransferCapability.RECEIVER_VALIDATED_WRITES);
    }

    @Test
    void declaresForwardSyncInsteadOfStagingWhenItPutsFromTheSourcePool()
    {
        assertThat(provider.capabilities(settings.defaults())).containsExactlyInAnyOrder(TransferCapability.FORWARD_SYNC, ONE_SIDED,
                DRAIN_ACK, REMOTE, SAME_HOST, TransferCapability.HEAD_SLICES);
        assertThat(provider.capabilities(settings.with("staging", "false"))).doesNotContain(STAGING);
    }

    @Test
    void isAvailableAndItsDescriptionNamesTheUcxVersion()
    {
        Ucx.assumeAvailable();

        assertThat(provider.availability(settings.with("tls", "tcp"))).isEqualTo(Availability.AVAILABLE);
        assertThat(provider.description()).matches(".*; UCX 1\\.\\d+\\.\\d+ from libucp\\.so\\.0");
    }

    @Test
    void isUnavailableWhenTheLibraryIsMissing()
    {
        Availability availability = provider.availability(settings.with("library", "libucp-missing.so.0"));

        assertThat(availability.available()).isFalse();
        // Without UCX_ERROR_SIGNALS= the probe refuses before it looks for the library; either reason names the cure.
        assertThat(availability.reason()).containsAnyOf("libucp-missing.so.0 not found: install UCX", "UCX_ERROR_SIGNALS");
    }

    @Test
    void refusesToLoadUcxWhileItsSignalHandlersWouldBeInstalled()
    {
        assertThat(UcxLibrary.probe("libucp.so.0", null).failure()).contains("UCX_ERROR_SIGNALS is not set to empty");
        assertThat(UcxLibrary.probe("libucp.so.0", "SIGSEGV").failure()).contains("UCX_ERROR_SIGNALS is not set to empty");
    }

    @Test
    void isUnavailableWithSettingsItCannotUse()
    {
        assertThat(provider.availability(settings.with("staging-buffer", "1KiB")).reason())
                .contains("handoff.plugins.nixl.staging-buffer = 1024");
        assertThat(provider.availability(settings.with("tls", "tcp posix")).reason())
                .contains("handoff.plugins.nixl.tls = \"tcp posix\": not a UCX transport list");
        assertThat(provider.availability(settings.with("flush-timeout", "0s")).reason())
                .contains("handoff.plugins.nixl.flush-timeout");
    }

    @Test
    void opensAndClosesABackendThatWasNeverUsed()
    {
        Ucx.assumeAvailable();
        TransferBackend backend = provider.open(new RecordingContext("host", folder), settings.defaults());

        assertThat(backend.wantsSharedFileMemory()).isFalse();
        backend.close();
        assertThatThrownBy(() -> backend.registerSources(java.util.List.of())).hasMessageContaining("closed");
    }

    @Test
    void refusesToOpenWithTransportsUcxDoesNotHave()
    {
        Ucx.assumeAvailable();

        assertThatThrownBy(() -> provider.open(new RecordingContext("host", folder), settings.with("tls", "no-such-transport")))
                .isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("ucp_init (UCX_TLS=no-such-transport) failed")
                .hasMessageContaining("check handoff.plugins.nixl.tls");
    }

    @Test
    void readsOnlyKeysItsReferenceDeclares()
    {
        assertThat(settings.declared()).containsOnlyKeys("library", "tls", "allow-unauthenticated-network", "staging", "staging-buffer", "flush-timeout");
        assertThat(NixlConfig.from(settings.defaults()))
                .isEqualTo(new NixlConfig("libucp.so.0", "", 64L << 20, java.time.Duration.ofSeconds(30), false, false));
    }

    @Test
    void everyKeyIsDocumentedInTheReferenceAndTimesCarryTheirType()
    {
        assertThat(settings.undocumented()).isEmpty();
    }
}
