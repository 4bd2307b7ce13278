package io.handoff.dist;

import com.fasterxml.jackson.databind.JsonNode;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.locks.LockSupport;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * {@code bin/handoff bench serving} against a real 1P1D router with a real colocated server as --compare-url, all of the
 * built distribution on loopback: the JSON has every field with sane values, every request completed on both, the greedy
 * outputs are equal token for token, the router side has its KV-ready times from the timelines, and --out wrote the report.
 * Nothing here checks how fast anything was.
 */
class BenchServingIT
{
    @TempDir
    Path temp;

    @Test
    void benchServingComparesA1p1dRouterWithAColocatedServerAndTheirOutputsAreEqual()
            throws Exception
    {
        try (ServerProcess colocated = ServerProcess.start(temp);
                ServerProcess prefill = ServerProcess.serve(temp, "prefill");
                ServerProcess decode = ServerProcess.serve(temp, "decode");
                ServerProcess router = router(prefill, decode)) {
            Path out = temp.resolve("report");
            Launcher.Run run = Launcher.run(temp, "bench", "serving", "--url", url(router), "--compare-url", url(colocated), "--requests", "6",
                    "--concurrency", "2", "--max-new-tokens", "6", "--slo-ttft-ms", "600000", "--json", "--out", out.toString());

            assertThat(run.exitCode()).as(run.describe()).isZero();
            JsonNode json = ServerProcess.json(run.stdout());
            assertThat(json.get("url").asText()).isEqualTo(url(router));
            assertThat(json.get("compare_url").asText()).isEqualTo(url(colocated));
            assertThat(json.get("dataset").asText()).isEqualTo("shared-prefix");
            assertThat(json.get("requests").asInt()).isEqualTo(6);
            assertThat(json.get("concurrency").asInt()).isEqualTo(2);
            assertThat(json.get("model").get("vocab_reported").asBoolean()).isTrue();
            for (String side : List.of("url", "compare_url")) {
                JsonNode figures = json.get("results").get(side);
                assertThat(figures.get("completed").asInt()).as(side + ": " + figures.get("failures")).isEqualTo(6);
                assertThat(figures.get("failed").asInt()).isZero();
                for (String latency : List.of("ttft_ms", "itl_ms", "tpot_ms", "e2e_ms")) {
                    JsonNode d = figures.get(latency);
                    assertThat(d.get("p50").asDouble()).as(side + " " + latency).isPositive();
                    assertThat(d.get("p50").asDouble()).isLessThanOrEqualTo(d.get("p90").asDouble());
                    assertThat(d.get("p90").asDouble()).isLessThanOrEqualTo(d.get("p99").asDouble());
                    assertThat(d.get("mean").asDouble()).isPositive();
                }
                assertThat(figures.get("ttft_ms").get("p99").asDouble()).isLessThanOrEqualTo(figures.get("e2e_ms").get("p99").asDouble());
                assertThat(figures.get("request_throughput").asDouble()).isPositive();
                assertThat(figures.get("output_token_throughput").asDouble()).isCloseTo(6 * figures.get("request_throughput").asDouble(),
                        org.assertj.core.api.Assertions.within(0.01));
                assertThat(figures.get("input_token_throughput").asDouble()).isGreaterThan(1024 * figures.get("request_throughput").asDouble());
                // every request met a TTFT bound of ten minutes
                assertThat(figures.get("goodput").asDouble()).isCloseTo(figures.get("request_throughput").asDouble(),
                        org.assertj.core.api.Assertions.within(0.01));
            }
            JsonNode routed = json.get("results").get("url").get("kv_ready_after_last_forward_ms");
            assertThat(json.get("results").get("url").get("kv_ready_measured").asInt()).as(json.get("results").get("url").toString()).isEqualTo(6);
            assertThat(routed.get("p50").asDouble()).isGreaterThanOrEqualTo(0);
            assertThat(json.get("results").get("compare_url").get("kv_ready_after_last_forward_ms").isNull()).isTrue();
            assertThat(json.get("outputs_compared").asInt()).isEqualTo(6);
            assertThat(json.get("outputs_equal").asInt()).isEqualTo(6);
            for (String ratio : List.of("ttft_p50", "ttft_p99", "itl_p50", "itl_p99", "e2e_p50", "request_throughput")) {
                assertThat(json.get("ratios").get(ratio).asDouble()).as(ratio).isPositive();
            }
            assertThat(Files.readString(out.resolve("report.html"))).contains("<svg", "TTFT distribution", "ITL distribution");
            assertThat(ServerProcess.json(Files.readString(out.resolve("report.json"))).get("result").get("outputs_equal").asInt()).isEqualTo(6);
            // --json with stderr not a terminal: no progress, the one JSON object alone on stdout
            assertThat(run.stderr()).doesNotContain("requests  failed");
        }
    }

    private static String url(ServerProcess process)
    {
        return "http://127.0.0.1:" + process.port;
    }

    private ServerProcess router(ServerProcess prefill, ServerProcess decode)
            throws Exception
    {
        ServerProcess router = ServerProcess.launch(temp, "router", List.of("router", "--port", "0", "--prefill", url(prefill), "--decode", url(decode),
                "-Dhandoff.router.health-interval=200ms", "-Dhandoff.router.health-timeout=1s"));
        long deadline = System.nanoTime() + Duration.ofSeconds(60).toNanos();
        while (true) {
            int healthy = 0;
            for (JsonNode backend : ServerProcess.json(router.get("/backends").body())) {
                healthy += backend.get("healthy").asBoolean() ? 1 : 0;
            }
            if (healthy == 2) {
                return router;
            }
            if (System.nanoTime() > deadline) {
                throw new AssertionError("router backends not healthy: " + router.get("/backends").body() + "\n" + router.logText());
            }
            LockSupport.parkNanos(50_000_000);
        }
    }
}
