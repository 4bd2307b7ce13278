package io.handoff.chaos;

import com.fasterxml.jackson.databind.JsonNode;
import org.junit.jupiter.api.Test;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.OptionalDouble;
import java.util.OptionalInt;

import static org.assertj.core.api.Assertions.assertThat;

class ChaosReportTest
{
    private static final AbortPlan DURING_DECODE = new AbortPlan(AbortPlan.Phase.DURING_DECODE, AbortPlan.Method.DISCONNECT, 2);

    @Test
    void theJsonCountsEveryOutcomeOnceAndFailuresByCause()
    {
        ChaosReport report = report(List.of(
                        RequestOutcome.completed(0, new int[] {1, 2, 3}, AbortPlan.NONE),
                        RequestOutcome.aborted(1, new int[] {1, 2}, DURING_DECODE),
                        RequestOutcome.failed(2, new int[0], "checksum_mismatch", "twice", AbortPlan.NONE),
                        RequestOutcome.failed(3, new int[0], "http_503", "no decode", AbortPlan.NONE),
                        RequestOutcome.failed(4, new int[0], "checksum_mismatch", "twice", AbortPlan.NONE)),
                List.of(), leaks(0, 0));

        JsonNode json = report.toJson();
        assertThat(json.get("requests").asInt()).isEqualTo(5);
        assertThat(json.get("completed").asInt()).isEqualTo(1);
        assertThat(json.get("aborted").asInt()).isEqualTo(1);
        assertThat(json.get("failed").toString()).isEqualTo("{\"checksum_mismatch\":2,\"http_503\":1}");
        assertThat(json.get("retried").toString()).isEqualTo("{\"checksum_mismatch\":3}");
        assertThat(json.get("divergent").asInt()).isZero();
        assertThat(json.get("hung").asInt()).isZero();
        assertThat(json.get("pages_leaked").toString()).isEqualTo("{\"prefill\":0,\"decode\":0}");
        assertThat(json.get("quarantined_now").asInt()).isZero();
        assertThat(json.get("max_quarantine_ms").isNull()).isTrue();
        assertThat(json.get("aborted_by_phase").get("during_decode").asInt()).isEqualTo(1);
        assertThat(json.get("throughput").get("requests_per_s").asDouble()).isEqualTo(2.5);
        assertThat(json.get("throughput").get("tokens_per_s").asDouble()).isEqualTo(1.5);
        assertThat(json.get("clean").asBoolean()).isTrue();
        assertThat(report.toText()).contains("clean: nothing divergent, nothing hung, every page back");
    }

    @Test
    void aDivergentRequestAHungOneALeakOrAnUnreadableServerIsNotClean()
    {
        List<RequestOutcome> one = List.of(RequestOutcome.completed(0, new int[] {1}, AbortPlan.NONE));
        assertThat(report(one, List.of(0), leaks(0, 0)).clean()).isFalse();
        assertThat(report(List.of(RequestOutcome.hung(0, new int[0], "late", AbortPlan.NONE)), List.of(), leaks(0, 0)).clean()).isFalse();
        assertThat(report(one, List.of(), leaks(0, 3)).clean()).isFalse();
        Map<String, OptionalInt> unknown = new LinkedHashMap<>();
        unknown.put("prefill", OptionalInt.of(0));
        unknown.put("decode", OptionalInt.empty());
        ChaosReport unreadable = report(one, List.of(), unknown);
        assertThat(unreadable.clean()).isFalse();
        assertThat(unreadable.toJson().get("pages_leaked").get("decode").isNull()).isTrue();
        assertThat(unreadable.toText()).contains("NOT CLEAN");
    }

    @Test
    void aCompletedRequestMustMatchTheReferenceWhollyAndAnAbortedOneAsAPrefix()
    {
        int[] reference = {5, 6, 7, 8};
        assertThat(ChaosReport.matches(RequestOutcome.completed(0, new int[] {5, 6, 7, 8}, AbortPlan.NONE), reference)).isTrue();
        assertThat(ChaosReport.matches(RequestOutcome.completed(0, new int[] {5, 6, 7}, AbortPlan.NONE), reference)).isFalse();
        assertThat(ChaosReport.matches(RequestOutcome.completed(0, new int[] {5, 6, 7, 9}, AbortPlan.NONE), reference)).isFalse();
        assertThat(ChaosReport.matches(RequestOutcome.aborted(0, new int[] {5, 6}, DURING_DECODE), reference)).isTrue();
        assertThat(ChaosReport.matches(RequestOutcome.aborted(0, new int[] {5, 9}, DURING_DECODE), reference)).isFalse();
        assertThat(ChaosReport.matches(RequestOutcome.failed(0, new int[0], "x", "y", AbortPlan.NONE), reference)).isTrue();
    }

    private static Map<String, OptionalInt> leaks(int prefill, int decode)
    {
        Map<String, OptionalInt> leaks = new LinkedHashMap<>();
        leaks.put("prefill", OptionalInt.of(prefill));
        leaks.put("decode", OptionalInt.of(decode));
        return leaks;
    }

    private static ChaosReport report(List<RequestOutcome> outcomes, List<Integer> divergent, Map<String, OptionalInt> leaks)
    {
        return new ChaosReport(Map.of("transfer_backend", "mooncake"), outcomes, divergent, leaks, OptionalInt.of(0), OptionalDouble.empty(),
                java.util.Optional.empty(), Map.of("checksum_mismatch", 3L), true, 2.0, 10.0, List.of());
    }
}
