package io.handoff.dist;

import com.fasterxml.jackson.databind.JsonNode;
import io.handoff.testkit.etcd.EtcdProcess;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.locks.LockSupport;
import java.util.function.Predicate;

import static io.handoff.dist.ServerProcess.json;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * A real etcd goes away under a running deployment found through it (a prefill, a decode and a router on real
 * processes): the router keeps serving the last known membership, says it is stale in {@code /health}, and when etcd
 * is back (same data) the servers keep or renew their registrations and the view is fresh again; every output is
 * bit-identical to the colocated engine's throughout.
 */
class EtcdOutageIT
{
    private static final List<String> PROMPTS = List.of("The capital of France is", "one two three four", "a long shared prefix about KV caches");
    private static final int NEW_TOKENS = 8;
    private static final Duration BOUND = Duration.ofSeconds(60);

    @TempDir
    Path temp;

    @Test
    void anEtcdOutageKeepsTheLastKnownServersServingAndTheViewRecoversWhenEtcdIsBack()
            throws Exception
    {
        List<List<Integer>> reference = Launcher.colocated(temp, PROMPTS, NEW_TOKENS);
        try (EtcdProcess etcd = EtcdProcess.startOrSkip()) {
            String[] discovery = {"-Dhandoff.cluster.discovery=etcd", "-Dhandoff.cluster.etcd.endpoints=" + etcd.endpoint(),
                    "-Dhandoff.cluster.etcd.retry-interval=200ms"};
            try (ServerProcess prefill = ServerProcess.serve(temp, "prefill", discovery);
                    ServerProcess decode = ServerProcess.serve(temp, "decode", discovery);
                    ServerProcess router = ServerProcess.router(temp, routerArguments(discovery), 2)) {
                assertBitExact(router, reference);
                assertThat(membership(router).path("stale").isNull()).isTrue();

                etcd.stop();
                JsonNode stale = await(router, health -> !health.path("membership").path("stale").isNull());
                assertThat(stale.path("membership").path("stale").asText()).contains(etcd.endpoint().toString());
                assertThat(stale.path("prefill").path("healthy").asInt()).isEqualTo(1);
                assertBitExact(router, reference);

                etcd.start();
                JsonNode fresh = await(router, health -> health.path("membership").path("stale").isNull()
                        && health.path("prefill").path("healthy").asInt() == 1 && health.path("decode").path("healthy").asInt() == 1);
                assertThat(fresh.path("status").asText()).isEqualTo("ok");
                assertBitExact(router, reference);
                prefill.assertNoPagesLeaked();
                decode.assertNoPagesLeaked();
            }
        }
    }

    private static List<String> routerArguments(String[] discovery)
    {
        List<String> arguments = new ArrayList<>(List.of("--port", "0"));
        arguments.addAll(List.of(discovery));
        return arguments;
    }

    private static void assertBitExact(ServerProcess router, List<List<Integer>> reference)
    {
        for (int i = 0; i < PROMPTS.size(); i++) {
            HttpResponse<String> response = router.post("/generate", ServerProcess.greedyBody(PROMPTS.get(i), NEW_TOKENS));
            assertThat(response.statusCode()).as(response.body()).isEqualTo(200);
            assertThat(ServerProcess.outputIds(json(response.body()))).as(PROMPTS.get(i)).isEqualTo(reference.get(i));
        }
    }

    private static JsonNode membership(ServerProcess router)
    {
        return json(router.get("/health").body()).path("membership");
    }

    /** The router's {@code /health} once {@code condition} holds of it, polled until {@link #BOUND}. */
    private static JsonNode await(ServerProcess router, Predicate<JsonNode> condition)
    {
        long deadline = System.nanoTime() + BOUND.toNanos();
        while (true) {
            JsonNode health = json(router.get("/health").body());
            if (condition.test(health)) {
                return health;
            }
            if (System.nanoTime() > deadline) {
                throw new AssertionError("the router's /health did not get there within " + BOUND + ": " + health + "\n" + router.logText());
            }
            LockSupport.parkNanos(100_000_000); // waiting for the router to notice etcd go and come back: bounded
        }
    }
}
