package io.handoff.dist;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A prefill and a decode as separate processes of the built distribution, talking to each other on
 * loopback: the decode's output must equal the colocated engine's to the bit, with no page left behind,
 * and a broken pairing must fail loudly and promptly.
 */
class DisaggregationIT
{
    private static final String SHARED_PREFIX = "Q: Tom has 3 apples and buys 5 more. How many apples does he have? A: 3 + 5 = 8. The answer is 8.\n"
            .repeat(3);
    private static final AtomicLong ROOMS = new AtomicLong(1_000);

    @TempDir
    Path temp;

    @ParameterizedTest
    @CsvSource({
            "mooncake, handoff.plugins.mooncake.transport, tcp, tiny-mla",
            "mooncake, handoff.plugins.mooncake.transport, shm, tiny-mla",
            "mooncake, handoff.plugins.mooncake.transport, tcp, tiny-gqa",
            "mooncake, handoff.plugins.mooncake.transport, shm, tiny-gqa",
            "nixl, handoff.plugins.nixl.tls, tcp, tiny-mla",
            "nixl, handoff.plugins.nixl.tls, 'posix,self', tiny-mla"})
    void decodeOutputEqualsTheColocatedEngineBitForBit(String backend, String transportKey, String transport, String model)
            throws Exception
    {
        // The decode-metadata probe checks every decode step over the transferred KV (I3); it must find nothing. The
        // claim timeout is long: the first room's claim follows the link's handshake, which a loaded machine can slow.
        String[] options = {"-Dhandoff.disaggregation.transfer-backend=" + backend, "-D" + transportKey + "=" + transport,
                "-Dhandoff.model.name=" + model, "-Dhandoff.scheduler.chunked-prefill-size=64", "-Dhandoff.debug.decode-metadata-probe=check",
                "-Dhandoff.disaggregation.claim-timeout=60s"};
        List<String> prompts = new ArrayList<>();
        for (int i = 0; i < 4; i++) {
            prompts.add(SHARED_PREFIX + "Q: Question " + i + " of the batch? A:");
        }
        List<List<Integer>> reference = Launcher.colocated(temp, prompts, 12, options);
        try (ServerProcess prefill = ServerProcess.serve(temp, "prefill", options);
                ServerProcess decode = ServerProcess.serve(temp, "decode", options)) {
            String control = ServerProcess.json(prefill.get("/bootstrap").body()).get("control").asText();
            // The first room also opens the decode's link to the prefill (handshake, region registration). Open it
            // first, with an unrelated prompt, so that the rooms below are ready while their chunks' forwards run.
            generate(prefill, decode, control, "warm up the link", 1);
            List<List<Integer>> outputs = new ArrayList<>();
            for (String prompt : prompts) {
                outputs.add(ServerProcess.outputIds(generate(prefill, decode, control, prompt, 12)));
            }

            assertThat(outputs).isEqualTo(reference);
            Set<Integer> distinct = new HashSet<>();
            outputs.forEach(distinct::addAll);
            assertThat(distinct).as("distinct output tokens").hasSizeGreaterThanOrEqualTo(4);
            JsonNode bootstrap = ServerProcess.json(decode.get("/bootstrap").body());
            if (backend.equals("mooncake")) {
                assertThat(bootstrap.get("transport").asText()).isEqualTo(transport);
            }
            assertThat(prefill.metric("handoff_kv_transfer_early_bytes_total")).as("early send fired").isPositive();
            // a room is counted just after its last record is sent, which the client's answer need not wait for
            prefill.awaitMetric("handoff_disagg_rooms_total{outcome=\"success\"}", value -> value == prompts.size() + 1);
            assertThat(prefill.metric("handoff_kv_transfer_bytes_total")).isPositive();
            prefill.assertNoPagesLeaked();
            decode.assertNoPagesLeaked();
        }
    }

