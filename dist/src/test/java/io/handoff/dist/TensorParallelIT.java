package io.handoff.dist;

import com.fasterxml.jackson.databind.JsonNode;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A tensor-parallel server of real rank processes loses rank 1 at each phase of a request's life: idle (killed), in the
 * middle of a prefill and in the middle of a decode (a fault rule ends it after a layer of a known step), and stuck in a
 * decode (parked there, its heartbeats still coming: the step timeout finds it). Every time
 * the request in flight ends with an error naming the lost rank and cause {@code rank_lost} (none hangs), the leader
 * holds no KV page, and /health answers 503 naming rank 1, with the ranks and their pids.
 */
class TensorParallelIT
{
    @TempDir
    Path temp;

    private static final List<String> PROMPTS = List.of("The capital of France is", "Once upon a time there was a", "1, 2, 3, 4,",
            "A shelf holds 5 rows of 9 cans. How many cans? A:");

    /**
     * Data-parallel attention spreads the requests of one batch over the ranks (each attends for its own with every head,
     * the MoE layers split over all): the ids are the single rank's, on the preset and on a DeepSeek V3 checkpoint with
     * its experts spread over the ranks.
     */
    @ParameterizedTest(name = "{0}")
    @CsvSource({"tiny-mla", "deepseek-v3"})
    void dataParallelAttentionComputesTheSingleRanksIds(String model)
            throws Exception
    {
        String[] source = {"--model", "tiny-mla"};
        if (model.equals("deepseek-v3")) {
            Path directory = temp.resolve("tiny-deepseek-v3");
            io.handoff.testkit.model.SeededDeepseekCheckpoint.write(directory, io.handoff.testkit.model.SeededDeepseekCheckpoint.Options.v3(16L));
            source = new String[] {"--model-path", directory.toString()};
        }
        List<List<Integer>> one = Launcher.colocated(temp, PROMPTS, 12, source);
        for (String ranks : List.of("2", "4")) {
            String[] args = java.util.Arrays.copyOf(source, source.length + 2);
            args[source.length] = "--data-parallel";
            args[source.length + 1] = ranks;
            assertThat(Launcher.colocated(temp, PROMPTS, 12, args)).as("%s ranks", ranks).isEqualTo(one);
        }
    }

    @ParameterizedTest(name = "{0}")
    @CsvSource({
            "idle,",
            "mid-prefill,rank-after-layer a=1 b=1 fail",
            "mid-decode,rank-after-layer a=4 b=2 fail",
            "stalled mid-decode,rank-after-layer a=3 b=1 park"})
    void aLostRankFailsTheRequestWithItsCauseLeaksNoPageAndMakesTheServerUnhealthy(String phase, String fault)
            throws Exception
    {
        List<String> args = new ArrayList<>(List.of("--model", "tiny-gqa", "--tensor-parallel", "2", "-Dhandoff.kv.pool-pages=256",
                "-Dhandoff.parallel.heartbeat-timeout=5s", "-Dhandoff.parallel.step-timeout=3s"));
        if (fault != null) {
            args.add("-Dhandoff.debug.faults=[\"" + fault + "\"]");
        }
        try (ServerProcess server = ServerProcess.start(temp, args.toArray(String[]::new))) {
            JsonNode health = ServerProcess.json(server.get("/health").body());
            assertThat(health.get("ranks")).hasSize(2);
            long rank1 = health.get("ranks").get(1).get("pid").asLong();
            assertThat(rank1).isPositive().isNotEqualTo(server.process.pid());
            if (fault == null) {
                ProcessHandle.of(rank1).orElseThrow().destroyForcibly();
                server.awaitUnhealthy();
            }
            HttpResponse<String> response = server.post("/generate", ServerProcess.greedyBody("Once upon a time", 16));
            JsonNode result = ServerProcess.json(response.body());
            assertThat(response.body()).as(phase).contains("rank 1 lost");
            assertThat(server.metric("handoff_request_failures_total{cause=\"rank_lost\"}")).as(phase).isGreaterThanOrEqualTo(1);
            assertThat(result.toString()).doesNotContain("\"finish_reason\":{\"type\":\"length\"");
            server.awaitUnhealthy();
            JsonNode unhealthy = ServerProcess.json(server.get("/health").body());
            assertThat(unhealthy.get("ranks").get(1).get("healthy").asBoolean()).isFalse();
            assertThat(unhealthy.get("error").asText()).contains("rank 1 lost");
            server.awaitNothingInFlight();
            server.assertNoPagesLeaked();
        }
    }

}
