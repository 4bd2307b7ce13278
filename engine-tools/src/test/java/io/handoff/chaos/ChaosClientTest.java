package io.handoff.chaos;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

/** How the soak's client tells completed, aborted, failed and hung apart, against a router stand-in on loopback. */
class ChaosClientTest
{
    private static final ObjectMapper JSON = new ObjectMapper();

    private HttpServer server;
    private final List<String> aborts = new CopyOnWriteArrayList<>();
    private final ConcurrentHashMap<String, CountDownLatch> abortLatches = new ConcurrentHashMap<>();
    /** What the stand-in does with the request of index {@code i} ({@code rid} ends with "-i"). */
    private volatile Behaviour behaviour;

    @FunctionalInterface
    interface Behaviour
    {
        void answer(HttpExchange exchange, String rid)
                throws IOException, InterruptedException;
    }

    @BeforeEach
    void start()
            throws IOException
    {
        server = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 0);
        server.setExecutor(Executors.newVirtualThreadPerTaskExecutor());
        server.createContext("/generate", exchange -> {
            try (exchange) {
                String rid = JSON.readTree(exchange.getRequestBody().readAllBytes()).path("rid").asText();
                behaviour.answer(exchange, rid);
            }
            catch (InterruptedException | IOException e) {
                // the client went away: nothing to answer
            }
        });
        server.createContext("/abort_request", exchange -> {
            try (exchange) {
                String rid = JSON.readTree(exchange.getRequestBody().readAllBytes()).path("rid").asText();
                aborts.add(rid);
                latch(rid).countDown();
                byte[] body = "{\"aborted\": true}".getBytes(StandardCharsets.UTF_8);
                exchange.sendResponseHeaders(200, body.length);
                exchange.getResponseBody().write(body);
            }
        });
        server.start();
    }

    @AfterEach
    void stop()
    {
        server.stop(0);
    }

    @Test
    void aStreamThatEndsWithAFinishReasonIsCompletedWithItsTokens()
    {
        behaviour = (exchange, rid) -> {
            OutputStream out = events(exchange);
            event(out, "{\"output_ids\": [4], \"meta_info\": {\"finish_reason\": null}}");
            event(out, "{\"output_ids\": [4, 5, 6], \"meta_info\": {\"finish_reason\": {\"type\": \"length\", \"length\": 3}}}");
            event(out, "[DONE]");
        };
        RequestOutcome outcome = run(0, AbortPlan.NONE);
        assertThat(outcome.kind()).isEqualTo(RequestOutcome.Kind.COMPLETED);
        assertThat(outcome.outputIds()).containsExactly(4, 5, 6);
    }

    @Test
    void anErrorEventOrAnErrorStatusIsAFailureWithTheCauseTheServerNamed()
    {
        behaviour = (exchange, rid) -> {
            OutputStream out = events(exchange);
            event(out, "{\"error\": {\"message\": \"corrupt\", \"code\": \"internal_error\", \"cause\": \"checksum_mismatch\"}}");
            event(out, "[DONE]");
        };
        RequestOutcome event = run(1, AbortPlan.NONE);
        assertThat(event.kind()).isEqualTo(RequestOutcome.Kind.FAILED);
        assertThat(event.cause()).isEqualTo("checksum_mismatch");
        assertThat(event.detail()).isEqualTo("corrupt");

        behaviour = (exchange, rid) -> {
            byte[] body = "{\"error\": {\"message\": \"failed twice\", \"code\": \"kv_transfer_failed\", \"cause\": \"peer_lost\"}}".getBytes(StandardCharsets.UTF_8);
            exchange.sendResponseHeaders(502, body.length);
            exchange.getResponseBody().write(body);
        };
        RequestOutcome status = run(2, AbortPlan.NONE);
        assertThat(status.kind()).isEqualTo(RequestOutcome.Kind.FAILED);
        assertThat(status.cause()).isEqualTo("peer_lost");

        behaviour = (exchange, rid) -> {
            byte[] body = "busy".getBytes(StandardCharsets.UTF_8);
            exchange.sendResponseHeaders(503, body.length);
            exchange.getResponseBody().write(body);
        };
        assertThat(run(3, AbortPlan.NONE).cause()).isEqualTo("http_503");
    }

    @Test
    void anAbortRequestDuringDecodeIsSentAfterTheDrawnTokensAndTheAbortedEndIsAborted()
    {
        behaviour = (exchange, rid) -> {
            OutputStream out = events(exchange);
            event(out, "{\"output_ids\": [4], \"meta_info\": {\"finish_reason\": null}}");
            event(out, "{\"output_ids\": [4, 5], \"meta_info\": {\"finish_reason\": null}}");
            if (latch(rid).await(30, TimeUnit.SECONDS)) {
                event(out, "{\"output_ids\": [4, 5], \"meta_info\": {\"finish_reason\": {\"type\": \"abort\", \"message\": \"aborted\"}}}");
            }
            event(out, "[DONE]");
        };
        RequestOutcome outcome = run(4, new AbortPlan(AbortPlan.Phase.DURING_DECODE, AbortPlan.Method.ABORT_REQUEST, 2));
        assertThat(outcome.kind()).isEqualTo(RequestOutcome.Kind.ABORTED);
        assertThat(outcome.outputIds()).containsExactly(4, 5);
        assertThat(aborts).containsExactly("test-4");
    }

    @Test
    void aDisconnectDuringDecodeIsAbortedWithWhatArrivedAndSendsNoAbortRequest()
    {
        behaviour = (exchange, rid) -> {
            OutputStream out = events(exchange);
            event(out, "{\"output_ids\": [7], \"meta_info\": {\"finish_reason\": null}}");
            // the client closes after its first token; what it would have read next never counts
            event(out, "{\"output_ids\": [7, 8], \"meta_info\": {\"finish_reason\": {\"type\": \"length\", \"length\": 2}}}");
            event(out, "[DONE]");
        };
        RequestOutcome outcome = run(5, new AbortPlan(AbortPlan.Phase.DURING_DECODE, AbortPlan.Method.DISCONNECT, 1));
        assertThat(outcome.kind()).isEqualTo(RequestOutcome.Kind.ABORTED);
        assertThat(outcome.outputIds()).containsExactly(7);
        assertThat(aborts).isEmpty();
    }

    @Test
    void aStreamWithoutAnEndByTheDeadlineIsHung()
    {
        CountDownLatch never = new CountDownLatch(1);
        behaviour = (exchange, rid) -> {
            OutputStream out = events(exchange);
            event(out, "{\"output_ids\": [1], \"meta_info\": {\"finish_reason\": null}}");
            never.await(30, TimeUnit.SECONDS);
        };
        try (ChaosClient client = new ChaosClient(url(), "test", 4, Duration.ofMillis(500))) {
            RequestOutcome outcome = client.run(6, "prompt", AbortPlan.NONE);
            assertThat(outcome.kind()).isEqualTo(RequestOutcome.Kind.HUNG);
            assertThat(outcome.outputIds()).containsExactly(1);
        }
        finally {
            never.countDown();
        }
    }

    private RequestOutcome run(int index, AbortPlan plan)
    {
        try (ChaosClient client = new ChaosClient(url(), "test", 4, Duration.ofSeconds(30))) {
            return client.run(index, "prompt", plan);
        }
    }

    private URI url()
    {
        return URI.create("http://127.0.0.1:" + server.getAddress().getPort());
    }

    private CountDownLatch latch(String rid)
    {
        return abortLatches.computeIfAbsent(rid, key -> new CountDownLatch(1));
    }

    private static OutputStream events(HttpExchange exchange)
            throws IOException
    {
        exchange.getResponseHeaders().set("Content-Type", "text/event-stream");
        exchange.sendResponseHeaders(200, 0);
        OutputStream out = exchange.getResponseBody();
        out.flush();
        return out;
    }

    private static void event(OutputStream out, String data)
            throws IOException
    {
        out.write(("data: " + data + "\n\n").getBytes(StandardCharsets.UTF_8));
        out.flush();
    }
}
