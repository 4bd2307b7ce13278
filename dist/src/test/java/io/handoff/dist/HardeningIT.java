package io.handoff.dist;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.io.InputStream;
import java.net.Socket;
import java.net.SocketException;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.locks.LockSupport;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The public API's hardening on real {@code handoff serve} processes: API keys from a configuration file and from
 * a key file (and never printed by {@code handoff config}), a decode refusing a malformed {@code bootstrap_host},
 * a prefill answering 409 for a room no decode claims, and the connection limits the JDK server enforces from
 * configuration (a cap and a slow-loris timeout).
 */
class HardeningIT
{
    private static final String COMPLETION = "{\"prompt\": \"hi\", \"max_tokens\": 1}";

    @TempDir
    Path temp;

    @Test
    void apiKeysFromAConfigFileGuardTheApiAndHandoffConfigNeverPrintsThem()
            throws Exception
    {
        // as an operator writes it: the distribution's configuration, plus keys
        Path config = Files.writeString(temp.resolve("keys.conf"), "include file(\"" + ServerProcess.DIST.toAbsolutePath().resolve("conf/handoff.conf")
                + "\")\nhandoff.server.api-keys = [\"k-acc\"]\n");

        Launcher.Run printed = Launcher.run(temp, "config", "--config", config.toString());
        assertThat(printed.exitCode()).as(printed.describe()).isZero();
        assertThat(printed.stdout()).contains("handoff.server.api-keys = <redacted>").doesNotContain("k-acc");

        try (ServerProcess server = ServerProcess.start(temp, "--config", config.toString())) {
            HttpResponse<String> without = server.post("/v1/completions", COMPLETION);
            HttpResponse<String> with = post(server, "/v1/completions", COMPLETION, "Bearer k-acc");
            HttpResponse<String> empty = post(server, "/v1/completions", "{\"prompt\": \"\", \"max_tokens\": 2}", "Bearer k-acc");

            assertThat(without.statusCode()).isEqualTo(401);
            assertThat(without.headers().firstValue("WWW-Authenticate")).contains("Bearer realm=\"handoff\"");
            assertThat(with.statusCode()).as(with.body()).isEqualTo(200);
            assertThat(empty.statusCode()).as(empty.body()).isEqualTo(400);
            assertThat(server.get("/health").statusCode()).isEqualTo(200);
            assertThat(server.logText()).contains("1 API key(s) required").doesNotContain("k-acc");
        }
    }

    @Test
    void keysFromAPrivateKeyFileWorkAndAFileOthersMayReadIsRefusedAtStartup()
            throws Exception
    {
        Path keys = Files.writeString(temp.resolve("api-keys"), "# ops\nk-file-1\nk-file-2\n");
        Files.setPosixFilePermissions(keys, PosixFilePermissions.fromString("rw-------"));
        try (ServerProcess server = ServerProcess.start(temp, "-Dhandoff.server.api-key-file=" + keys)) {
            assertThat(server.post("/v1/completions", COMPLETION).statusCode()).isEqualTo(401);
            assertThat(post(server, "/v1/completions", COMPLETION, "Bearer k-file-2").statusCode()).isEqualTo(200);
        }

        Files.setPosixFilePermissions(keys, PosixFilePermissions.fromString("rw-r--r--"));
        Launcher.Run refused = Launcher.run(temp, "serve", "--port", "0", "-Dhandoff.server.api-key-file=" + keys);
        assertThat(refused.exitCode()).as(refused.describe()).isEqualTo(1);
        assertThat(refused.stderr()).contains("the API key file " + keys + " is accessible to group or others", "chmod 600").doesNotContain("k-file");
    }

