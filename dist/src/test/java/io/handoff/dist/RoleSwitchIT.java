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
import java.util.concurrent.CompletableFuture;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * {@code POST /admin/role} on real processes: a switch waits for the transfers in flight and loses no request, a second one
 * asked for while the first drains is refused, and one that cannot drain (a stalled transfer) is given up with nothing
 * aborted, the server serving on in its old role. The router's static lists follow the switched server.
 */
class RoleSwitchIT
{
    private static final Duration SWITCH = Duration.ofSeconds(90);

    @TempDir
    Path temp;

    @Test
    void aSwitchMidTransferWaitsForItLosesNoRequestAndASecondSwitchMidDrainIsRefused()
            throws Exception
    {
        List<String> prompts = new ArrayList<>();
        for (int i = 0; i < 6; i++) {
            prompts.add("Q" + i + ": which pages move between prefill and decode when a request of " + (10 + i) + " turns arrives? A:");
        }
        List<List<Integer>> reference = Launcher.colocated(temp, prompts, 8);
        // the switched prefill's transfers each wait 1.5 s before their first chunk: its rooms are mid-transfer when the switch comes
        try (ServerProcess slow = ServerProcess.serve(temp, "prefill", "-Dhandoff.debug.faults=[\"transfer-before-chunk delay=1500ms\"]");
                ServerProcess other = ServerProcess.serve(temp, "prefill");
                ServerProcess decode = ServerProcess.serve(temp, "decode");
                ServerProcess router = ServerProcess.router(temp, List.of(slow, other), List.of(decode), "-Dhandoff.router.policy.prefill=round-robin")) {
            List<CompletableFuture<HttpResponse<String>>> inFlight = new ArrayList<>();
            for (String prompt : prompts) {
                inFlight.add(CompletableFuture.supplyAsync(() -> router.post("/generate", ServerProcess.greedyBody(prompt, 8))));
            }
            slow.awaitMetric("handoff_server_inflight_requests", count -> count >= 1);

            HttpResponse<String> switched = slow.post("/admin/role", "{\"role\": \"decode\"}");
            assertThat(switched.statusCode()).as(switched.body()).isEqualTo(202);
            assertThat(ServerProcess.json(switched.body()).path("status").asText()).isEqualTo("switching");
            // mid-drain: its transfers are still waiting out their delay
            HttpResponse<String> again = slow.post("/admin/role", "{\"role\": \"colocated\"}");
            assertThat(again.statusCode()).as(again.body()).isEqualTo(409);
            assertThat(ServerProcess.json(again.body()).path("message").asText()).contains("a switch to decode is under way");
            HttpResponse<String> refused = slow.post("/generate", "{\"text\": \"late\", \"bootstrap_room\": 1}");
            assertThat(refused.statusCode()).isEqualTo(503);
            assertThat(ServerProcess.json(refused.body()).path("error").path("cause").asText()).isEqualTo("draining");

            List<List<Integer>> outputs = new ArrayList<>();
            for (CompletableFuture<HttpResponse<String>> response : inFlight) {
                HttpResponse<String> answer = response.join();
                assertThat(answer.statusCode()).as(answer.body()).isEqualTo(200);
                outputs.add(ServerProcess.outputIds(ServerProcess.json(answer.body())));
            }
            assertThat(outputs).as("no request failed or changed because of the switch").isEqualTo(reference);

            awaitRole(slow, "decode");
            awaitListed(router, slow, "decode");
            // it decodes now: requests through the router still give the colocated output
            for (int i = 0; i < 4; i++) {
                HttpResponse<String> answer = router.post("/generate", ServerProcess.greedyBody(prompts.get(i), 8));
                assertThat(answer.statusCode()).as(answer.body()).isEqualTo(200);
                assertThat(ServerProcess.outputIds(ServerProcess.json(answer.body()))).isEqualTo(reference.get(i));
            }
            assertThat(slow.logText()).contains("switching role prefill -> decode").contains("role switch done");
            other.assertNoPagesLeaked();
            decode.assertNoPagesLeaked();
            slow.assertNoPagesLeaked();
        }
    }

