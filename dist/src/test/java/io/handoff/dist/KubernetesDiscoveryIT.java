package io.handoff.dist;

import com.fasterxml.jackson.databind.JsonNode;
import io.fabric8.mockwebserver.MockWebServer;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.locks.LockSupport;
import java.util.function.Predicate;

import static io.handoff.dist.FakePodsApi.pod;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * {@code handoff router} under {@code handoff.cluster.discovery = kubernetes}, with a Kubernetes API on fabric8's mock
 * web server listing pods whose IP and port are a real prefill's and decode's: the router follows them as they
 * appear, turn Ready, drain and go, and serves the colocated output bit for bit while they are there.
 */
class KubernetesDiscoveryIT
{
    private static final List<String> PROMPTS = List.of("Q: one two three? A:", "The capital of France is", "a long shared prefix about KV caches");

    @TempDir
    Path temp;

    private final FakePodsApi api = new FakePodsApi();
    private final MockWebServer server = new MockWebServer();

    @BeforeEach
    void startApi()
    {
        server.setDispatcher(api);
        server.start();
    }

    @AfterEach
    void stopApi()
    {
        server.shutdown();
    }

    @Test
    void theRouterFollowsThePodsAsTheyBecomeReadyDrainAndGo()
            throws Exception
    {
        List<List<Integer>> reference = Launcher.colocated(temp, PROMPTS, 10);
        try (ServerProcess prefill = ServerProcess.serve(temp, "prefill");
                ServerProcess decode = ServerProcess.serve(temp, "decode")) {
            api.put(pod("handoff-prefill-0", "prefill", prefill.port, true).build());
            api.put(pod("handoff-decode-0", "decode", decode.port, false).build());
            api.put(pod("handoff-router-0", "router", 30000, true).build());
            try (ServerProcess router = ServerProcess.launch(temp, "router", List.of("router", "--port", "0",
                    "-Dhandoff.cluster.discovery=kubernetes", "-Dhandoff.cluster.kubernetes.api-server=http://127.0.0.1:" + server.getPort(),
                    "-Dhandoff.cluster.kubernetes.namespace=" + FakePodsApi.NAMESPACE, "-Dhandoff.cluster.kubernetes.retry-interval=200ms",
                    "-Dhandoff.router.health-interval=200ms", "-Dhandoff.router.health-timeout=1s"))) {
                awaitBackends(router, "only the Ready prefill", backends -> ids(backends).equals(List.of("handoff-prefill-0")) && healthy(backends) == 1);
                assertThat(router.post("/generate", body(PROMPTS.getFirst())).statusCode()).isEqualTo(503);

                api.put(pod("handoff-decode-0", "decode", decode.port, true).build());
                awaitBackends(router, "the decode once Ready", backends -> ids(backends).size() == 2 && healthy(backends) == 2);
                assertThat(generateAll(router)).isEqualTo(reference);

                api.put(pod("handoff-decode-0", "decode", decode.port, true).editMetadata().withDeletionTimestamp("2026-01-01T00:00:00Z").endMetadata().build());
                awaitBackends(router, "the deleted decode draining", backends -> draining(backends, "handoff-decode-0"));
                api.delete("handoff-decode-0");
                awaitBackends(router, "no decode once its pod is gone", backends -> ids(backends).equals(List.of("handoff-prefill-0")));
                assertThat(router.post("/generate", body(PROMPTS.getFirst())).statusCode()).isEqualTo(503);

                api.put(pod("handoff-decode-1", "decode", decode.port, true).build());
                awaitBackends(router, "the decode's new pod", backends -> ids(backends).contains("handoff-decode-1") && healthy(backends) == 2);
                assertThat(generateAll(router)).isEqualTo(reference);
                prefill.assertNoPagesLeaked();
                decode.assertNoPagesLeaked();
            }
        }
    }

    private static void awaitBackends(ServerProcess router, String what, Predicate<JsonNode> condition)
    {
        long deadline = System.nanoTime() + Duration.ofSeconds(60).toNanos();
        while (true) {
            JsonNode backends = ServerProcess.json(router.get("/backends").body());
            if (condition.test(backends)) {
                return;
            }
            if (System.nanoTime() > deadline) {
                throw new AssertionError("the router's backends never showed " + what + ": " + backends + "\n" + router.logText());
            }
            LockSupport.parkNanos(50_000_000); // waiting for the router to follow the API and poll health: bounded
        }
    }

    private static List<String> ids(JsonNode backends)
    {
        List<String> ids = new ArrayList<>();
        backends.forEach(backend -> ids.add(backend.path("id").asText()));
        return ids.stream().sorted().toList();
    }

    private static int healthy(JsonNode backends)
    {
        int healthy = 0;
        for (JsonNode backend : backends) {
            healthy += backend.path("healthy").asBoolean() ? 1 : 0;
        }
        return healthy;
    }

    private static boolean draining(JsonNode backends, String id)
    {
        for (JsonNode backend : backends) {
            if (backend.path("id").asText().equals(id)) {
                return backend.path("draining").asBoolean();
            }
        }
        return false;
    }

    private static String body(String prompt)
    {
        return ServerProcess.greedyBody(prompt, 10);
    }

    private static List<List<Integer>> generateAll(ServerProcess router)
    {
        List<List<Integer>> outputs = new ArrayList<>();
        for (String prompt : PROMPTS) {
            HttpResponse<String> answer = router.post("/generate", body(prompt));
            assertThat(answer.statusCode()).as(answer.body()).isEqualTo(200);
            outputs.add(ServerProcess.outputIds(ServerProcess.json(answer.body())));
        }
        return outputs;
    }
}
