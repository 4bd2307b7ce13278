package io.handoff.core.disagg.room;

import io.handoff.spi.transfer.TransferCapability;
import org.junit.jupiter.api.Test;

import java.util.EnumSet;
import java.util.Set;

import static io.handoff.spi.transfer.TransferCapability.DRAIN_ACK;
import static io.handoff.spi.transfer.TransferCapability.FORWARD_SYNC;
import static io.handoff.spi.transfer.TransferCapability.ONE_SIDED;
import static io.handoff.spi.transfer.TransferCapability.REMOTE;
import static io.handoff.spi.transfer.TransferCapability.SAME_HOST;
import static io.handoff.spi.transfer.TransferCapability.STAGING;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** The gate's three settings against what each built-in backend declares (its real declarations, listed here). */
class EarlySendTest
{
    private static final Set<TransferCapability> MORI_FORWARD_SYNC = EnumSet.of(ONE_SIDED, SAME_HOST, DRAIN_ACK, FORWARD_SYNC);
    private static final Set<TransferCapability> MORI_UNFIXED = EnumSet.of(ONE_SIDED, SAME_HOST, DRAIN_ACK);
    private static final Set<TransferCapability> NIXL = EnumSet.of(STAGING, ONE_SIDED, REMOTE, SAME_HOST, DRAIN_ACK);
    private static final Set<TransferCapability> MOONCAKE = EnumSet.of(SAME_HOST, REMOTE, DRAIN_ACK, FORWARD_SYNC);

    @Test
    void autoEnablesEarlySendExactlyForBackendsThatDeclareForwardSyncOrStaging()
    {
        assertThat(EarlySend.decide("auto", "mori", MORI_FORWARD_SYNC)).isEqualTo(new EarlySend("auto", true,
                "auto: transfer backend 'mori' declares FORWARD_SYNC (it reads a page only after the forward's fence)"));
        assertThat(EarlySend.decide("auto", "nixl", NIXL)).isEqualTo(new EarlySend("auto", true,
                "auto: transfer backend 'nixl' declares STAGING (it snapshots pages after the forward's fence)"));
        assertThat(EarlySend.decide("auto", "mooncake", MOONCAKE).enabled()).isTrue();
        assertThat(EarlySend.decide("auto", "mori", MORI_UNFIXED)).isEqualTo(new EarlySend("auto", false,
                "auto: transfer backend 'mori' declares neither FORWARD_SYNC nor STAGING: it does not promise to read a page only "
                        + "after the forward that writes it"));
    }

    @Test
    void onRefusesABackendThatDeclaresNeitherNamingItAndTheMissingCapabilities()
    {
        assertThatThrownBy(() -> EarlySend.decide("on", "mori", MORI_UNFIXED))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("transfer backend 'mori' lacks FORWARD_SYNC and STAGING; handoff.disaggregation.early-send-cached-prefix = on "
                        + "is unsafe with it: set it to auto or off, or use a backend that declares one of them (for mori: "
                        + "handoff.plugins.mori.forward-sync = true)");
        assertThat(EarlySend.decide("on", "mori", MORI_FORWARD_SYNC).enabled()).isTrue();
        assertThat(EarlySend.decide("on", "nixl", NIXL).enabled()).isTrue();
        assertThat(EarlySend.decide("on", "mooncake", MOONCAKE).enabled()).isTrue();
    }

    @Test
    void offNeverEnablesEarlySend()
    {
        for (Set<TransferCapability> capabilities : java.util.List.of(MORI_FORWARD_SYNC, MORI_UNFIXED, NIXL, MOONCAKE)) {
            assertThat(EarlySend.decide("off", "any", capabilities)).isEqualTo(new EarlySend("off", false, "early-send-cached-prefix is off"));
        }
    }

    @Test
    void aBackendCannotOptInByBehaviourOnlyByDeclaration()
    {
        // the decision reads nothing but the declared set: the same backend id with fewer declarations is refused
        assertThat(EarlySend.decide("auto", "mooncake", EnumSet.of(SAME_HOST, REMOTE, DRAIN_ACK)).enabled()).isFalse();
    }

    @Test
    void aConnectionThatReportsLessThanItsProviderTurnsEarlySendOffForItselfOnly()
    {
        EarlySend engine = EarlySend.decide("auto", "mori", MORI_FORWARD_SYNC);

        EarlySend narrowed = engine.forConnection("mori", EnumSet.of(ONE_SIDED, SAME_HOST));
        assertThat(narrowed.enabled()).isFalse();
        assertThat(narrowed.reason()).isEqualTo("auto: this connection of transfer backend 'mori' reports [ONE_SIDED, SAME_HOST], neither "
                + "FORWARD_SYNC nor STAGING (narrower than the backend's declaration), so it gets no early send");
        assertThat(engine.forConnection("mori", MORI_FORWARD_SYNC)).isSameAs(engine);
        assertThat(engine.forConnection("mori", EnumSet.of(STAGING))).isSameAs(engine);
        assertThat(engine.enabled()).as("the engine's decision is unchanged").isTrue();
    }

    @Test
    void offStaysOffForEveryConnectionAndTheTestHookIsNotNarrowed()
    {
        EarlySend off = EarlySend.decide("off", "nixl", NIXL);
        assertThat(off.forConnection("nixl", NIXL)).isSameAs(off);

        EarlySend forced = EarlySend.forcedForTesting("auto", "mori", EnumSet.of(ONE_SIDED));
        assertThat(forced.forConnection("mori", EnumSet.of(ONE_SIDED)).enabled()).isTrue();
    }
}
