package io.handoff.dist;

import com.fasterxml.jackson.databind.JsonNode;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.locks.LockSupport;

import static org.assertj.core.api.Assertions.assertThat;

/** Prefills, decodes and a router as processes of the built distribution: the router's pairing and failover. */
class RouterIT
{
    private static final String PREFIX = "Q: A box holds 4 red and 6 blue balls. How many balls? A: 4 + 6 = 10. The answer is 10.\n".repeat(3);

    @TempDir
    Path temp;

    @Test
    void twoPrefillsAndOneDecodeGiveTheColocatedOutputAndShareTheWork()
            throws Exception
    {
        List<String> prompts = prompts(6);
        List<List<Integer>> reference = Launcher.colocated(temp, prompts, 10);
        try (ServerProcess first = ServerProcess.serve(temp, "prefill");
                ServerProcess second = ServerProcess.serve(temp, "prefill");
                ServerProcess decode = ServerProcess.serve(temp, "decode");
                ServerProcess router = router(List.of(first, second), List.of(decode))) {
            assertThat(generateAll(router, prompts)).isEqualTo(reference);
            assertThat(first.metric("handoff_disagg_rooms_total{outcome=\"success\"}")).isPositive();
            assertThat(second.metric("handoff_disagg_rooms_total{outcome=\"success\"}")).isPositive();
            first.assertNoPagesLeaked();
            second.assertNoPagesLeaked();
            decode.assertNoPagesLeaked();
        }
    }

    @Test
    void onePrefillAndTwoDecodesGiveTheColocatedOutput()
            throws Exception
    {
        List<String> prompts = prompts(6);
        List<List<Integer>> reference = Launcher.colocated(temp, prompts, 10);
        try (ServerProcess prefill = ServerProcess.serve(temp, "prefill");
                ServerProcess first = ServerProcess.serve(temp, "decode");
                ServerProcess second = ServerProcess.serve(temp, "decode");
                ServerProcess router = router(List.of(prefill), List.of(first, second))) {
            assertThat(generateAll(router, prompts)).isEqualTo(reference);
            assertThat(first.metric("handoff_disagg_rooms_total{outcome=\"success\"}")
                    + second.metric("handoff_disagg_rooms_total{outcome=\"success\"}")).isEqualTo(prompts.size());
            // The router's /health_generate: one token generated on a prefill and on a decode.
            var healthGenerate = router.get("/health_generate");
            assertThat(healthGenerate.statusCode()).as(healthGenerate.body()).isEqualTo(200);
            assertThat(ServerProcess.json(healthGenerate.body()).path("decode").path("answer").path("status").asText()).isEqualTo("ok");
            prefill.assertNoPagesLeaked();
            first.assertNoPagesLeaked();
            second.assertNoPagesLeaked();
        }
    }

    @Test
    void aRequestWhosePrefillIsKilledMidTransferIsRetriedOnTheOtherAndTheRouterKeepsServingWithIt()
            throws Exception
    {
        List<String> prompts = prompts(3);
        List<String> all = new ArrayList<>(prompts);
        all.add("Q: stuck? A:");
        List<List<Integer>> reference = Launcher.colocated(temp, all, 10);
        // the first prefill's transfer thread parks after the first page of every room: killed there, it dies mid-transfer
        try (ServerProcess doomed = ServerProcess.serve(temp, "prefill", "-Dhandoff.debug.faults=[\"transfer-after-page b=0 park\"]");
                ServerProcess survivor = ServerProcess.serve(temp, "prefill");
                ServerProcess decode = ServerProcess.serve(temp, "decode", "-Dhandoff.disaggregation.peer-timeout=3s");
                ServerProcess router = router(List.of(doomed, survivor), List.of(decode))) {
            // round-robin starts with the first prefill
            CompletableFuture<HttpResponse<String>> stuck = CompletableFuture.supplyAsync(() -> router.post("/generate", body("Q: stuck? A:")));
            doomed.awaitMetric("handoff_generation_tokens_total", value -> value >= 1);

            doomed.process.destroyForcibly().waitFor();
            HttpResponse<String> retried = stuck.get();

            // the lost transfer is retried once, in a new room, on the other prefill
            assertThat(retried.statusCode()).as(retried.body()).isEqualTo(200);
            assertThat(ServerProcess.outputIds(ServerProcess.json(retried.body()))).isEqualTo(reference.getLast());
            assertThat(router.metric("handoff_router_retries_total{cause=\"peer_lost\"}")
                    + router.metric("handoff_router_retries_total{cause=\"transport_failure\"}")).isEqualTo(1);
            awaitUnhealthy(router, doomed);
            List<List<Integer>> after = generateAll(router, prompts);
            assertThat(after).isEqualTo(reference.subList(0, prompts.size()));
            decode.awaitMetric("handoff_kv_pages{state=\"quarantined\"}", value -> value == 0);
            decode.assertNoPagesLeaked();
            survivor.assertNoPagesLeaked();
        }
    }

    // ---------------------------------------------------------------------------------------------

    /** Prefills round-robin: what these tests (the work shared by both prefills, a retry on the other) are about. */
    private ServerProcess router(List<ServerProcess> prefills, List<ServerProcess> decodes)
            throws Exception
    {
        return ServerProcess.router(temp, prefills, decodes, "-Dhandoff.router.policy.prefill=round-robin");
    }

    private static void awaitUnhealthy(ServerProcess router, ServerProcess backend)
    {
        String url = "http://127.0.0.1:" + backend.port;
        long deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos();
        while (true) {
            for (JsonNode entry : ServerProcess.json(router.get("/backends").body())) {
                if (entry.get("url").asText().equals(url) && !entry.get("healthy").asBoolean()) {
                    return;
                }
            }
            if (System.nanoTime() > deadline) {
                throw new AssertionError(url + " still healthy: " + router.get("/backends").body());
            }
            LockSupport.parkNanos(50_000_000);
        }
    }

    private static List<String> prompts(int count)
    {
        List<String> prompts = new ArrayList<>();
        for (int i = 0; i < count; i++) {
            prompts.add(PREFIX + "Q: How many balls are in box " + i + "? A:");
        }
        return prompts;
    }

    private static String body(String prompt)
    {
        return ServerProcess.greedyBody(prompt, 10);
    }

    /** Sends every prompt through the router concurrently and returns the outputs in prompt order. */
    private static List<List<Integer>> generateAll(ServerProcess router, List<String> prompts)
    {
        List<CompletableFuture<HttpResponse<String>>> responses = new ArrayList<>();
        for (String prompt : prompts) {
            responses.add(CompletableFuture.supplyAsync(() -> router.post("/generate", body(prompt))));
        }
        List<List<Integer>> outputs = new ArrayList<>();
        for (CompletableFuture<HttpResponse<String>> response : responses) {
            HttpResponse<String> answer = response.join();
            assertThat(answer.statusCode()).as(answer.body()).isEqualTo(200);
            outputs.add(ServerProcess.outputIds(ServerProcess.json(answer.body())));
        }
        return outputs;
    }
}
