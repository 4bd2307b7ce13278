package io.handoff.dist;

import com.fasterxml.jackson.databind.JsonNode;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.locks.LockSupport;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A prefill, a decode and a router of the built distribution with default settings on loopback (where debug endpoints are
 * on by default), one request through them, then {@code bin/handoff inspect}: one timeline with every node's events in
 * causal order, and the decode's checksums verified.
 */
class InspectIT
{
    @TempDir
    Path temp;

    @Test
    void inspectMergesTheRoutersThePrefillsAndTheDecodesTimelinesInOrderWithTheKvVerified()
            throws Exception
    {
        try (ServerProcess prefill = ServerProcess.serve(temp, "prefill");
                ServerProcess decode = ServerProcess.serve(temp, "decode");
                ServerProcess router = router(prefill, decode)) {
            HttpResponse<String> generated = router.post("/generate",
                    "{\"rid\": \"inspect-it\", \"text\": \"The quick brown fox\", \"sampling_params\": {\"max_new_tokens\": 8, \"temperature\": 0}}");
            assertThat(generated.statusCode()).as(generated.body()).isEqualTo(200);
            String[] urls = {url(router), url(prefill), url(decode)};

            Launcher.Run json = Launcher.run(temp, args(List.of("--json", "--rid", "inspect-it"), urls));
            assertThat(json.exitCode()).as(json.describe()).isZero();
            JsonNode merged = ServerProcess.json(json.stdout());
            assertThat(merged.get("nodes")).extracting(node -> node.get("role").asText()).containsExactly("router", "prefill", "decode");
            List<String> events = new ArrayList<>();
            long previous = -1;
            for (JsonNode event : merged.get("events")) {
                events.add(event.get("role").asText() + ":" + event.get("event").asText());
                assertThat(event.get("offset_us").asLong()).isGreaterThanOrEqualTo(previous);
                previous = event.get("offset_us").asLong();
            }
            // each step below is caused by the one before it (a message, a response, or the same node's order)
            assertThat(events).containsSubsequence("router:received", "router:paired", "router:sent", "prefill:queued", "prefill:admitted",
                    "prefill:forward_done", "prefill:plan_posted", "prefill:plan_landed", "decode:chunk_landed", "decode:checksums_verified",
                    "decode:commit", "decode:first_token", "decode:done", "router:routed");
            assertThat(events).contains("decode:bootstrap", "prefill:bootstrap", "prefill:aux_sent", "prefill:done", "router:response");
            assertThat(merged.get("kv").get("status").asText()).isEqualTo("verified");
            assertThat(merged.get("transfer").get("bytes_landed").asLong()).isPositive();
            assertThat(merged.get("phases")).extracting(phase -> phase.get("name").asText())
                    .contains("queue", "prefill compute", "transfer", "commit", "commit to first token", "decode");
            assertThat(merged.has("clock_note")).as("one host").isFalse();

            Launcher.Run text = Launcher.run(temp, args(List.of("--rid", "inspect-it"), urls));
            assertThat(text.exitCode()).as(text.describe()).isZero();
            assertThat(text.stdout()).startsWith("request inspect-it: ").contains("where the time went:", "KV: verified: ");
            assertThat(text.stdout().lines()).hasSizeGreaterThan(events.size());

            Launcher.Run unknown = Launcher.run(temp, args(List.of("--rid", "never-sent"), url(prefill)));
            assertThat(unknown.exitCode()).isEqualTo(1);
            assertThat(unknown.stderr()).contains("handoff inspect: " + url(prefill) + ": this prefill has no timeline for rid 'never-sent'");
        }
    }

    /** {@code inspect} with {@code options}, then {@code urls}. */
    private static String[] args(List<String> options, String... urls)
    {
        List<String> args = new ArrayList<>(List.of("inspect"));
        args.addAll(options);
        args.addAll(List.of(urls));
        return args.toArray(String[]::new);
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