    /**
     * The decode runs one request at a time, and each of its steps takes at least 50 ms (a fault-plan delay), so a
     * second request waits in its queue for the whole of the first one's 100 tokens: at least 5 s, well past the
     * prefill's 3 s claim timeout. The decode claims the second room when it receives the request, so the prefill waits
     * for its page list instead of failing it as unclaimed, and its output is the colocated engine's to the bit.
     */
    @Test
    void aRequestQueuedOnAFullDecodeLongerThanTheClaimTimeoutIsServedBitExact()
            throws Exception
    {
        String[] model = {"-Dhandoff.model.name=tiny-mla"};
        List<String> prompts = List.of(SHARED_PREFIX + "Q: the first, long request? A:", SHARED_PREFIX + "Q: the queued one? A:");
        List<List<Integer>> reference = Launcher.colocated(temp, prompts, 100, model);
        try (ServerProcess prefill = ServerProcess.serve(temp, "prefill", "-Dhandoff.model.name=tiny-mla",
                "-Dhandoff.disaggregation.claim-timeout=3s");
                ServerProcess decode = ServerProcess.serve(temp, "decode", "-Dhandoff.model.name=tiny-mla",
                        "-Dhandoff.scheduler.max-running-requests=1", "-Dhandoff.debug.faults=[\"scheduler-before-step delay=50ms\"]")) {
            String control = ServerProcess.json(prefill.get("/bootstrap").body()).get("control").asText();
            // The first room opens the decode's link (handshake, region registration); on a loaded machine that may outlast
            // the claim timeout, and then that room fails at once on both sides: open the link until a room gets through.
            int warmUps = 1;
            while (generateResponse(prefill, decode, control, "warm up the link", 1).statusCode() != 200) {
                assertThat(++warmUps).as("warm-up rooms").isLessThanOrEqualTo(3);
            }
            double unclaimedBefore = prefill.metric("handoff_request_failures_total{cause=\"room_unclaimed\"}");

            CompletableFuture<JsonNode> first = CompletableFuture.supplyAsync(() -> generate(prefill, decode, control, prompts.get(0), 100));
            decode.awaitMetric("handoff_running_requests", value -> value == 1);
            long queuedAt = System.nanoTime();
            CompletableFuture<JsonNode> queued = CompletableFuture.supplyAsync(() -> generate(prefill, decode, control, prompts.get(1), 100));
            decode.awaitMetric("handoff_waiting_requests", value -> value == 1);

            List<List<Integer>> outputs = List.of(ServerProcess.outputIds(first.get()), ServerProcess.outputIds(queued.get()));
            Duration waited = Duration.ofNanos(System.nanoTime() - queuedAt);

            assertThat(outputs).isEqualTo(reference);
            // queued behind the first request's 100 steps of at least 50 ms each, then its own 100
            assertThat(waited).as("the queued request's time on the decode").isGreaterThan(Duration.ofSeconds(8));
            assertThat(prefill.metric("handoff_request_failures_total{cause=\"room_unclaimed\"}")).isEqualTo(unclaimedBefore);
            prefill.awaitMetric("handoff_disagg_rooms_total{outcome=\"success\"}", value -> value == 3);
            prefill.assertNoPagesLeaked();
            decode.assertNoPagesLeaked();
        }
    }

    @Test
    void aPageSizeMismatchIsRefusedAtTheHandshakeNamingBothValues()
            throws Exception
    {
        try (ServerProcess prefill = ServerProcess.serve(temp, "prefill", "-Dhandoff.kv.page-size=16");
                ServerProcess decode = ServerProcess.serve(temp, "decode", "-Dhandoff.kv.page-size=32")) {
            String control = ServerProcess.json(prefill.get("/bootstrap").body()).get("control").asText();

            HttpResponse<String> response = generateResponse(prefill, decode, control, SHARED_PREFIX, 4);

            assertThat(response.statusCode()).as(response.body()).isGreaterThanOrEqualTo(400);
            assertThat(response.body()).contains("page size is '16' here but '32' on the peer");
            decode.assertNoPagesLeaked();
        }
    }

