package io.handoff.dist;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.CompletableFuture;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The field scenario of seed 003 with the stalled prefill killed instead of let go, on real processes: P1's transfer
 * parks after the first page of request A; the decode aborts A; B (prefilled by P2) needs A's pages; every room
 * deadline and the drain deadline pass, so the decode marks P1 suspect and its {@code /health} says so; A's pages stay
 * quarantined and B waits. Killing P1 is the proof (its exit, on this host): A's pages come back and B is bit-identical
 * to the colocated engine.
 */
class KilledPrefillReleaseIT
{
    private static final String PROMPT_A = "The first request is aborted while its prefill is stuck in a write. ".repeat(3);
    private static final String PROMPT_B = "The second request must never read the first one's stale KV pages. ".repeat(3);
    private static final int NEW_TOKENS = 8;

    @TempDir
    Path temp;

    @ParameterizedTest(name = "{0} {2}")
    @CsvSource({"mooncake, handoff.plugins.mooncake.transport, shm", "mori, handoff.plugins.mori.forward-sync, true",
            "nixl, handoff.plugins.nixl.tls, 'posix,self'"})
    void killingTheStalledPrefillIsTheProofThatReleasesThePagesTheNextRequestNeeds(String backend, String key, String value)
            throws Exception
    {
        Ucx.assumeLoadableFor(backend);
        String[] common = {"-Dhandoff.disaggregation.transfer-backend=" + backend, "-D" + key + "=" + value,
                "-Dhandoff.scheduler.chunked-prefill-size=64", "-Dhandoff.disaggregation.bootstrapping-timeout=5s",
                "-Dhandoff.disaggregation.waiting-for-input-timeout=5s", "-Dhandoff.disaggregation.transferring-timeout=5s",
                "-Dhandoff.disaggregation.drain-deadline=6s"};
        List<Integer> reference = Launcher.colocated(temp, List.of(PROMPT_B), NEW_TOKENS, common).getFirst();
        try (ServerProcess p1 = ServerProcess.serve(temp, "prefill", with(common, "-Dhandoff.debug.faults=[\"transfer-after-page b=0 park\"]"));
                // B's prefill half reaches P2 only once the decode can run B, past the 5 s deadlines above; a decode's claim
                // waits that long for its request on a prefill, so P2's bootstrapping deadline is the test's patience
                ServerProcess p2 = ServerProcess.serve(temp, "prefill", patient(common));
                // room for one request of these prompts: B can only get A's pages
                ServerProcess decode = ServerProcess.serve(temp, "decode", with(common, "-Dhandoff.kv.pool-pages=20"))) {
            String control1 = control(p1);
            String control2 = control(p2);

            CompletableFuture<HttpResponse<String>> a = CompletableFuture.supplyAsync(() -> decode.post("/generate", body("a", 1, PROMPT_A, control1)));
            // P1 answers A only once A's transfers drained: never, while its write is parked
            CompletableFuture.runAsync(() -> p1.post("/generate", body("a", 1, PROMPT_A, null)));
            decode.awaitMetric("handoff_kv_pages{state=\"receiving\"}", v -> v > 0);
            // P1 sampled A's first token: its chunks are posted and its transfer thread is parked on the first page
            p1.awaitMetric("handoff_generation_tokens_total", v -> v >= 1);
            assertThat(decode.post("/abort_request", "{\"rid\": \"a\"}").statusCode()).isEqualTo(200);
            a.get();
            double quarantined = decode.metric("handoff_kv_pages{state=\"quarantined\"}");
            assertThat(quarantined).isPositive();

            CompletableFuture<HttpResponse<String>> b = CompletableFuture.supplyAsync(() -> decode.post("/generate", body("b", 2, PROMPT_B, control2)));
            decode.awaitMetric("handoff_waiting_requests", v -> v == 1);
            decode.awaitMetric("handoff_suspect_peers", v -> v == 1);
            JsonNode health = ServerProcess.json(decode.get("/health").body());
            assertThat(health.path("suspect_peers").toString()).isEqualTo("[\"" + control1 + "\"]");
            assertThat(decode.metric("handoff_kv_pages{state=\"quarantined\"}")).as("no deadline releases a page").isEqualTo(quarantined);
            assertThat(b).isNotDone();

            p1.process.destroyForcibly().waitFor();
            decode.awaitMetric("handoff_kv_pages{state=\"quarantined\"}", v -> v == 0);
            decode.awaitMetric("handoff_suspect_peers", v -> v == 0);
            CompletableFuture<HttpResponse<String>> prefillHalf = CompletableFuture.supplyAsync(() -> p2.post("/generate", body("b", 2, PROMPT_B, null)));
            HttpResponse<String> served = b.get();
            HttpResponse<String> prefillB = prefillHalf.get();

            assertThat(served.statusCode()).as(served.body()).isEqualTo(200);
            assertThat(prefillB.statusCode()).as(prefillB.body()).isEqualTo(200);
            assertThat(ServerProcess.outputIds(ServerProcess.json(served.body()))).isEqualTo(reference);
            assertThat(decode.metric("handoff_request_failures_total{cause=\"client_abort\"}")).isEqualTo(1);
            assertThat(decode.metric("handoff_kv_quarantine_longest_seconds")).isGreaterThan(6);
            decode.assertNoPagesLeaked();
        }
    }

    /** A request as the router sends it: the decode's half names its prefill's control endpoint. */
    private static String body(String rid, long room, String prompt, String control)
    {
        ObjectNode body = ServerProcess.JSON.createObjectNode();
        body.put("text", prompt);
        ObjectNode sampling = body.putObject("sampling_params");
        sampling.put("max_new_tokens", control == null ? 1 : NEW_TOKENS);
        sampling.put("temperature", 0);
        sampling.put("ignore_eos", true);
        body.put("rid", rid);
        body.put("bootstrap_room", room);
        body.put("bootstrap_generation", 0);
        if (control != null) {
            body.put("bootstrap_host", control);
        }
        return body.toString();
    }

    private static String control(ServerProcess prefill)
    {
        return ServerProcess.json(prefill.get("/bootstrap").body()).get("control").asText();
    }

    private static String[] patient(String[] options)
    {
        return java.util.Arrays.stream(options).map(option -> option.startsWith("-Dhandoff.disaggregation.bootstrapping-timeout=")
                ? "-Dhandoff.disaggregation.bootstrapping-timeout=120s" : option).toArray(String[]::new);
    }

    private static String[] with(String[] options, String more)
    {
        String[] all = java.util.Arrays.copyOf(options, options.length + 1);
        all[options.length] = more;
        return all;
    }
}
