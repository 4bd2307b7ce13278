package io.handoff.dist;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;

/**
 * {@code bin/handoff serve} of the built distribution in its own process, on a free port it picks itself
 * ({@code --port 0}; the port is read from the log line that announces it), plus an HTTP client for it.
 */
final class ServerProcess
        implements AutoCloseable
{
    static final Path DIST = Path.of(System.getProperty("handoff.dist.home", "target/handoff"));
    static final ObjectMapper JSON = new ObjectMapper();
    // The port counts once something follows it on the line: a line still being written may end mid-number.
    private static final Pattern LISTENING = Pattern.compile(" on http://127\\.0\\.0\\.1:(\\d+)[^\\d]");

    final Process process;
    final Path log;
    final int port;
    final HttpClient client = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();

    private ServerProcess(Process process, Path log, int port)
    {
        this.process = process;
        this.log = log;
        this.port = port;
    }

    /** Starts {@code handoff serve --role colocated --port 0 args} and waits (at most two minutes) until it listens. */
    static ServerProcess start(Path workDir, String... args)
            throws IOException
    {
        return serve(workDir, "colocated", args);
    }

    /** Starts {@code handoff serve --role ROLE --port 0 args} and waits until it listens. */
    static ServerProcess serve(Path workDir, String role, String... args)
            throws IOException
    {
        return serve(workDir, role, 0, args);
    }

    /** Starts {@code handoff serve --role ROLE --port PORT args} (0: a free port) and waits until it listens. */
    static ServerProcess serve(Path workDir, String role, int port, String... args)
            throws IOException
    {
        List<String> command = new ArrayList<>(List.of("serve", "--role", role, "--port", Integer.toString(port)));
        command.addAll(List.of(args));
        return launch(workDir, role, command);
    }

    /** Starts {@code handoff COMMAND...} (a server that logs "... on http://127.0.0.1:PORT") and waits until it listens. */
    static ServerProcess launch(Path workDir, String name, List<String> arguments)
            throws IOException
    {
        List<String> command = Launcher.command(DIST, arguments.toArray(String[]::new));
        Path log = Files.createTempFile(workDir, name, ".log");
        Process process = Launcher.builder(workDir, command).redirectErrorStream(true).redirectOutput(log.toFile()).start();
        long deadline = System.nanoTime() + Duration.ofMinutes(2).toNanos();
        while (System.nanoTime() < deadline) {
            Matcher listening = LISTENING.matcher(Files.readString(log));
            if (listening.find()) {
                return new ServerProcess(process, log, Integer.parseInt(listening.group(1)));
            }
            if (!process.isAlive()) {
                throw new AssertionError(String.join(" ", command) + " exited " + process.exitValue() + " before listening:\n" + Files.readString(log));
            }
            LockSupport.parkNanos(50_000_000); // waiting for a process to start: poll its log, bounded
        }
        process.destroyForcibly();
        throw new AssertionError(String.join(" ", command) + " did not listen within 2 minutes:\n" + Files.readString(log));
    }

    /**
     * {@code handoff router} in front of {@code prefill} and {@code decode}, polling their health every 200 ms, once it
     * reports both healthy (at most a minute).
     */
    static ServerProcess router(Path workDir, ServerProcess prefill, ServerProcess decode)
            throws IOException
    {
        return router(workDir, List.of(prefill), List.of(decode));
    }

    /**
     * {@code handoff router} in front of {@code prefills} and {@code decodes} with {@code options} ({@code -Dkey=value}),
     * polling their health every 200 ms, once it reports them all healthy (at most a minute).
     */
    static ServerProcess router(Path workDir, List<ServerProcess> prefills, List<ServerProcess> decodes, String... options)
            throws IOException
    {
        List<String> args = new ArrayList<>(List.of("--port", "0"));
        prefills.forEach(p -> args.addAll(List.of("--prefill", "http://127.0.0.1:" + p.port)));
        decodes.forEach(d -> args.addAll(List.of("--decode", "http://127.0.0.1:" + d.port)));
        args.addAll(List.of(options));
        return router(workDir, args, prefills.size() + decodes.size());
    }

    /** {@code handoff router --port PORT} (0: a free port) in front of the servers on these ports, once both are healthy. */
    static ServerProcess router(Path workDir, int port, int prefillPort, int decodePort)
            throws IOException
    {
        return router(workDir, List.of("--port", Integer.toString(port), "--prefill", "http://127.0.0.1:" + prefillPort, "--decode",
                "http://127.0.0.1:" + decodePort), 2);
    }

    /**
     * {@code handoff router ARGS}, polling its servers' health every 200 ms, once it reports {@code healthyServers} of them
     * healthy (at most a minute): with a store's discovery, the servers it found there.
     */
    static ServerProcess router(Path workDir, List<String> arguments, int healthyServers)
            throws IOException
    {
        List<String> command = new ArrayList<>(List.of("router"));
        command.addAll(arguments);
        command.addAll(List.of("-Dhandoff.router.health-interval=200ms", "-Dhandoff.router.health-timeout=1s"));
        ServerProcess router = launch(workDir, "router", command);
        long deadline = System.nanoTime() + Duration.ofSeconds(60).toNanos();
        while (true) {
            int healthy = 0;
            for (JsonNode backend : json(router.get("/backends").body())) {
                healthy += backend.get("healthy").asBoolean() ? 1 : 0;
            }
            if (healthy == healthyServers) {
                return router;
            }
            if (System.nanoTime() > deadline) {
                throw new AssertionError("router backends not healthy: " + router.get("/backends").body() + "\n" + router.logText());
            }
            LockSupport.parkNanos(50_000_000); // waiting for the router's first health polls: bounded
        }
    }

    String logText()
    {
        try {
            return Files.readString(log);
        }
        catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    URI uri(String path)
    {
        return URI.create("http://127.0.0.1:" + port + path);
    }

    HttpResponse<String> get(String path)
    {
        return send(HttpRequest.newBuilder(uri(path)).GET().build(), HttpResponse.BodyHandlers.ofString());
    }

    HttpResponse<String> post(String path, String body)
    {
        return send(HttpRequest.newBuilder(uri(path)).header("Content-Type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString(body)).build(), HttpResponse.BodyHandlers.ofString());
    }

    /** A POST whose body is read line by line as it arrives (server-sent events). */
    HttpResponse<Stream<String>> stream(String path, String body)
    {
        return send(HttpRequest.newBuilder(uri(path)).header("Content-Type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString(body)).build(), HttpResponse.BodyHandlers.ofLines());
    }

    private <T> HttpResponse<T> send(HttpRequest request, HttpResponse.BodyHandler<T> handler)
    {
        try {
            return client.send(request, handler);
        }
        catch (IOException e) {
            throw new UncheckedIOException(request.method() + " " + request.uri() + " failed; server log:\n" + logText(), e);
        }
        catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new AssertionError(e);
        }
    }

    /** A {@code /generate} body for {@code prompt}: greedy, {@code maxNewTokens} new tokens, EOS ignored (as {@link Launcher#colocated}). */
    static String greedyBody(String prompt, int maxNewTokens)
    {
        ObjectNode body = JSON.createObjectNode();
        body.put("text", prompt);
        ObjectNode sampling = body.putObject("sampling_params");
        sampling.put("max_new_tokens", maxNewTokens);
        sampling.put("temperature", 0);
        sampling.put("ignore_eos", true);
        return body.toString();
    }

    static java.util.List<Integer> outputIds(JsonNode result)
    {
        java.util.List<Integer> ids = new ArrayList<>();
        result.get("output_ids").forEach(id -> ids.add(id.asInt()));
        return ids;
    }

    /** The value of one sample of this server's {@code /metrics}, e.g. {@code handoff_kv_pages{state="free"}}. */
    double metric(String sample)
    {
        String text = get("/metrics").body();
        return text.lines().filter(line -> line.startsWith(sample + " ")).findFirst()
                .map(line -> Double.parseDouble(line.substring(sample.length() + 1).strip()))
                .orElseThrow(() -> new AssertionError("no metric " + sample + " in:\n" + text));
    }

    /** Polls a metric until it satisfies {@code condition} (bounded: 30 s). */
    /** Waits until {@code /health} answers other than 200, failing after 10 s (a lost rank must be noticed within seconds). */
    void awaitUnhealthy()
            throws InterruptedException
    {
        long deadline = System.nanoTime() + java.time.Duration.ofSeconds(10).toNanos();
        while (get("/health").statusCode() == 200) {
            org.assertj.core.api.Assertions.assertThat(System.nanoTime()).as("/health still 200 10 s after the rank was lost").isLessThan(deadline);
            Thread.sleep(100); // polling a server's state, bounded: not provoking a race
        }
    }

    void awaitMetric(String sample, java.util.function.DoublePredicate condition)
    {
        long deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos();
        double value = metric(sample);
        while (!condition.test(value)) {
            if (System.nanoTime() > deadline) {
                throw new AssertionError(sample + " stayed at " + value + "; log:\n" + logText());
            }
            LockSupport.parkNanos(50_000_000);
            value = metric(sample);
        }
    }

    /**
     * Pages neither free nor held by the prefix cache once nothing runs: there must be none. A request that
     * has finished may still be releasing its pages (a prefill waits for the decode's word), so this polls,
     * bounded: a leak stays, a release ends.
     */
    /**
     * For a router: until its {@code /backends} counts no request in flight on any server (a prefill's count drops when
     * its own answer arrives, which may be after the decode's answer went to the client), at most 30 s.
     */
    void awaitNothingInFlight()
    {
        long deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos();
        while (true) {
            boolean idle = true;
            for (JsonNode backend : json(get("/backends").body())) {
                idle &= backend.path("in_flight").asInt() == 0;
            }
            if (idle) {
                return;
            }
            if (System.nanoTime() > deadline) {
                throw new AssertionError("requests still in flight: " + get("/backends").body());
            }
            LockSupport.parkNanos(10_000_000);
        }
    }

    void assertNoPagesLeaked()
    {
        long deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos();
        while (true) {
            Map<String, Double> samples = PrometheusFormat.parse(get("/metrics").body());
            double held = samples.get("handoff_kv_pool_pages") - samples.get("handoff_kv_pages{state=\"free\"}")
                    - samples.get("handoff_prefix_cache_pages");
            if (samples.get("handoff_running_requests") == 0 && held == 0) {
                return;
            }
            if (System.nanoTime() > deadline) {
                throw new AssertionError(held + " KV pages leaked (" + samples.get("handoff_running_requests") + " requests running); log:\n"
                        + logText());
            }
            LockSupport.parkNanos(50_000_000);
        }
    }

    static JsonNode json(String text)
    {
        try {
            return JSON.readTree(text);
        }
        catch (IOException e) {
            throw new AssertionError("not JSON: " + text, e);
        }
    }

    /** Sends SIGTERM (the launcher execs the JVM, so the JVM gets it) and waits at most {@code timeout} for the exit. */
    boolean terminate(Duration timeout)
            throws InterruptedException
    {
        process.destroy();
        return process.waitFor(timeout.toMillis(), TimeUnit.MILLISECONDS);
    }

    @Override
    public void close()
            throws InterruptedException
    {
        if (process.isAlive() && !terminate(Duration.ofMinutes(1))) {
            process.destroyForcibly().waitFor();
        }
        client.close();
    }
}
