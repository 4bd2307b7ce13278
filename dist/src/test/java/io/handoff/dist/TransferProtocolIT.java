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

import java.util.HashMap;
import java.util.List;
import java.util.Map;

import static io.handoff.dist.InProcessPd.PATIENCE;
import static io.handoff.dist.InProcessPd.await;
import static io.handoff.dist.InProcessPd.colocated;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * The core enforces the transfer protocol, end to end: a backend that breaks it in one way (see
 * {@link io.handoff.dist.inprocess.Behaviour}) fails the affected request loudly, with a message naming the
 * violation, and its connection is fenced; no request ends with wrong tokens. And early send is decided per
 * connection: a connection that reports less than its provider declares gets none, while another still does.
 */
class TransferProtocolIT
{
    @ParameterizedTest
    @CsvSource(delimiter = '|', value = {
            "skips-fence        | without calling reading() or awaitFence() first",
            "reads-before-fence | began reading room",
            "reports-twice      | reported a second outcome",
            "never-reports      | reported no outcome"})
    void aBackendThatBreaksTheProtocolFailsItsRequestLoudlyAndIsFenced(String behaviour, String violation)
            throws Exception
    {
        FaultPlan faults = new FaultPlan();
        // hold chunk 0's forward until its plan is posted, so the backend is handed a plan whose fence is pending
        FaultPlan.Gate forward = faults.park(FaultPoint.FORWARD_AFTER_LAYER, Match.is(0), Match.is(0));
        Map<String, String> settings = new HashMap<>(Map.of("handoff.disaggregation.transfer-backend", InProcessProvider.ID,
                "handoff.plugins.test-inprocess.behaviour", behaviour, "handoff.disaggregation.transfer-report-timeout", "2s",
                // the fenced connection proves no drain, so the prefill's pages of the failed room stay held: do not wait for them
                "handoff.scheduler.shutdown-wait", "1s"));
        try (InProcessPd pd = new InProcessPd(settings, faults, Disaggregation.Options.DEFAULT)) {
            RequestHandle decode = pd.start(1);
            forward.awaitParked(PATIENCE);
            pd.awaitEarlyBytes();
            forward.release();
            GenerateResult result = await(decode);

            assertThat(result.error()).as("the decode's request fails, it does not produce tokens from unproven KV")
                    .hasValueSatisfying(error -> assertThat(error).contains(violation).contains("the connection is fenced"));
        }
    }

    @Test
    void aConnectionThatReportsLessThanItsProviderGetsNoEarlySendWhileAnotherStillDoes()
            throws Exception
    {
        int[] reference = colocated();
        FaultPlan faults = new FaultPlan();
        FaultPlan.Gate forward = faults.park(FaultPoint.FORWARD_AFTER_LAYER, Match.is(0), Match.is(0));
        Map<String, String> settings = Map.of("handoff.disaggregation.transfer-backend", InProcessProvider.ID);
        // decode 0 reports what the provider declares; decode 1's connection reports neither FORWARD_SYNC nor STAGING
        List<Map<String, String>> decodes = List.of(Map.of(),
                Map.of("handoff.plugins.test-inprocess.connection-capabilities", "DRAIN_ACK,SAME_HOST"));
        try (InProcessPd pd = new InProcessPd(settings, decodes, faults, Disaggregation.Options.DEFAULT)) {
            assertThat(pd.prefillDisaggregation().earlySend().enabled()).as("the provider's declaration allows early send").isTrue();

            RequestHandle full = pd.start(1, 0);
            forward.awaitParked(PATIENCE);
            pd.awaitEarlyBytes();
            forward.release();
            GenerateResult first = await(full);
            long earlyAfterFirst = pd.prefillDisaggregation().stats().earlyBytes();

            GenerateResult second = await(pd.start(2, 1));

            assertThat(first.error()).isEmpty();
            assertThat(first.outputIds()).isEqualTo(reference);
            assertThat(earlyAfterFirst).as("early bytes to the decode whose connection qualifies").isPositive();
            assertThat(second.error()).isEmpty();
            assertThat(second.outputIds()).isEqualTo(reference);
            assertThat(pd.prefillDisaggregation().stats().earlyBytes()).as("no plan posted before its forward to the narrower connection")
                    .isEqualTo(earlyAfterFirst);
        }
    }
}
