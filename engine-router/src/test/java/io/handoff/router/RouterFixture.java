package io.handoff.router;

import com.fasterxml.jackson.databind.JsonNode;
import com.typesafe.config.ConfigFactory;
import io.handoff.cluster.Membership;
import io.handoff.http.base.ServerConfig;
import io.handoff.trace.Timelines;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.locks.LockSupport;
import java.util.function.BooleanSupplier;
import java.util.function.Supplier;
import java.util.stream.Stream;

/**
 * A router in this process in front of fake prefill and decode servers, plus a client for it. Health polls
 * run only when a test calls {@link #poll()} (the interval is an hour), so a test decides when the router
 * notices a change.
 */
public final class RouterFixture
        implements AutoCloseable
{
    /**
     * The router's reference.conf defaults, but: health polls only when a test asks, prefills round-robin and decodes
     * least-load, no decode-local fallback (what these tests were written against; the policies and the fallback have
     * tests of their own) and retries without a pause.
     */
    static final RouterConfig CONFIG = config(Duration.ofSeconds(5), Map.of("handoff.router.policy.prefill", "round-robin",
            "handoff.router.policy.decode", "least-load", "handoff.router.fallback", "none",
            "handoff.router.retry.initial-backoff", "0s", "handoff.router.retry.max-backoff", "0s"));

    /** The reference defaults with health polls only when a test asks, bounded by {@code healthTimeout}, and {@code settings}. */
    static RouterConfig config(Duration healthTimeout, Map<String, String> settings)
    {
        Map<String, Object> all = new HashMap<>(settings);
        all.put("handoff.router.health-interval", "1h");
        all.put("handoff.router.health-timeout", healthTimeout.toMillis() + "ms");
        all.put("handoff.router.request-timeout", "30s");
        all.put("handoff.router.connect-timeout", "5s");
        return RouterConfig.from(ConfigFactory.parseMap(all).withFallback(ConfigFactory.parseResources(RouterConfig.class, "/reference.conf")).resolve());
    }

    final List<FakeBackend> prefills;
    final List<FakeBackend> decodes;
    final Router router;
    final HttpClient client = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();

    private RouterFixture(List<FakeBackend> prefills, List<FakeBackend> decodes, RouterConfig config, ServerConfig serverConfig)
            throws IOException, InterruptedException
    {
        this.prefills = prefills;
        this.decodes = decodes;
        decodes.forEach(decode -> decode.prefills = List.copyOf(prefills));
        this.router = Router.start(serverConfig, config,
                prefills.stream().map(FakeBackend::url).toList(), decodes.stream().map(FakeBackend::url).toList());
    }

    private RouterFixture(List<FakeBackend> prefills, List<FakeBackend> decodes, Membership membership)
            throws IOException, InterruptedException
    {
        this.prefills = prefills;
        this.decodes = decodes;
        decodes.forEach(decode -> decode.prefills = List.copyOf(prefills));
        this.router = Router.start(ServerConfig.loopback(), CONFIG, membership, new Timelines(16));
    }

    /**
     * A router following {@code membership} instead of fixed lists; {@code prefills} and {@code decodes} are the fake
     * servers the test may list in it (they run whether listed or not).
     */
    static RouterFixture following(Membership membership, List<FakeBackend> prefills, List<FakeBackend> decodes)
            throws IOException, InterruptedException
    {
        return new RouterFixture(prefills, decodes, membership);
    }

    /** {@code prefillCount} prefills (controls 10.0.0.1:7001, 10.0.0.2:7001, ...) and {@code decodeCount} decodes. */
    static RouterFixture start(int prefillCount, int decodeCount)
            throws IOException, InterruptedException
    {
        return start(prefillCount, decodeCount, CONFIG);
    }

    static RouterFixture start(int prefillCount, int decodeCount, RouterConfig config)
            throws IOException, InterruptedException
    {
        return start(prefillCount, decodeCount, config, ServerConfig.loopback());
    }

    /** A router listening as {@code serverConfig} says (its API keys, its cluster MAC). */
    static RouterFixture start(int prefillCount, int decodeCount, RouterConfig config, ServerConfig serverConfig)
            throws IOException, InterruptedException
    {
        List<FakeBackend> prefills = new ArrayList<>();
        List<FakeBackend> decodes = new ArrayList<>();
        for (int i = 1; i <= prefillCount; i++) {
            prefills.add(FakeBackend.prefill("p" + i, "10.0.0." + i + ":7001"));
        }
        for (int i = 1; i <= decodeCount; i++) {
            decodes.add(FakeBackend.decode("d" + i));
        }
        return new RouterFixture(prefills, decodes, config, serverConfig);
    }

    FakeBackend prefill()
    {
        return prefills.getFirst();
    }

    FakeBackend decode()
    {
        return decodes.getFirst();
    }

    void poll()
            throws InterruptedException
    {
        router.probeBackends();
    }

    URI uri(String path)
    {
        return URI.create("http://127.0.0.1:" + router.address().getPort() + path);
    }

    HttpResponse<String> get(String path)
    {
        return send(HttpRequest.newBuilder(uri(path)).timeout(Duration.ofSeconds(30)).GET().build());
    }

    HttpResponse<String> post(String path, String body)
    {
        return send(request(path, body));
    }

    HttpResponse<String> post(String path, String body, String authorization)
    {
        return send(HttpRequest.newBuilder(uri(path)).timeout(Duration.ofSeconds(30)).header("Authorization", authorization)
                .POST(HttpRequest.BodyPublishers.ofString(body)).build());
    }

    CompletableFuture<HttpResponse<String>> postAsync(String path, String body)
    {
        return client.sendAsync(request(path, body), HttpResponse.BodyHandlers.ofString());
    }

    /** Starts a POST and returns its body as lines, read as they arrive. */
    HttpResponse<Stream<String>> stream(String path, String body)
    {
        try {
            return client.send(request(path, body), HttpResponse.BodyHandlers.ofLines());
        }
        catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new AssertionError(e);
        }
    }

    private HttpRequest request(String path, String body)
    {
        return HttpRequest.newBuilder(uri(path)).timeout(Duration.ofSeconds(30)).header("Content-Type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString(body)).build();
    }

    private HttpResponse<String> send(HttpRequest request)
    {
        try {
            return client.send(request, HttpResponse.BodyHandlers.ofString());
        }
        catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new AssertionError(e);
        }
    }

    /** How long a test waits for something the router does after the client has its answer. */
    static final Duration PATIENCE = Duration.ofSeconds(30);

    /** Until {@code condition} holds; fails, saying {@code what}, after {@link #PATIENCE}. */
    static void await(BooleanSupplier condition, Supplier<String> what)
    {
        long deadline = System.nanoTime() + PATIENCE.toNanos();
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() > deadline) {
                throw new AssertionError("not within " + PATIENCE + ": " + what.get());
            }
            LockSupport.parkNanos(10_000_000);
        }
    }

    /** The router's {@code /backends} entry of the server at {@code url}. */
    JsonNode backend(URI url)
    {
        return entry(json(get("/backends")), url);
    }

    /** The entry of the server at {@code url} in a {@code /backends} listing. */
    static JsonNode entry(JsonNode backends, URI url)
    {
        for (JsonNode entry : backends) {
            if (entry.path("url").asText().equals(url.toString())) {
                return entry;
            }
        }
        throw new AssertionError("no backend " + url + " in " + backends);
    }

    static JsonNode json(HttpResponse<String> response)
    {
        return json(response.body());
    }

    public static JsonNode json(String text)
    {
        try {
            return FakeBackend.JSON.readTree(text);
        }
        catch (IOException e) {
            throw new AssertionError("not JSON: " + text, e);
        }
    }

    @Override
    public void close()
    {
        router.close();
        client.close();
        prefills.forEach(FakeBackend::close);
        decodes.forEach(FakeBackend::close);
    }
}
