package io.handoff.http;

import com.fasterxml.jackson.databind.JsonNode;
import io.handoff.core.model.Transformer;
import io.handoff.core.scheduler.SchedulerConfig;
import io.handoff.http.base.ServerConfig;
import io.handoff.http.testing.PrometheusFormat;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.Iterator;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.locks.LockSupport;
import java.util.stream.Stream;

import static io.handoff.http.ApiServerTest.assertError;
import static io.handoff.http.ApiServerTest.nextEvent;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** Limits and the end of life: body size, a full waiting queue, graceful shutdown. Each test has its own server. */
class ApiServerLimitsTest
{
    private static Transformer model;

    @BeforeAll
    static void buildModel()
    {
        model = LocalServer.newModel();
    }

    @AfterAll
    static void closeModel()
    {
        model.close();
    }

    private static final String LONG_STREAM = "{\"text\": \"long\", \"rid\": \"%s\", \"stream\": true, "
            + "\"sampling_params\": {\"max_new_tokens\": 3000, \"ignore_eos\": true}}";

    @Test
    void bodyOverTheLimitIsRefusedWith413WhetherItsLengthIsDeclaredOrNot()
            throws Exception
    {
        ServerConfig config = new ServerConfig("127.0.0.1", 0, Duration.ofSeconds(10), 1024, Duration.ofSeconds(1), Duration.ofSeconds(20));
        try (LocalServer local = new LocalServer(new SchedulerConfig(4, 256, 16, true, 2), config, 64, model)) {
            String body = "{\"prompt\": \"" + "a".repeat(8 * 1024) + "\"}";

            HttpResponse<String> declared = local.post("/v1/completions", body);
            // A publisher of unknown length makes the client send the body chunked, without Content-Length.
            HttpResponse<String> chunked = local.client.send(HttpRequest.newBuilder(local.uri("/v1/completions"))
                    .POST(HttpRequest.BodyPublishers.fromPublisher(HttpRequest.BodyPublishers.ofString(body))).build(),
                    HttpResponse.BodyHandlers.ofString());
            HttpResponse<String> small = local.post("/v1/completions", "{\"prompt\": \"ok\", \"max_tokens\": 2}");

            for (HttpResponse<String> response : List.of(declared, chunked)) {
                assertThat(response.statusCode()).as(response.body()).isEqualTo(413);
                assertError(LocalServer.json(response), "body_too_large", "", "the request body is larger than 1024 bytes (handoff.server.max-body-bytes)");
            }
            assertThat(small.statusCode()).as(small.body()).isEqualTo(200);
        }
    }

    @Test
    void requestBeyondAFullWaitingQueueGets503WithRetryAfter()
            throws Exception
    {
        // One running request and one waiting fill the scheduler: the third is refused.
        try (LocalServer local = new LocalServer(new SchedulerConfig(1, 256, 1, true, 2), ServerConfig.loopback(), 512, model);
                ExecutorService executor = Executors.newVirtualThreadPerTaskExecutor()) {
            Iterator<String> running = local.stream("/generate", LONG_STREAM.formatted("running")).body().iterator();
            nextEvent(running);
            Future<HttpResponse<String>> waiting = executor.submit(() -> local.post("/generate", "{\"text\": \"queued\", \"rid\": \"waiting\"}"));
            local.awaitStats(stats -> stats.waiting() == 1, "the second request to wait for admission");

            HttpResponse<String> refused = local.post("/v1/completions", "{\"prompt\": \"one too many\"}");

            assertThat(refused.statusCode()).as(refused.body()).isEqualTo(503);
            assertThat(refused.headers().firstValue("Retry-After")).contains("1");
            assertError(LocalServer.json(refused), "overloaded", "", "the waiting queue is full (1 requests): retry later");
            assertThat(PrometheusFormat.parse(local.get("/metrics").body()).get("handoff_requests_rejected_total{reason=\"overloaded\"}")).isEqualTo(1);

            assertThat(local.post("/abort_request", "{\"rid\": \"waiting\"}").statusCode()).isEqualTo(200);
            assertThat(local.post("/abort_request", "{\"rid\": \"running\"}").statusCode()).isEqualTo(200);
            JsonNode aborted = LocalServer.json(waiting.get());
            assertThat(aborted.get("meta_info").get("finish_reason").get("type").asText()).isEqualTo("abort");
            assertThat(aborted.get("output_ids")).isEmpty();
            running.forEachRemaining(line -> {});
            local.awaitStats(stats -> stats.running() == 0 && stats.waiting() == 0 && LocalServer.requestPages(stats) == 0, "every page back");
        }
    }

