package io.handoff.dist;

import io.handoff.core.disagg.Disaggregation;
import io.handoff.core.fault.FaultPlan;
import io.handoff.core.fault.FaultPlan.Match;
import io.handoff.core.fault.FaultPoint;
import io.handoff.core.scheduler.GenerateResult;
import io.handoff.core.scheduler.RequestHandle;
import io.handoff.dist.inprocess.InProcessProvider;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import java.util.Map;

import static io.handoff.dist.InProcessPd.PAGES_PER_CHUNK;
import static io.handoff.dist.InProcessPd.PATIENCE;
import static io.handoff.dist.InProcessPd.await;
import static io.handoff.dist.InProcessPd.colocated;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * The field bug behind early send (seed 000), reproduced and prevented, deterministically. A fault plan parks chunk
 * 0's forward after its first layer while early send has already posted chunk 0's pages (see {@link InProcessPd}).
 * A backend that read them then would copy pages whose later layers are not written yet. The core now makes that
 * impossible for a backend that does not claim FORWARD_SYNC (it waits on the fence for it); a backend that claims
 * FORWARD_SYNC and lies about it is caught by the page checksums (I3).
 */
class EarlySendHazardIT
{
    @Test
    void theCoreHoldsAnEarlyPlanUntilItsForwardIsDoneForABackendWithoutForwardSync()
            throws Exception
    {
        int[] reference = colocated();
        FaultPlan faults = new FaultPlan();
        FaultPlan.Gate forward = faults.park(FaultPoint.FORWARD_AFTER_LAYER, Match.is(0), Match.is(0));
        FaultPlan.Gate read = faults.park(FaultPoint.TRANSFER_BEFORE_CHUNK, Match.ANY, Match.is(0));
        // mori with forward-sync off reads the pool directly; the test-only option posts early plans to it anyway
        Map<String, String> mori = Map.of("handoff.disaggregation.transfer-backend", "mori", "handoff.plugins.mori.forward-sync", "false");
        try (InProcessPd pd = new InProcessPd(mori, faults, new Disaggregation.Options(true))) {
            RequestHandle decode = pd.start(1);
            forward.awaitParked(PATIENCE);
            pd.awaitEarlyBytes();
            // chunk 0's plan is posted while its forward is parked after layer 0: the backend has not been handed it
            assertThat(read.hasParked()).as("the backend began reading chunk 0 before its forward finished").isFalse();
            forward.release();
            read.awaitParked(PATIENCE);
            read.release();
            GenerateResult result = await(decode);

            assertThat(result.error()).isEmpty();
            assertThat(result.outputIds()).isEqualTo(reference);
        }
    }

    @Test
    void aBackendThatClaimsForwardSyncButCopiesFirstTearsTheKvAndTheDecodeDivergesSilentlyWithoutChecksums()
            throws Exception
    {
        int[] reference = colocated();
        FaultPlan faults = new FaultPlan();
        FaultPlan.Gate forward = faults.park(FaultPoint.FORWARD_AFTER_LAYER, Match.is(0), Match.is(0));
        FaultPlan.Gate copied = faults.park(FaultPoint.TRANSFER_AFTER_PAGE, Match.ANY, Match.is(PAGES_PER_CHUNK - 1));
        try (InProcessPd pd = new InProcessPd(lying("off"), faults, Disaggregation.Options.DEFAULT)) {
            RequestHandle decode = pd.start(2);
            copied.awaitParked(PATIENCE);
            // chunk 0's pages were copied while its forward is parked after layer 0 of 4
            forward.awaitParked(PATIENCE);
            assertThat(forward.parkedNow()).isEqualTo(1);
            copied.release();
            forward.release();
            GenerateResult result = await(decode);

            assertThat(result.error()).isEmpty();
            assertThat(result.outputIds()).as("decode output with torn prefix KV").isNotEqualTo(reference);
        }
    }

    @Test
    void theSameTearIsCaughtLoudlyByThePageChecksums()
            throws Exception
    {
        FaultPlan faults = new FaultPlan();
        FaultPlan.Gate forward = faults.park(FaultPoint.FORWARD_AFTER_LAYER, Match.is(0), Match.is(0));
        FaultPlan.Gate copied = faults.park(FaultPoint.TRANSFER_AFTER_PAGE, Match.ANY, Match.is(PAGES_PER_CHUNK - 1));
        try (InProcessPd pd = new InProcessPd(lying("checksum"), faults, Disaggregation.Options.DEFAULT)) {
            RequestHandle decode = pd.start(3);
            copied.awaitParked(PATIENCE);
            copied.release();
            forward.release();
            GenerateResult result = await(decode);

            assertThat(result.error()).hasValueSatisfying(error -> assertThat(error).contains("KV checksum mismatch on room page 0"));
        }
    }

    @ParameterizedTest
    @CsvSource({"mori, handoff.plugins.mori.forward-sync, true", "mooncake, handoff.plugins.mooncake.transport, shm",
            "mooncake, handoff.plugins.mooncake.transport, tcp", "nixl, handoff.plugins.nixl.tls, 'posix,self'",
            "test-inprocess, handoff.plugins.test-inprocess.behaviour, honest"})
    void throughTheGateTheSameScenarioIsBitExact(String backend, String key, String value)
            throws Exception
    {
        int[] reference = colocated();
        FaultPlan faults = new FaultPlan();
        FaultPlan.Gate forward = faults.park(FaultPoint.FORWARD_AFTER_LAYER, Match.is(0), Match.is(0));
        try (InProcessPd pd = new InProcessPd(Map.of("handoff.disaggregation.transfer-backend", backend, key, value), faults,
                Disaggregation.Options.DEFAULT)) {
            assertThat(pd.prefillDisaggregation().earlySend().enabled()).as("the gate allows early send").isTrue();
            RequestHandle decode = pd.start(4);

            forward.awaitParked(PATIENCE);
            // Chunk 0 is scheduled for sending once chunk 1 is scheduled; its plan is posted, fence pending, as soon as the
            // decode's room request (its own process-independent handshake) has arrived. Hold the forward until then.
            pd.awaitEarlyBytes();
            forward.release();
            GenerateResult result = await(decode);

            assertThat(result.error()).isEmpty();
            assertThat(result.outputIds()).isEqualTo(reference);
            assertThat(pd.prefillDisaggregation().stats().earlyBytes()).as("bytes posted before their forward completed").isPositive();
        }
    }

    /** The in-process backend copying chunk pages before it waits on the fence, while it declares FORWARD_SYNC. */
    private static Map<String, String> lying(String kvFidelity)
    {
        return Map.of("handoff.disaggregation.transfer-backend", InProcessProvider.ID,
                "handoff.plugins.test-inprocess.behaviour", "copies-before-fence", "handoff.debug.kv-fidelity", kvFidelity);
    }
}
