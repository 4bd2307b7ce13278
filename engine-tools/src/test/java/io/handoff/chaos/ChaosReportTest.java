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
        assertThat(json.get("held_without_proof").toString()).isEqualTo("{\"prefill\":0,\"decode\":0}");
        assertThat(json.get("kills").asInt()).isZero();
        assertThat(json.get("recovered").size()).isZero();
        assertThat(report.toText()).contains("clean: nothing divergent, nothing hung, every room settled and every page back");
    }

    @Test
    void pagesHeldWithoutProofAnUnsettledRoomGrowthOrAnUnrecoveredKillAreNotClean()
    {
        List<RequestOutcome> one = List.of(RequestOutcome.completed(0, new int[] {1}, AbortPlan.NONE));
        assertThat(report(one, leaks(0, 17), leaks(0, 0), List.of(), List.of(), Map.of()).clean()).as("held without proof").isFalse();
        assertThat(report(one, leaks(0, 0), leaks(0, 1), List.of(), List.of(), Map.of()).clean()).as("unsettled").isFalse();
        assertThat(report(one, leaks(0, 0), leaks(0, 0), List.of("decode: threads grew"), List.of(), Map.of()).clean()).as("growth").isFalse();
        ChaosKiller.Kill recovered = new ChaosKiller.Kill("decode", 20, 0);
        recovered.recoveredSeconds = 6.5;
        ChaosKiller.Kill lost = new ChaosKiller.Kill("prefill", 40, 0);
        assertThat(report(one, leaks(0, 0), leaks(0, 0), List.of(), List.of(recovered), Map.of()).clean()).isTrue();
        ChaosReport killing = report(one, leaks(0, 0), leaks(0, 0), List.of(), List.of(recovered, lost),
                Map.of("decode", List.of(new ResourceSample(0, 1 << 20, 2 << 20, 0, 30, 100, 4096, 0))));
        assertThat(killing.clean()).as("a kill never recovered").isFalse();
        JsonNode json = killing.toJson();
        assertThat(json.get("kills").asInt()).isEqualTo(2);
        assertThat(json.get("recovered").toString()).isEqualTo("[6.5]");
        assertThat(json.get("kill_log").get(1).get("victim").asText()).isEqualTo("prefill");
        assertThat(json.get("resources").get("decode").get(0).get("threads").asInt()).isEqualTo(30);
        assertThat(json.get("resources").get("decode").get(0).get("fds").asInt()).isEqualTo(100);
    }

    @Test
    void growthIsJudgedAfterWarmUpAgainstTheDocumentedThresholds()
    {
        List<ResourceSample> flat = new java.util.ArrayList<>();
        List<ResourceSample> leaking = new java.util.ArrayList<>();
        for (int i = 0; i < 24; i++) {
            // warm-up may grow (pools, JIT); after it nothing should
            int warm = Math.min(i, 4);
            flat.add(new ResourceSample(5 * i, 300L << 20, 40L << 20, 0, 30 + warm + i % 2, 80 + warm, 4096, 0));
            leaking.add(new ResourceSample(5 * i, 300L << 20, 40L << 20, 0, 30 + i, 80 + 2 * i, 4096, 0));
        }
        assertThat(ResourceGrowth.findings(Map.of("decode", flat))).isEmpty();
        assertThat(ResourceGrowth.findings(Map.of("prefill", leaking))).hasSize(2).allSatisfy(finding -> assertThat(finding).startsWith("prefill: "));
        assertThat(ResourceGrowth.findings(Map.of("prefill", leaking.subList(0, 5)))).as("too few samples to judge").isEmpty();
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
        return new ChaosReport(Map.of("transfer_backend", "mooncake"), outcomes, divergent, leaks, leaks(0, 0), leaks(0, 0), OptionalInt.of(0),
                OptionalDouble.empty(), java.util.Optional.empty(), Map.of("checksum_mismatch", 3L), true, 2.0, 10.0, Map.of(), List.of(), List.of(),
                List.of());
    }

    private static ChaosReport report(List<RequestOutcome> outcomes, Map<String, OptionalInt> held, Map<String, OptionalInt> unsettled, List<String> growth,
            List<ChaosKiller.Kill> kills, Map<String, List<ResourceSample>> resources)
    {
        return new ChaosReport(Map.of("transfer_backend", "mooncake"), outcomes, List.of(), leaks(0, 0), held, unsettled, OptionalInt.of(0),
                OptionalDouble.empty(), java.util.Optional.empty(), Map.of(), true, 2.0, 10.0, resources, growth, kills, List.of());
    }
}
