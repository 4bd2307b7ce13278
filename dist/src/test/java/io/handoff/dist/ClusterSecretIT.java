package io.handoff.dist;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.security.SecureRandom;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.locks.LockSupport;
import java.util.stream.Stream;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A cluster whose processes share a cluster secret (handoff.security.cluster-secret-file), as processes of the built
 * distribution: a prefill, a decode and a router serve the colocated engine's output to the bit over the authenticated
 * control channel and mooncake's authenticated tcp connections; a decode with another secret is refused with an error
 * that names the secret on both sides; a decode's pool file is private, and the folder of a decode killed with
 * {@code kill -9} is removed by the next decode.
 */
class ClusterSecretIT
{
    private static final String PROMPT = "The capital of France is";

    @TempDir
    Path temp;

    private Path secret(String name)
            throws IOException
    {
        byte[] key = new byte[32];
        new SecureRandom().nextBytes(key);
        Path file = temp.resolve(name);
        Files.writeString(file, Base64.getEncoder().encodeToString(key) + "\n");
        Files.setPosixFilePermissions(file, PosixFilePermissions.fromString("rw-------"));
        return file;
    }

    private static String option(Path secret)
    {
        return "-Dhandoff.security.cluster-secret-file=" + secret;
    }

    @Test
    void aClusterWithASecretServesTheColocatedOutputBitForBitThroughTheRouter()
            throws Exception
    {
        String secret = option(secret("secret"));
        String tcp = "-Dhandoff.plugins.mooncake.transport=tcp";
        List<List<Integer>> reference = Launcher.colocated(temp, List.of(PROMPT), 12);
        try (ServerProcess prefill = ServerProcess.serve(temp, "prefill", secret, tcp);
                ServerProcess decode = ServerProcess.serve(temp, "decode", secret, tcp);
                ServerProcess router = router(prefill, decode, secret)) {
            HttpResponse<String> response = router.post("/generate", request(PROMPT, 12).toString());

            assertThat(response.statusCode()).as(response.body()).isEqualTo(200);
            assertThat(ServerProcess.outputIds(ServerProcess.json(response.body()))).isEqualTo(reference.getFirst());
            assertThat(ServerProcess.json(decode.get("/bootstrap").body()).get("transport").asText()).isEqualTo("tcp");
            assertThat(prefill.metric("handoff_cluster_auth_failures_total")).isZero();
            assertThat(decode.metric("handoff_cluster_auth_failures_total")).isZero();
            assertThat(prefill.logText()).contains("cluster connections authenticate with the cluster secret");
        }
    }

    @Test
    void aDecodeWithAnotherSecretIsRefusedAndTheErrorNamesTheClusterSecret()
            throws Exception
    {
        // The router and the prefill share a secret, the decode has another: the decode refuses the router's
        // signed call before it connects anywhere (the control channel's own refusal both ways is
        // ControlAuthenticationTest's), and the client hears why.
        String secret = option(secret("secret"));
        try (ServerProcess prefill = ServerProcess.serve(temp, "prefill", secret, "-Dhandoff.disaggregation.bootstrapping-timeout=2s");
                ServerProcess decode = ServerProcess.serve(temp, "decode", option(secret("other")));
                ServerProcess router = router(prefill, decode, secret)) {
            HttpResponse<String> response = router.post("/generate", request(PROMPT, 4).toString());

            assertThat(response.statusCode()).as(response.body()).isGreaterThanOrEqualTo(400);
            assertThat(response.body()).contains("router_authentication_failed").contains("cluster secret");
            decode.assertNoPagesLeaked();
            prefill.assertNoPagesLeaked();
        }
    }

    @Test
    void aDecodesPoolFileIsPrivateAndTheFolderOfAKilledDecodeIsRemovedByTheNext()
            throws Exception
    {
        Path folder;
        try (ServerProcess decode = ServerProcess.serve(temp, "decode", "-Dhandoff.plugins.mooncake.transport=shm")) {
            folder = processFolder(decode.process.pid());
            Path pool = folder.resolve("handoff-kv.pool");
            assertThat(PosixFilePermissions.toString(Files.getPosixFilePermissions(pool))).isEqualTo("rw-------");
            assertThat(PosixFilePermissions.toString(Files.getPosixFilePermissions(folder))).isEqualTo("rwx------");
            assertThat(PosixFilePermissions.toString(Files.getPosixFilePermissions(folder.getParent()))).isEqualTo("rwx------");

            decode.process.destroyForcibly().waitFor();
        }
        assertThat(folder).as("a kill -9 leaves the folder behind").isDirectory();
        try (ServerProcess next = ServerProcess.serve(temp, "decode", "-Dhandoff.plugins.mooncake.transport=shm")) {
            assertThat(folder).as("removed by the next decode").doesNotExist();
            Path own = processFolder(next.process.pid());
            assertThat(own).isDirectory();

            assertThat(next.terminate(Duration.ofSeconds(60))).isTrue();
            assertThat(own).as("removed on a normal exit").doesNotExist();
        }
    }

    // ---------------------------------------------------------------------------------------------

    /** The private folder of the decode with {@code pid}: {@code /dev/shm/handoff-<uid>/<pid>-<random>}. */
    private static Path processFolder(long pid)
            throws IOException
    {
        Path shm = Path.of("/dev/shm");
        try (Stream<Path> users = Files.list(shm)) {
            for (Path user : users.filter(p -> Files.isDirectory(p) && p.getFileName().toString().matches("handoff-\\d+")).toList()) {
                try (Stream<Path> folders = Files.list(user)) {
                    Optional<Path> found = folders.filter(p -> p.getFileName().toString().startsWith(pid + "-")).findFirst();
                    if (found.isPresent()) {
                        return found.get();
                    }
                }
            }
        }
        throw new AssertionError("no folder of process " + pid + " under " + shm);
    }

    private static ObjectNode request(String prompt, int maxNewTokens)
    {
        ObjectNode body = ServerProcess.JSON.createObjectNode();
        body.put("text", prompt);
        ObjectNode sampling = body.putObject("sampling_params");
        sampling.put("max_new_tokens", maxNewTokens);
        sampling.put("temperature", 0);
        sampling.put("ignore_eos", true);
        return body;
    }

    private ServerProcess router(ServerProcess prefill, ServerProcess decode, String secret)
            throws Exception
    {
        List<String> args = new ArrayList<>(List.of("router", "--port", "0", "--prefill", "http://127.0.0.1:" + prefill.port, "--decode",
                "http://127.0.0.1:" + decode.port, "-Dhandoff.router.health-interval=200ms", "-Dhandoff.router.health-timeout=1s", secret));
        ServerProcess router = ServerProcess.launch(temp, "router", args);
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
                router.close();
                throw new AssertionError("router backends not healthy: " + router.get("/backends").body());
            }
            LockSupport.parkNanos(50_000_000); // waiting for the router's health polls, bounded
        }
    }
}
