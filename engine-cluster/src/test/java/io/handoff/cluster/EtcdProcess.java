package io.handoff.cluster;

import org.junit.jupiter.api.Assertions;
import org.junit.jupiter.api.Assumptions;

import java.io.File;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Comparator;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

/**
 * A real single-member etcd for tests, on two free loopback ports with a temporary data directory. It can be stopped
 * and started again on the same ports (with its data, or wiped) to stage an outage. When {@code etcd} is not on the
 * PATH the calling test is skipped, unless {@value #REQUIRE} is {@code true}: then it fails.
 */
final class EtcdProcess
        implements AutoCloseable
{
    static final String REQUIRE = "io.handoff.test.require-etcd";

    private final Path binary;
    private final Path directory;
    private final int clientPort;
    private final int peerPort;
    private Process process;

    private EtcdProcess(Path binary)
            throws IOException
    {
        this.binary = binary;
        this.directory = Files.createTempDirectory("handoff-etcd-test");
        this.clientPort = freePort();
        this.peerPort = freePort();
    }

    /** A started etcd; skips (or, under {@value #REQUIRE}, fails) the test when etcd is not installed. */
    static EtcdProcess startOrSkip()
            throws IOException, InterruptedException
    {
        Optional<Path> binary = onPath("etcd");
        if (binary.isEmpty()) {
            String reason = "etcd is not on the PATH (Debian: apt-get install etcd-server)";
            if (Boolean.getBoolean(REQUIRE)) {
                Assertions.fail(reason + ", and -D" + REQUIRE + "=true asks for the etcd tests to run");
            }
            Assumptions.abort(reason + ": the etcd tests are skipped; set -D" + REQUIRE + "=true to fail instead");
        }
        EtcdProcess etcd = new EtcdProcess(binary.get());
        etcd.start();
        return etcd;
    }

    URI endpoint()
    {
        return URI.create("http://127.0.0.1:" + clientPort);
    }

    /** Starts etcd (again) on the same ports and data directory, and waits until it reports itself healthy. */
    void start()
            throws IOException, InterruptedException
    {
        String client = "http://127.0.0.1:" + clientPort;
        String peer = "http://127.0.0.1:" + peerPort;
        process = new ProcessBuilder(binary.toString(), "--name", "test", "--data-dir", directory.resolve("data").toString(),
                "--listen-client-urls", client, "--advertise-client-urls", client, "--listen-peer-urls", peer,
                "--initial-advertise-peer-urls", peer, "--initial-cluster", "test=" + peer,
                // Room for the 2 MB hostile value the tests write (the default limit is 1.5 MiB).
                "--max-request-bytes", Integer.toString(8 << 20))
                .redirectErrorStream(true)
                .redirectOutput(ProcessBuilder.Redirect.appendTo(directory.resolve("etcd.log").toFile()))
                .start();
        HttpClient http = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).connectTimeout(Duration.ofSeconds(1)).build();
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (System.nanoTime() < deadline) {
            if (!process.isAlive()) {
                Assertions.fail("etcd exited with " + process.exitValue() + " at start; its log:\n" + log());
            }
            try {
                HttpResponse<String> health = http.send(HttpRequest.newBuilder(URI.create(client + "/health")).timeout(Duration.ofSeconds(1)).build(),
                        HttpResponse.BodyHandlers.ofString());
                if (health.statusCode() == 200 && health.body().contains("\"true\"")) {
                    return;
                }
            }
            catch (IOException e) {
                // not listening yet
            }
            Thread.sleep(50);
        }
        stop();
        Assertions.fail("etcd did not report healthy within 30 s; its log:\n" + log());
    }

    /** Stops etcd (SIGTERM, then SIGKILL after 10 s) and waits until it is gone. */
    void stop()
            throws InterruptedException
    {
        if (process == null) {
            return;
        }
        process.destroy();
        if (!process.waitFor(10, TimeUnit.SECONDS)) {
            process.destroyForcibly().waitFor();
        }
        process = null;
    }

    /** Deletes the data directory of a stopped etcd: the next start is an etcd that lost everything. */
    void wipe()
    {
        if (process != null) {
            throw new IllegalStateException("stop etcd before wiping its data");
        }
        delete(directory.resolve("data"));
    }

    @Override
    public void close()
            throws InterruptedException
    {
        stop();
        delete(directory);
    }

    private String log()
    {
        try {
            List<String> lines = Files.readAllLines(directory.resolve("etcd.log"));
            return String.join("\n", lines.subList(Math.max(0, lines.size() - 30), lines.size()));
        }
        catch (IOException e) {
            return "(no log: " + e.getMessage() + ")";
        }
    }

    private static Optional<Path> onPath(String name)
    {
        String path = System.getenv("PATH");
        if (path == null) {
            return Optional.empty();
        }
        return Stream.of(path.split(File.pathSeparator)).filter(dir -> !dir.isEmpty()).map(dir -> Path.of(dir, name))
                .filter(Files::isExecutable).findFirst();
    }

    private static int freePort()
            throws IOException
    {
        try (ServerSocket socket = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            return socket.getLocalPort();
        }
    }

    private static void delete(Path root)
    {
        if (!Files.exists(root)) {
            return;
        }
        try (Stream<Path> paths = Files.walk(root)) {
            paths.sorted(Comparator.reverseOrder()).forEach(path -> {
                try {
                    Files.delete(path);
                }
                catch (IOException e) {
                    throw new UncheckedIOException(e);
                }
            });
        }
        catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