    @Test
    void aDecodeRefusesABootstrapHostThatIsNotHostColonPortWith400()
            throws Exception
    {
        try (ServerProcess decode = ServerProcess.serve(temp, "decode")) {
            for (String host : new String[] {"not-a-host", "127.0.0.1", "10.0.0.1:70000"}) {
                HttpResponse<String> response = decode.post("/v1/completions",
                        "{\"prompt\": \"hi\", \"max_tokens\": 2, \"bootstrap_room\": 1, \"bootstrap_host\": \"" + host + "\"}");
                assertThat(response.statusCode()).as(host + ": " + response.body()).isEqualTo(400);
                assertThat(ServerProcess.json(response.body()).at("/error/param").asText()).isEqualTo("bootstrap_host");
            }
            HttpResponse<String> negative = decode.post("/generate", "{\"text\": \"hi\", \"bootstrap_room\": -1, \"bootstrap_host\": \"127.0.0.1:1\"}");
            assertThat(negative.statusCode()).isEqualTo(400);
            assertThat(ServerProcess.json(negative.body()).at("/error/param").asText()).isEqualTo("bootstrap_room");
        }
    }

    @Test
    void aPrefillAskedForARoomNoDecodeClaimsAnswers409NamingTheRoomWithinTheClaimDeadline()
            throws Exception
    {
        // the bootstrapping timeout stays at its 30 s default: the answer must come from the claim deadline
        try (ServerProcess prefill = ServerProcess.serve(temp, "prefill", "-Dhandoff.disaggregation.claim-timeout=2s")) {
            long start = System.nanoTime();
            HttpResponse<String> generate = prefill.post("/generate", "{\"text\": \"hi\", \"bootstrap_room\": 4242}");
            Duration took = Duration.ofNanos(System.nanoTime() - start);
            HttpResponse<String> completion = prefill.post("/v1/completions",
                    "{\"prompt\": \"hi\", \"max_tokens\": 2, \"bootstrap_room\": 4243, \"bootstrap_generation\": 1}");

            assertThat(generate.statusCode()).as(generate.body()).isEqualTo(409);
            assertThat(took).isLessThan(Duration.ofSeconds(15));
            assertThat(ServerProcess.json(generate.body()).at("/error/code").asText()).isEqualTo("room_unclaimed");
            assertThat(ServerProcess.json(generate.body()).at("/error/param").asText()).isEqualTo("bootstrap_room");
            assertThat(ServerProcess.json(generate.body()).at("/error/message").asText())
                    .contains("no decode claimed room 4242 (generation 0) within 2000 ms", "handoff.disaggregation.claim-timeout", "router");
            assertThat(completion.statusCode()).as(completion.body()).isEqualTo(409);
            assertThat(ServerProcess.json(completion.body()).at("/error/message").asText()).contains("room 4243 (generation 1)");
            assertThat(prefill.get("/health").statusCode()).isEqualTo(200);
            assertThat(prefill.logText()).contains("no decode claimed room 4242");
        }
    }

    @Test
    void aSlowClientIsDisconnectedAfterTheReadTimeoutAndConnectionsBeyondTheCapAreClosedAtOnce()
            throws Exception
    {
        try (ServerProcess server = ServerProcess.start(temp, "-Dhandoff.server.max-connections=2", "-Dhandoff.server.request-read-timeout=1s")) {
            // slow loris: headers that never end
            try (Socket slow = new Socket("127.0.0.1", server.port)) {
                slow.setSoTimeout(15_000);
                slow.getOutputStream().write("POST /generate HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n".getBytes(StandardCharsets.US_ASCII));
                long start = System.nanoTime();
                assertThat(readUntilClosed(slow.getInputStream())).as("the server closes the connection").isTrue();
                // never before the timeout (a lower bound is not a race); the JDK checks once a second
                assertThat(Duration.ofNanos(System.nanoTime() - start)).isBetween(Duration.ofMillis(900), Duration.ofSeconds(10));
            }

            try (Socket first = keptAlive(server.port); Socket second = keptAlive(server.port)) {
                try (Socket third = new Socket("127.0.0.1", server.port)) {
                    third.setSoTimeout(15_000);
                    assertThat(closedUnanswered(third)).as("a third connection is closed unanswered").isTrue();
                }
                first.close();
                // the server notices the close on its own time: retry, bounded, until a connection is served again
                long deadline = System.nanoTime() + Duration.ofSeconds(20).toNanos();
                while (!served(server.port)) {
                    assertThat(System.nanoTime()).as("a connection is served again once one closed").isLessThan(deadline);
                    LockSupport.parkNanos(50_000_000);
                }
                assertThat(second.isClosed()).isFalse();
            }
        }
    }

