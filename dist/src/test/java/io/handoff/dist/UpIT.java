package io.handoff.dist;

import com.fasterxml.jackson.databind.JsonNode;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * {@code handoff up}: a prefill, a decode and a router of the distribution as children of one command, serving through
 * the router under the served name; SIGTERM stops them all, and so does a kill -9 of {@code up} itself (its children
 * watch it and stop on their own).
 */
class UpIT
{
    private static final Duration STARTUP = Duration.ofMinutes(2);

    @TempDir
    Path temp;

    private final HttpClient client = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).connectTimeout(Duration.ofSeconds(2)).build();

    @Test
    void servesThroughItsRouterUnderTheServedNameAndStopsEverythingOnSigterm()
            throws Exception
    {
        int port = freePort();
        Process up = start(port, "--served-model-name", "tiny-ref");
        List<ProcessHandle> children = awaitHealthy(up, port);
        assertThat(children).as("a prefill, a decode and a router").hasSize(3);

        JsonNode models = ServerProcess.JSON.readTree(get(port, "/v1/models"));
        assertThat(models.at("/data/0/id").asText()).isEqualTo("tiny-ref");
        // the seeded preset has no chat template: a completion, through the router to the prefill and the decode
        HttpResponse<String> completion = client.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + "/v1/completions"))
                .POST(HttpRequest.BodyPublishers.ofString("{\"model\":\"tiny-ref\",\"prompt\":\"Hi\",\"max_tokens\":4,\"temperature\":0}")).build(),
                HttpResponse.BodyHandlers.ofString());
        assertThat(completion.statusCode()).as(completion.body()).isEqualTo(200);
        assertThat(ServerProcess.JSON.readTree(completion.body()).at("/usage/completion_tokens").asInt()).isPositive();

        up.destroy();
        assertThat(up.waitFor(60, TimeUnit.SECONDS)).as("up ends after SIGTERM").isTrue();
        for (ProcessHandle child : children) {
            assertThat(child.isAlive()).as("child " + child.pid() + " after up stopped").isFalse();
        }
    }

    @Test
    void itsServersStopOnTheirOwnWhenUpIsKilled()
            throws Exception
    {
        int port = freePort();
        Process up = start(port);
        List<ProcessHandle> children = awaitHealthy(up, port);

        up.destroyForcibly();
        up.waitFor(10, TimeUnit.SECONDS);
        for (ProcessHandle child : children) {
            // each watches up's pid and stops through its graceful shutdown; an idle server takes about a second
            assertThat(child.onExit().completeOnTimeout(child, 30, TimeUnit.SECONDS).get().isAlive())
                    .as("child " + child.pid() + " 30 s after kill -9 of up").isFalse();
        }
    }

    private Process start(int port, String... extra)
            throws IOException
    {
        List<String> args = new java.util.ArrayList<>(List.of("up", "--model", "tiny-gqa", "--prefill", "1", "--decode", "1", "--port",
                Integer.toString(port), "--log-dir", temp.resolve("logs-" + port).toString(), "--kv-pool-memory", "16MiB"));
        args.addAll(List.of(extra));
        Path log = temp.resolve("up-" + port + ".log");
        return Launcher.builder(temp, Launcher.command(Launcher.DIST, args.toArray(String[]::new)))
                .redirectErrorStream(true).redirectOutput(log.toFile()).start();
    }

    /** Polls the router's /health until it answers 200 (up prints the URL then), and returns up's child processes. */
    private List<ProcessHandle> awaitHealthy(Process up, int port)
            throws Exception
    {
        long deadline = System.nanoTime() + STARTUP.toNanos();
        while (System.nanoTime() < deadline) {
            assertThat(up.isAlive()).as("up is running: " + Files.readString(temp.resolve("up-" + port + ".log"))).isTrue();
            try {
                HttpResponse<String> health = client.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + "/health"))
                        .timeout(Duration.ofSeconds(2)).build(), HttpResponse.BodyHandlers.ofString());
                if (health.statusCode() == 200) {
                    return up.toHandle().children().toList();
                }
            }
            catch (IOException e) {
                // not listening yet
            }
            // waiting for three JVMs to start: a poll bounded by the deadline
            Thread.sleep(500);
        }
        throw new AssertionError("up did not become healthy within " + STARTUP + ": " + Files.readString(temp.resolve("up-" + port + ".log")));
    }

    private String get(int port, String path)
            throws Exception
    {
        return client.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + path)).build(), HttpResponse.BodyHandlers.ofString()).body();
    }

    private static int freePort()
            throws IOException
    {
        try (ServerSocket socket = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            return socket.getLocalPort();
        }
    }
}