    @Test
    void aModelMismatchIsRefusedAtTheHandshakeNamingBothValues()
            throws Exception
    {
        try (ServerProcess prefill = ServerProcess.serve(temp, "prefill", "-Dhandoff.model.name=tiny-mla");
                ServerProcess decode = ServerProcess.serve(temp, "decode", "-Dhandoff.model.name=tiny-gqa")) {
            String control = ServerProcess.json(prefill.get("/bootstrap").body()).get("control").asText();

            HttpResponse<String> response = generateResponse(prefill, decode, control, SHARED_PREFIX, 4);

            assertThat(response.statusCode()).as(response.body()).isGreaterThanOrEqualTo(400);
            assertThat(response.body()).contains("tiny-mla").contains("tiny-gqa");
        }
    }

    @Test
    void killingThePrefillMidTransferFailsTheRoomPromptlyAndFreesTheDecodesPages()
            throws Exception
    {
        // The prefill's transfer thread parks after the first page of every room: killed there, it dies mid-transfer.
        try (ServerProcess prefill = ServerProcess.serve(temp, "prefill", "-Dhandoff.debug.faults=[\"transfer-after-page b=0 park\"]",
                "-Dhandoff.plugins.mooncake.transport=shm");
                ServerProcess decode = ServerProcess.serve(temp, "decode", "-Dhandoff.disaggregation.peer-timeout=3s",
                        "-Dhandoff.plugins.mooncake.transport=shm")) {
            String control = ServerProcess.json(prefill.get("/bootstrap").body()).get("control").asText();
            CompletableFuture<HttpResponse<String>> pending = CompletableFuture.supplyAsync(
                    () -> generateResponse(prefill, decode, control, SHARED_PREFIX + "Q: and then? A:", 8));
            decode.awaitMetric("handoff_kv_pages{state=\"receiving\"}", value -> value > 0);
            // the prefill sampled the first token: its last chunk is posted and its transfer thread parks on the first page
            prefill.awaitMetric("handoff_generation_tokens_total", value -> value >= 1);
            long killedAt = System.nanoTime();

            prefill.process.destroyForcibly().waitFor();
            HttpResponse<String> response = pending.get();

            assertThat(Duration.ofNanos(System.nanoTime() - killedAt)).isLessThan(Duration.ofSeconds(10));
            assertThat(response.statusCode()).as(response.body()).isGreaterThanOrEqualTo(500);
            assertThat(response.body()).contains("prefill");
            // shared memory is one-sided: the pages come back only once the prefill's exit fences it
            decode.awaitMetric("handoff_kv_pages{state=\"quarantined\"}", value -> value == 0);
            decode.assertNoPagesLeaked();
        }
    }

    // ---------------------------------------------------------------------------------------------

    /** What the router does: the same request to both sides, the decode told where the prefill is. */
    private static JsonNode generate(ServerProcess prefill, ServerProcess decode, String control, String prompt, int maxNewTokens)
    {
        HttpResponse<String> response = generateResponse(prefill, decode, control, prompt, maxNewTokens);
        assertThat(response.statusCode()).as(response.body()).isEqualTo(200);
        return ServerProcess.json(response.body());
    }

    static HttpResponse<String> generateResponse(ServerProcess prefill, ServerProcess decode, String control, String prompt,
            int maxNewTokens)
    {
        ObjectNode body = ServerProcess.JSON.createObjectNode();
        body.put("text", prompt);
        ObjectNode sampling = body.putObject("sampling_params");
        sampling.put("max_new_tokens", maxNewTokens);
        sampling.put("temperature", 0);
        sampling.put("ignore_eos", true);
        body.put("rid", "it-" + ROOMS.get());
        body.put("bootstrap_room", ROOMS.incrementAndGet());
        body.put("bootstrap_generation", 0);
        CompletableFuture<HttpResponse<String>> prefillSide = CompletableFuture.supplyAsync(() -> prefill.post("/generate", body.toString()));
        ObjectNode decodeBody = body.deepCopy();
        decodeBody.put("bootstrap_host", control);
        HttpResponse<String> response = decode.post("/generate", decodeBody.toString());
        if (response.statusCode() != 200 && prefill.process.isAlive()) {
            // as the router does: a failed decode aborts the prefill's half
            prefill.post("/abort_request", "{\"rid\": \"" + body.get("rid").asText() + "\"}");
        }
        try {
            prefillSide.get();
        }
        catch (Exception e) {
            // the prefill may be gone (killed by the test); the decode's answer is what counts
        }
        return response;
    }
}
