package io.handoff.dist;

import io.handoff.core.disagg.Disaggregation;
import io.handoff.core.fault.FaultPlan;
import io.handoff.core.fault.FaultPlan.Match;
import io.handoff.core.fault.FaultPoint;
import io.handoff.core.runtime.ComputeEngine;
import io.handoff.core.scheduler.GenerateResult;
import io.handoff.core.scheduler.RequestHandle;
import io.handoff.core.scheduler.TokenListener;
import io.handoff.trace.FailureCause;
import io.handoff.trace.FinishReason;
import org.junit.jupiter.api.Test;

import java.util.Map;

import static io.handoff.dist.InProcessPd.PATIENCE;
import static io.handoff.dist.InProcessPd.PROMPT;
import static io.handoff.dist.InProcessPd.await;
import static io.handoff.dist.InProcessPd.awaitTrue;
import static io.handoff.dist.InProcessPd.colocated;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * A decode's request whose other half never opens on its prefill: the router died between its two sends, or the prefill's
 * request was aborted in its queue. The decode must not hold receiving pages for its long waiting-for-input deadline: the
 * prefill fails the room it never opened, the decode's pages come back through the drain acknowledgement, and the pair
 * serves the next request.
 */
class UnopenedRoomIT
{
    @Test
    void aClaimForARoomWhoseRequestNeverReachesThePrefillFailsAfterTheBootstrappingTimeoutAndTheLateRequestIsRefused()
            throws Exception
    {
        int[] reference = colocated();
        try (InProcessPd pd = new InProcessPd(Map.of("handoff.disaggregation.bootstrapping-timeout", "2s"), new FaultPlan(),
                Disaggregation.Options.DEFAULT)) {
            ComputeEngine decode = pd.decode(0);

            GenerateResult orphan = await(pd.startDecode(1, 0, PROMPT, TokenListener.NONE));

            assertThat(orphan.cause()).contains(FailureCause.ROOM_UNCLAIMED);
            assertThat(orphan.error()).hasValueSatisfying(error -> assertThat(error).contains("never received the request of room 1")
                    .contains("bootstrapping-timeout"));
            awaitTrue("the orphaned room's pages come back on the prefill's drain ack", () -> decode.scheduler().stats().pages().receiving() == 0
                    && decode.scheduler().stats().pages().quarantined() == 0 && decode.disaggregation().orElseThrow().unsettledRooms() == 0);
            GenerateResult late = await(pd.startPrefill(1, PROMPT));
            assertThat(late.error()).as("the request that comes after its room was given up is refused, not served to nobody")
                    .hasValueSatisfying(error -> assertThat(error).contains("ended before this request came"));
            assertThat(late.cause()).contains(FailureCause.ROOM_UNCLAIMED);

            GenerateResult next = await(pd.start(2));
            assertThat(next.error()).isEmpty();
            assertThat(next.outputIds()).isEqualTo(reference);
        }
    }

    @Test
    void aPrefillRequestAbortedInItsQueueFailsItsDecodesRoomAtOnceNotAfterAnyTimeout()
            throws Exception
    {
        FaultPlan faults = new FaultPlan();
        // room 1's forward holds the prefill's only row, so that room 2's request waits in its queue
        FaultPlan.Gate forward = faults.park(FaultPoint.FORWARD_AFTER_LAYER, Match.is(0), Match.is(0));
        // a timeout would fail room 2 only after the test's patience: only the abort's notice can fail it in time
        Map<String, String> settings = Map.of("handoff.scheduler.max-running-requests", "1",
                "handoff.disaggregation.bootstrapping-timeout", (2 * PATIENCE.toSeconds()) + "s");
        try (InProcessPd pd = new InProcessPd(settings, faults, Disaggregation.Options.DEFAULT)) {
            RequestHandle first = pd.start(1);
            forward.awaitParked(PATIENCE);
            RequestHandle queuedOnPrefill = pd.startPrefill(2, PROMPT);
            RequestHandle second = pd.startDecode(2, 0, PROMPT, TokenListener.NONE);
            pd.prefill.scheduler().abort("r2");
            forward.release();

            GenerateResult failed = await(second);
            assertThat(failed.error()).hasValueSatisfying(error -> assertThat(error).contains("the prefill's request r2 ended before it was admitted"));
            assertThat(failed.cause()).contains(FailureCause.CLIENT_ABORT);
            assertThat(await(queuedOnPrefill).finishReason()).isEqualTo(FinishReason.ABORT);
            assertThat(await(first).error()).isEmpty();
            ComputeEngine decode = pd.decode(0);
            awaitTrue("room 2's pages come back", () -> decode.scheduler().stats().pages().receiving() == 0
                    && decode.scheduler().stats().pages().quarantined() == 0 && decode.disaggregation().orElseThrow().unsettledRooms() == 0);
        }
    }
}
