package io.handoff.http;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.handoff.core.fault.FaultInjector;
import io.handoff.core.kv.KvGeometry;
import io.handoff.core.kv.KvPool;
import io.handoff.core.model.ByteTokenizer;
import io.handoff.core.model.ModelConfig;
import io.handoff.core.model.SyntheticWeights;
import io.handoff.core.model.Transformer;
import io.handoff.core.prefix.RadixCache;
import io.handoff.core.runtime.ChatTemplateText;
import io.handoff.core.scheduler.KvHandoff;
import io.handoff.core.scheduler.Scheduler;
import io.handoff.core.scheduler.SchedulerConfig;
import io.handoff.core.scheduler.SchedulerStats;
import io.handoff.http.base.ServerConfig;
import io.handoff.spi.attention.KvDtype;
import io.handoff.testkit.model.ReferenceAttention;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.Optional;
import java.util.concurrent.locks.LockSupport;
import java.util.function.Predicate;
import java.util.stream.Stream;

/**
 * The API server in this process over the real scheduler, model and KV pool, with
 * {@link ReferenceAttention} (engine-core has no attention plugin on its module path), on a free
 * loopback port; plus a client for it.
 */
public final class LocalServer
        implements AutoCloseable
{
    static final ObjectMapper JSON = new ObjectMapper();
    static final int PAGE_SIZE = 16;

    final ModelConfig model = ModelConfig.byName("tiny-mla");
    final KvPool kv;
    final Scheduler scheduler;
    final ApiServer server;
    final HttpClient client = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();
    private final Transformer transformer;
    private final boolean ownsTransformer;

    LocalServer(SchedulerConfig schedulerConfig, ServerConfig serverConfig, int pages)
            throws IOException
    {
        this(schedulerConfig, serverConfig, pages, null);
    }

    /** Over {@code shared} (one server at a time: building the model's weights is the slow part), or a model of its own when null. */
    LocalServer(SchedulerConfig schedulerConfig, ServerConfig serverConfig, int pages, Transformer shared)
            throws IOException
    {
        this(schedulerConfig, serverConfig, pages, shared, KvHandoff.NONE, Optional.empty());
    }

    /** With the scheduler's {@code handoff} (a stand-in for a prefill's or a decode's) and the model's {@code chatTemplate}. */
    LocalServer(SchedulerConfig schedulerConfig, ServerConfig serverConfig, int pages, Transformer shared, KvHandoff handoff,
            Optional<ChatTemplateText> chatTemplate)
            throws IOException
    {
        kv = KvPool.allocate(KvGeometry.of(model.attentionGeometry(), model.layers(), KvDtype.F32, PAGE_SIZE), pages);
        ownsTransformer = shared == null;
        transformer = shared != null ? shared : newModel();
        scheduler = new Scheduler(schedulerConfig, transformer, kv, new RadixCache(PAGE_SIZE, kv.pagePool()),
                new ReferenceAttention(model.attentionGeometry(), kv.view()), FaultInjector.NONE, handoff);
        server = ApiServer.start(serverConfig, scheduler, model, new ByteTokenizer(), chatTemplate, Optional.empty());
    }

    static Transformer newModel()
    {
        ModelConfig config = ModelConfig.byName("tiny-mla");
        return new Transformer(config, new SyntheticWeights(config.weightsSeed()), 2);
    }

    static LocalServer standard()
            throws IOException
    {
        return new LocalServer(new SchedulerConfig(8, 256, 64, true, 2), ServerConfig.loopback(), 512);
    }

    URI uri(String path)
    {
        return URI.create("http://127.0.0.1:" + server.address().getPort() + path);
    }

    HttpResponse<String> get(String path)
    {
        return send(HttpRequest.newBuilder(uri(path)).GET().build());
    }

    HttpResponse<String> post(String path, String body)
    {
        return send(HttpRequest.newBuilder(uri(path)).header("Content-Type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString(body)).build());
    }

    /** Starts a POST and returns its body as lines, read as they arrive. */
    HttpResponse<Stream<String>> stream(String path, String body)
    {
        try {
            return client.send(HttpRequest.newBuilder(uri(path)).POST(HttpRequest.BodyPublishers.ofString(body)).build(),
                    HttpResponse.BodyHandlers.ofLines());
        }
        catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new AssertionError(e);
        }
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

    static JsonNode json(HttpResponse<String> response)
    {
        try {
            return JSON.readTree(response.body());
        }
        catch (IOException e) {
            throw new AssertionError("not JSON (HTTP " + response.statusCode() + "): " + response.body(), e);
        }
    }

    public static JsonNode json(String text)
    {
        try {
            return JSON.readTree(text);
        }
        catch (IOException e) {
            throw new AssertionError("not JSON: " + text, e);
        }
    }

    /** Waits until no request runs, waits or holds pages and the server has none in flight: what every test leaves behind. */
    void awaitNothingInFlight()
    {
        awaitStats(stats -> stats.running() == 0 && stats.waiting() == 0 && requestPages(stats) == 0 && server.inFlight() == 0,
                "every request to end and return its pages");
    }

    /** Polls the scheduler's published stats until {@code condition} holds (bounded: fails after a minute). */
    SchedulerStats awaitStats(Predicate<SchedulerStats> condition, String what)
    {
        long deadline = System.nanoTime() + Duration.ofMinutes(1).toNanos();
        while (System.nanoTime() < deadline) {
            SchedulerStats stats = scheduler.stats();
            if (condition.test(stats)) {
                return stats;
            }
            LockSupport.parkNanos(2_000_000); // stats are published once per scheduler loop: poll, bounded
        }
        throw new AssertionError("timed out waiting for " + what + "; last stats " + scheduler.stats());
    }

    /** Pages held by requests (not by the prefix cache). */
    static int requestPages(SchedulerStats stats)
    {
        return stats.pages().owned() + stats.pages().receiving() - stats.cachedPages();
    }

    @Override
    public void close()
    {
        server.close();
        scheduler.close();
        if (ownsTransformer) {
            transformer.close();
        }
        kv.close();
    }
}
