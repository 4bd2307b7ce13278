package io.handoff.router;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.List;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The SLO planner in a router: it reads what its servers' health polls report, and carries a decision out with
 * {@code POST /admin/role} on the server; {@code GET /debug/planner} lists the decisions.
 */
class PlannerLoopTest
{
    private static final ObjectMapper JSON = new ObjectMapper();

    @Test
    void promptsThatWaitWhileTokensFlowTurnTheLeastLoadedDecodeIntoAPrefill()
            throws Exception
    {
        RouterConfig config = RouterFixture.config(Duration.ofSeconds(5), Map.of("handoff.router.planner", "slo",
                "handoff.router.planner-interval", "50ms", "handoff.router.planner-hysteresis", "2", "handoff.router.planner-cooldown", "1h",
                "handoff.router.planner-ttft-target", "1s", "handoff.router.planner-itl-target", "100ms"));
        try (RouterFixture fixture = RouterFixture.start(1, 2, config)) {
            FakeBackend busy = fixture.decodes.get(0);
            FakeBackend idle = fixture.decodes.get(1);
            busy.load = load(0, 6, 3.0, 0.02);
            idle.load = load(0, 1, 2.5, 0.03);
            fixture.prefill().load = load(9, 1, -1, -1);
            fixture.poll();

            long deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos();
            while (idle.rolesAsked.isEmpty() && System.nanoTime() < deadline) {
                Thread.sleep(20); // waiting for the planner's looks (every 50 ms), bounded: not provoking a race
            }
            assertThat(idle.rolesAsked).containsExactly("prefill");
            assertThat(busy.rolesAsked).isEmpty();
            assertThat(fixture.prefill().rolesAsked).isEmpty();

            JsonNode shown = JSON.readTree(fixture.get("/debug/planner").body());
            assertThat(shown.path("planner").asText()).isEqualTo("slo");
            List<JsonNode> switches = new java.util.ArrayList<>();
            shown.path("decisions").forEach(decision -> {
                if (decision.path("action").asText().equals("switch")) {
                    switches.add(decision);
                }
            });
            assertThat(switches).singleElement().satisfies(decision -> {
                assertThat(decision.path("to").asText()).isEqualTo("prefill");
                assertThat(decision.path("reason").asText()).contains("TTFT p90 3.000 s").contains("prompts wait, decodes have room");
            });
        }
    }

    private static ObjectNode load(int waiting, int running, double ttft, double itl)
    {
        ObjectNode load = JSON.createObjectNode().put("waiting", waiting).put("running", running);
        if (ttft >= 0) {
            load.put("ttft_p90_seconds", ttft).put("itl_p90_seconds", itl);
        }
        return load;
    }
}