    @Test
    void shutdownStopsAdmittingWaitsForInFlightRequestsAndFreesTheirPages()
            throws Exception
    {
        ServerConfig config = new ServerConfig("127.0.0.1", 0, Duration.ofMinutes(5), 1 << 20, Duration.ofSeconds(1), Duration.ofSeconds(20));
        try (LocalServer local = new LocalServer(new SchedulerConfig(4, 256, 16, true, 2), config, 512, model);
                ExecutorService executor = Executors.newVirtualThreadPerTaskExecutor()) {
            HttpResponse<Stream<String>> response = local.stream("/generate", LONG_STREAM.formatted("in-flight"));
            Iterator<String> lines = response.body().iterator();
            nextEvent(lines);

            Future<?> shutdown = executor.submit(() -> {
                local.server.shutdown(config.gracePeriod());
                return null;
            });
            awaitStatus(local, "/health", 503);
            HttpResponse<String> refused = local.post("/generate", "{\"text\": \"late\"}");
            assertThat(refused.statusCode()).as(refused.body()).isEqualTo(503);
            assertError(LocalServer.json(refused), "draining", "", "the server is shutting down");
            assertThat(shutdown.isDone()).as("shutdown waits for the in-flight request").isFalse();

            // The in-flight request ends (here by abort); the shutdown then completes well inside its grace period.
            assertThat(local.post("/abort_request", "{\"rid\": \"in-flight\"}").statusCode()).isEqualTo(200);
            String last = lastEvents(lines).getFirst();
            shutdown.get();

            assertThat(LocalServer.json(last).get("meta_info").get("finish_reason").get("type").asText()).isEqualTo("abort");
            assertThat(local.server.inFlight()).isZero();
            local.awaitStats(stats -> stats.running() == 0 && LocalServer.requestPages(stats) == 0, "every page back");
            assertThatThrownBy(() -> local.client.send(HttpRequest.newBuilder(local.uri("/health")).build(), HttpResponse.BodyHandlers.ofString()))
                    .isInstanceOf(IOException.class);
        }
    }

    @Test
    void shutdownAbortsRequestsThatOutliveTheGracePeriod()
            throws Exception
    {
        // Requests still running at 3/4 of the grace period are aborted and get until 9/10 of it (300 ms here) to end their streams.
        ServerConfig config = new ServerConfig("127.0.0.1", 0, Duration.ofSeconds(2), 1 << 20, Duration.ofSeconds(1), Duration.ofSeconds(20));
        try (LocalServer local = new LocalServer(new SchedulerConfig(4, 256, 16, true, 2), config, 512, model);
                ExecutorService executor = Executors.newVirtualThreadPerTaskExecutor()) {
            Iterator<String> lines = local.stream("/generate", LONG_STREAM.formatted("too-long")).body().iterator();
            nextEvent(lines);
            // Keep reading while the server shuts down: a client that stops reading would leave the stream blocked on a full socket.
            Future<List<String>> tail = executor.submit(() -> lastEvents(lines));

            local.server.shutdown(config.gracePeriod());

            List<String> last = tail.get();
            assertThat(last.getLast()).isEqualTo("[DONE]");
            JsonNode outcome = LocalServer.json(last.getFirst());
            assertThat(outcome.get("meta_info").get("finish_reason").get("type").asText()).isEqualTo("abort");
            assertThat(outcome.get("meta_info").get("completion_tokens").asInt()).isLessThan(3000);
            assertThat(local.server.inFlight()).isZero();
            local.awaitStats(stats -> stats.running() == 0 && LocalServer.requestPages(stats) == 0, "every page back");
        }
    }

    /** The last JSON event and the {@code [DONE]} after it. */
    private static List<String> lastEvents(Iterator<String> lines)
    {
        String previous = null;
        String last = null;
        while (lines.hasNext()) {
            String line = lines.next();
            if (line.startsWith("data: ")) {
                previous = last;
                last = line.substring(6);
            }
        }
        assertThat(last).isEqualTo("[DONE]");
        return List.of(previous, last);
    }

    private static void awaitStatus(LocalServer local, String path, int status)
    {
        for (int i = 0; i < 10_000; i++) {
            if (local.get(path).statusCode() == status) {
                return;
            }
            LockSupport.parkNanos(1_000_000);
        }
        throw new AssertionError(path + " never answered " + status);
    }
}
