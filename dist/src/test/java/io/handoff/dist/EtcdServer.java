package io.handoff.dist;

import org.junit.jupiter.api.Assertions;
import org.junit.jupiter.api.Assumptions;

import java.io.File;
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
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import java.util.stream.Stream;

/**
 * A real single-member etcd for the distribution's tests, on free loopback ports with its data under the test's
 * directory. When {@code etcd} is not on the PATH the test is skipped, unless {@code -Dio.handoff.test.require-etcd=true}
 * (as CI sets it): then it fails. (The cluster module's own tests have their own, richer helper; dist tests cannot see
 * engine-cluster's test classes.)
 */
final class EtcdServer
        implements AutoCloseable
{
    private static final String REQUIRE = "io.handoff.test.require-etcd";

    private final Process process;
    private final Path log;
    private final int clientPort;

    private EtcdServer(Process process, Path log, int clientPort)
    {
        this.process = process;
        this.log = log;
        this.clientPort = clientPort;
    }

    /** A started etcd, once it reports itself healthy (at most 30 s); skips the test when etcd is not installed. */
    static EtcdServer startOrSkip(Path workDir)
            throws IOException
    {
        Path binary = Stream.of(System.getenv().getOrDefault("PATH", "").split(File.pathSeparator))
                .map(dir -> Path.of(dir, "etcd"))
                .filter(Files::isExecutable)
                .findFirst()
                .orElse(null);
        if (binary == null) {
            String reason = "etcd is not on the PATH (Debian: apt-get install etcd-server)";
            if (Boolean.getBoolean(REQUIRE)) {
                Assertions.fail(reason + ", and -D" + REQUIRE + "=true asks for the etcd tests to run");
            }
            Assumptions.abort(reason + ": skipped; set -D" + REQUIRE + "=true to fail instead");
        }
        int clientPort = freePort();
        String client = "http://127.0.0.1:" + clientPort;
        String peer = "http://127.0.0.1:" + freePort();
        Path directory = Files.createTempDirectory(workDir, "etcd");
        Path log = directory.resolve("etcd.log");
        Process process = new ProcessBuilder(binary.toString(), "--name", "dist", "--data-dir", directory.resolve("data").toString(),
                "--listen-client-urls", client, "--advertise-client-urls", client, "--listen-peer-urls", peer,
                "--initial-advertise-peer-urls", peer, "--initial-cluster", "dist=" + peer)
                .redirectErrorStream(true).redirectOutput(log.toFile()).start();
        EtcdServer etcd = new EtcdServer(process, log, clientPort);
        etcd.awaitHealthy();
        return etcd;
    }

    /** The client endpoint, for {@code handoff.cluster.etcd.endpoints}. */
    String endpoint()
    {
        return "http://127.0.0.1:" + clientPort;
    }

    private void awaitHealthy()
            throws IOException
    {
        try (HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(1)).build()) {
            long deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos();
            while (System.nanoTime() < deadline) {
                if (!process.isAlive()) {
                    Assertions.fail("etcd exited with " + process.exitValue() + " at start; its log:\n" + Files.readString(log));
                }
                try {
                    HttpResponse<String> health = http.send(HttpRequest.newBuilder(URI.create(endpoint() + "/health"))
                            .timeout(Duration.ofSeconds(1)).build(), HttpResponse.BodyHandlers.ofString());
                    if (health.statusCode() == 200 && health.body().contains("true")) {
                        return;
                    }
                }
                catch (IOException e) {
                    // not listening yet
                }
                catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    throw new AssertionError(e);
                }
                LockSupport.parkNanos(50_000_000); // waiting for a process to start: bounded
            }
        }
        close();
        Assertions.fail("etcd did not report healthy within 30 s; its log:\n" + Files.readString(log));
    }

    private static int freePort()
            throws IOException
    {
        try (ServerSocket socket = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            return socket.getLocalPort();
        }
    }

    @Override
    public void close()
    {
        process.destroy();
        try {
            if (!process.waitFor(10, TimeUnit.SECONDS)) {
                process.destroyForcibly().waitFor();
            }
        }
        catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