    @Test
    void aSwitchDuringAStalledTransferIsGivenUpAbortingNothingAndTheServerServesOn()
            throws Exception
    {
        // room 7's transfer parks for good; the switch may wait 3 s for it
        try (ServerProcess prefill = ServerProcess.serve(temp, "prefill", "-Dhandoff.debug.faults=[\"transfer-before-chunk a=7 park\"]",
                "-Dhandoff.server.role-switch-timeout=3s");
                ServerProcess decode = ServerProcess.serve(temp, "decode");
                ServerProcess another = ServerProcess.serve(temp, "decode")) {
            String control = ServerProcess.json(prefill.get("/bootstrap").body()).path("control").asText();
            CompletableFuture<HttpResponse<String>> stalledPrefill = CompletableFuture.supplyAsync(() -> prefill.post("/generate", room("stalled", 7, null)));
            CompletableFuture<HttpResponse<String>> stalledDecode = CompletableFuture.supplyAsync(() -> decode.post("/generate", room("stalled", 7, control)));
            prefill.awaitMetric("handoff_disagg_rooms_unsettled", count -> count >= 1);

            HttpResponse<String> switched = prefill.post("/admin/role", "{\"role\": \"decode\"}");
            assertThat(switched.statusCode()).as(switched.body()).isEqualTo(202);
            awaitLog(prefill, "role switch prefill -> decode given up");

            JsonNode health = ServerProcess.json(prefill.get("/health").body());
            assertThat(health.path("role").asText()).isEqualTo("prefill");
            assertThat(health.path("status").asText()).isEqualTo("ok");
            assertThat(stalledPrefill).as("the switch aborted nothing").isNotDone();
            assertThat(stalledDecode).isNotDone();
            // it serves on as a prefill: another room goes through (to another decode: the parked transfer holds its link to the first)
            CompletableFuture<HttpResponse<String>> next = CompletableFuture.supplyAsync(() -> prefill.post("/generate", room("next", 8, null)));
            HttpResponse<String> answer = another.post("/generate", room("next", 8, control));
            assertThat(answer.statusCode()).as(answer.body()).isEqualTo(200);
            assertThat(next.join().statusCode()).isEqualTo(200);

            assertThat(decode.post("/abort_request", "{\"rid\": \"stalled\"}").statusCode()).isEqualTo(200);
            stalledDecode.join();
        }
    }

    private static String room(String rid, long room, String host)
    {
        ObjectNode body = (ObjectNode) ServerProcess.json(ServerProcess.greedyBody("Q: where does room " + room + " go? A:", 6));
        body.put("rid", rid);
        body.put("bootstrap_room", room);
        if (host != null) {
            body.put("bootstrap_host", host);
        }
        return body.toString();
    }

    private static void awaitRole(ServerProcess server, String role)
            throws InterruptedException
    {
        long deadline = System.nanoTime() + SWITCH.toNanos();
        while (true) {
            String last;
            try {
                HttpResponse<String> health = server.get("/health");
                if (health.statusCode() == 200 && ServerProcess.json(health.body()).path("role").asText().equals(role)) {
                    return;
                }
                last = health.body();
            }
            catch (java.io.UncheckedIOException e) {
                // between the old engine's HTTP server and the new one's, the port refuses connections
                last = e.getMessage();
            }
            assertThat(System.nanoTime()).as("/health says " + role + " within " + SWITCH + "; last: " + last).isLessThan(deadline);
            Thread.sleep(200); // polling a process's state, bounded: not provoking a race
        }
    }

    private static void awaitListed(ServerProcess router, ServerProcess server, String role)
            throws InterruptedException
    {
        long deadline = System.nanoTime() + SWITCH.toNanos();
        String url = "http://127.0.0.1:" + server.port;
        while (true) {
            JsonNode backends = ServerProcess.json(router.get("/backends").body());
            for (JsonNode backend : backends) {
                if (backend.path("url").asText().equals(url) && backend.path("role").asText().equals(role) && backend.path("healthy").asBoolean()) {
                    return;
                }
            }
            assertThat(System.nanoTime()).as("the router lists " + url + " as a healthy " + role + "; last: " + backends).isLessThan(deadline);
            Thread.sleep(200); // polling a process's state, bounded: not provoking a race
        }
    }

    private static void awaitLog(ServerProcess server, String text)
            throws InterruptedException
    {
        long deadline = System.nanoTime() + SWITCH.toNanos();
        while (!server.logText().contains(text)) {
            assertThat(System.nanoTime()).as("the log says '" + text + "'").isLessThan(deadline);
            Thread.sleep(200); // polling a process's log, bounded: not provoking a race
        }
    }
}