    @Test
    void theReadDeadlineStillDropsEverySilentConnectionOfAFloodAndTheServerAnswersAfterIt()
            throws Exception
    {
        try (ServerProcess server = ServerProcess.start(temp, "-Dhandoff.server.max-connections=64", "-Dhandoff.server.request-read-timeout=1s")) {
            List<Socket> flood = new ArrayList<>();
            try {
                for (int i = 0; i < 48; i++) {
                    Socket silent = new Socket("127.0.0.1", server.port);
                    silent.setSoTimeout(15_000);
                    if (i % 2 == 1) {
                        // half of them trickle a request head that never ends
                        silent.getOutputStream().write("POST /generate HTTP/1.1\r\nHost: x\r\n".getBytes(StandardCharsets.US_ASCII));
                    }
                    flood.add(silent);
                }
                // during the flood the server still answers
                assertThat(served(server.port)).isTrue();
                for (Socket silent : flood) {
                    assertThat(readUntilClosed(silent.getInputStream())).as("each flood connection is dropped at its deadline").isTrue();
                }
            }
            finally {
                for (Socket silent : flood) {
                    silent.close();
                }
            }
            // and after it, a new silent connection is dropped too, and a request is answered
            try (Socket late = new Socket("127.0.0.1", server.port)) {
                late.setSoTimeout(15_000);
                assertThat(readUntilClosed(late.getInputStream())).isTrue();
            }
            assertThat(served(server.port)).isTrue();
        }
    }

    /** A connection that has had one request answered and stays open (HTTP/1.1 keep-alive). */
    private static Socket keptAlive(int port)
            throws IOException
    {
        Socket socket = new Socket("127.0.0.1", port);
        socket.setSoTimeout(15_000);
        socket.getOutputStream().write(healthRequest());
        String head = readHead(socket.getInputStream());
        assertThat(head).startsWith("HTTP/1.1 200");
        return socket;
    }

    private static boolean served(int port)
            throws IOException
    {
        try (Socket socket = new Socket("127.0.0.1", port)) {
            socket.setSoTimeout(15_000);
            socket.getOutputStream().write(healthRequest());
            return readHead(socket.getInputStream()).startsWith("HTTP/1.1 200");
        }
        catch (SocketException reset) {
            return false;
        }
    }

    private static byte[] healthRequest()
    {
        return "GET /health HTTP/1.1\r\nHost: x\r\n\r\n".getBytes(StandardCharsets.US_ASCII);
    }

    /** The response's status line and headers, and its body (/health's is small and has a Content-length); "" when closed first. */
    private static String readHead(InputStream in)
            throws IOException
    {
        StringBuilder text = new StringBuilder();
        int b;
        while ((b = in.read()) >= 0) {
            text.append((char) b);
            if (text.toString().endsWith("\r\n\r\n")) {
                String head = text.toString();
                int at = head.toLowerCase(java.util.Locale.ROOT).indexOf("content-length:");
                int length = Integer.parseInt(head.substring(at + 15, head.indexOf("\r\n", at)).strip());
                in.readNBytes(length);
                return head;
            }
        }
        return "";
    }

    /** Sends a request on {@code socket}: true when the server closes (or resets) it instead of answering. */
    private static boolean closedUnanswered(Socket socket)
            throws IOException
    {
        try {
            socket.getOutputStream().write(healthRequest());
        }
        catch (SocketException closed) {
            return true;
        }
        return readUntilClosed(socket.getInputStream());
    }

    /** True when the peer closes (or resets) the connection before sending anything. */
    private static boolean readUntilClosed(InputStream in)
            throws IOException
    {
        try {
            return in.read() == -1;
        }
        catch (SocketException reset) {
            return true;
        }
    }

    private static HttpResponse<String> post(ServerProcess server, String path, String body, String authorization)
            throws Exception
    {
        return server.client.send(HttpRequest.newBuilder(server.uri(path)).header("Authorization", authorization)
                .POST(HttpRequest.BodyPublishers.ofString(body)).build(), HttpResponse.BodyHandlers.ofString());
    }
}
