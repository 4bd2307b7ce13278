package io.handoff.dist;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.locks.LockSupport;
import java.util.stream.Stream;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A bad transfer is retried, not returned: one bit of a landed page flipped by a fault plan on the decode, caught by the
 * checksum before anything is streamed, retried by the router in a new room, and answered with the colocated output.
 */
class TransferRetryIT
{
    private static final String PROMPT = "Q: A crate holds 7 rows of 8 jars. How many jars? A: 7 * 8 = 56. The answer is 56.\n".repeat(3)
            + "Q: A shelf holds 5 rows of 9 cans. How many cans? A:";
    private static final String TCP = "-Dhandoff.plugins.mooncake.transport=tcp";

    @TempDir
    Path temp;

    @Test
    void oneFlippedBitInFlightIsCaughtRetriedInANewRoomAndTheStreamIsTheColocatedOutputCountedByCause()
            throws Exception
    {
        List<Integer> reference = Launcher.colocated(temp, List.of(PROMPT), 12).getFirst();
        // the first page the decode verifies, of the first room only, has one bit flipped before its check
        try (ServerProcess prefill = ServerProcess.serve(temp, "prefill", TCP);
                ServerProcess decode = ServerProcess.serve(temp, "decode", TCP, "-Dhandoff.debug.faults=[\"decode-before-verify corrupt=1\"]");
                ServerProcess router = router(prefill, decode)) {
            HttpResponse<Stream<String>> response = router.stream("/generate", body("flip-1", true));

            assertThat(response.statusCode()).isEqualTo(200);
            List<JsonNode> events = events(response);
            assertThat(events).noneMatch(event -> event.has("error"));
            assertThat(ServerProcess.outputIds(events.getLast())).isEqualTo(reference);
            assertThat(decode.logText()).contains("KV checksum mismatch on room page 0").contains("the transferred KV is corrupt");
            assertThat(router.metric("handoff_router_retries_total{cause=\"checksum_mismatch\"}")).isEqualTo(1);
            assertThat(router.metric("handoff_router_retries_total{cause=\"transport_failure\"}")).isZero();
            assertThat(decode.metric("handoff_disagg_rooms_total{outcome=\"success\"}")).isEqualTo(1);
            decode.awaitMetric("handoff_kv_pages{state=\"quarantined\"}", value -> value == 0);
            decode.assertNoPagesLeaked();
            prefill.assertNoPagesLeaked();
        }
    }

    @Test
    void aDecodeNeverStreamsATokenFromKvThatFailedItsCheckAndARetryThatFailsTooIsA502NamingTheCause()
            throws Exception
    {
        // every room the decode receives is corrupt: the first attempt and the retry both fail their check
        try (ServerProcess prefill = ServerProcess.serve(temp, "prefill", TCP);
                ServerProcess decode = ServerProcess.serve(temp, "decode", TCP, "-Dhandoff.debug.faults=[\"decode-before-verify corrupt\"]");
                ServerProcess router = router(prefill, decode)) {
            HttpResponse<String> response = router.post("/generate", body("flip-all", true));

            // a JSON error and not an event stream: the decode's first event was the failure, so nothing had gone to the client
            assertThat(response.statusCode()).as(response.body()).isEqualTo(502);
            assertThat(response.headers().firstValue("Content-Type").orElse("")).startsWith("application/json");
            JsonNode error = ServerProcess.json(response.body()).path("error");
            assertThat(error.path("code").asText()).isEqualTo("kv_transfer_failed");
            assertThat(error.path("cause").asText()).isEqualTo("checksum_mismatch");
            assertThat(error.path("message").asText()).contains("the KV transfer failed twice").contains("KV checksum mismatch");
            assertThat(router.metric("handoff_router_retries_total{cause=\"checksum_mismatch\"}")).isEqualTo(1);
            assertThat(decode.metric("handoff_generation_tokens_total")).isZero();
            decode.awaitMetric("handoff_kv_pages{state=\"quarantined\"}", value -> value == 0);
            decode.assertNoPagesLeaked();
        }
    }

    private ServerProcess router(ServerProcess prefill, ServerProcess decode)
            throws Exception
    {
        ServerProcess router = ServerProcess.launch(temp, "router", List.of("router", "--port", "0", "--prefill", "http://127.0.0.1:" + prefill.port,
                "--decode", "http://127.0.0.1:" + decode.port, "-Dhandoff.router.health-interval=200ms"));
        long deadline = System.nanoTime() + Duration.ofSeconds(60).toNanos();
        while (!healthy(router)) {
            if (System.nanoTime() > deadline) {
                throw new AssertionError("the router's servers did not become healthy: " + router.get("/backends").body() + "\n" + router.logText());
            }
            // waiting for other processes to come up: poll, bounded above
            LockSupport.parkNanos(50_000_000);
        }
        return router;
    }

    private static boolean healthy(ServerProcess router)
    {
        JsonNode health = ServerProcess.json(router.get("/health").body());
        return health.path("prefill").path("healthy").asInt() == 1 && health.path("decode").path("healthy").asInt() == 1;
    }

    private static String body(String rid, boolean stream)
    {
        ObjectNode body = ServerProcess.JSON.createObjectNode();
        body.put("text", PROMPT);
        body.put("rid", rid);
        body.put("stream", stream);
        ObjectNode sampling = body.putObject("sampling_params");
        sampling.put("max_new_tokens", 12);
        sampling.put("temperature", 0);
        sampling.put("ignore_eos", true);
        return body.toString();
    }

    private static List<JsonNode> events(HttpResponse<Stream<String>> response)
    {
        List<JsonNode> events = new ArrayList<>();
        response.body().filter(line -> line.startsWith("data: ") && !line.equals("data: [DONE]"))
                .forEach(line -> events.add(ServerProcess.json(line.substring("data: ".length()))));
        return events;
    }
}
