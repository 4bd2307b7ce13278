package io.handoff.router;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.handoff.http.testing.PrometheusFormat;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.net.http.HttpResponse;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The decode-local fallback: a request no prefill can take goes to a decode alone, which computes its prompt; and a server
 * that answers "draining" (shutting down, switching role) is retried elsewhere and taken out until it serves again.
 */
class RouterFallbackTest
{
    private static final ObjectMapper JSON = new ObjectMapper();
    // the reference default, which the shared fixture turns off
    private static final RouterConfig DECODE_LOCAL = RouterFixture.CONFIG.withFallback(new RouterConfig.Fallback(RouterConfig.FallbackMode.DECODE_LOCAL, 0));

    private static JsonNode json(HttpResponse<String> response)
            throws IOException
    {
        return JSON.readTree(response.body());
    }

    @Test
    void withNoHealthyPrefillTheRequestGoesToADecodeAloneWithoutARoom()
            throws Exception
    {
        try (RouterFixture fixture = RouterFixture.start(1, 1, DECODE_LOCAL)) {
            fixture.prefill().healthStatus = 503;
            fixture.poll();

            HttpResponse<String> health = fixture.get("/health");
            assertThat(health.statusCode()).as(health.body()).isEqualTo(200);
            assertThat(json(health).path("degraded").asText()).contains("decode-local");

            HttpResponse<String> response = fixture.post("/generate", "{\"text\": \"x\", \"rid\": \"alone\"}");
            assertThat(response.statusCode()).as(response.body()).isEqualTo(200);
            assertThat(json(response).path("served_by").asText()).isEqualTo(fixture.decode().name);
            assertThat(fixture.prefill().received).isEmpty();
            FakeBackend.Received sent = fixture.decode().only();
            assertThat(sent.body().path("bootstrap_local").asBoolean(false)).isTrue();
            assertThat(sent.body().has("bootstrap_room")).isFalse();
            assertThat(sent.body().has("bootstrap_host")).isFalse();
            assertThat(sent.rid()).isEqualTo("alone");
            // the request has ended on the router before its answer went out: the decode's load is as it is for the next one
            JsonNode decodeEntry = fixture.backend(fixture.decode().url());
            assertThat(decodeEntry.path("in_flight").asInt(-1)).as(decodeEntry.toString()).isZero();
            assertThat(decodeEntry.path("outstanding_pages").asLong(-1)).as(decodeEntry.toString()).isZero();

            // a stream comes through as it is produced
            HttpResponse<Stream<String>> stream = fixture.stream("/generate", "{\"text\": \"x\", \"rid\": \"alone-stream\", \"stream\": true}");
            List<String> events = stream.body().filter(line -> !line.isEmpty()).toList();
            assertThat(events).hasSize(4).last().isEqualTo("data: [DONE]");

            Map<String, Double> metrics = PrometheusFormat.parse(fixture.get("/metrics").body());
            assertThat(metrics.get("handoff_router_decode_local_total")).isEqualTo(2.0);
        }
    }

    @Test
    void aDecodeLocalRequestIsAbortedThroughTheRouterOnItsDecode()
            throws Exception
    {
        try (RouterFixture fixture = RouterFixture.start(1, 1, DECODE_LOCAL)) {
            fixture.prefill().healthStatus = 503;
            fixture.poll();
            fixture.decode().generator = RouterForwardingTest::answerOnceAborted;

            java.util.concurrent.CompletableFuture<HttpResponse<String>> running = java.util.concurrent.CompletableFuture.supplyAsync(
                    () -> fixture.post("/generate", "{\"text\": \"x\", \"rid\": \"long\"}"));
            assertThat(fixture.decode().awaitReceived("long")).isTrue();
            HttpResponse<String> aborted = fixture.post("/abort_request", "{\"rid\": \"long\"}");
            assertThat(aborted.statusCode()).as(aborted.body()).isEqualTo(200);
            assertThat(running.join().statusCode()).isEqualTo(200);
            assertThat(fixture.decode().aborted).contains("long");
            assertThat(fixture.post("/abort_request", "{\"rid\": \"unknown\"}").statusCode()).as("a rid in flight nowhere").isEqualTo(404);
        }
    }

    @Test
    void withTheFallbackOffNoHealthyPrefillIsA503()
            throws Exception
    {
        try (RouterFixture fixture = RouterFixture.start(1, 1)) {
            fixture.prefill().healthStatus = 503;
            fixture.poll();

            HttpResponse<String> response = fixture.post("/generate", "{\"text\": \"x\"}");
            assertThat(response.statusCode()).isEqualTo(503);
            assertThat(json(response).path("error").path("code").asText()).isEqualTo("no_healthy_prefill");
            assertThat(fixture.decode().received).isEmpty();
            assertThat(fixture.get("/health").statusCode()).isEqualTo(503);
        }
    }

    @Test
    void aPromptBelowTheThresholdGoesToADecodeAloneEvenWithAPrefillUp()
            throws Exception
    {
        RouterConfig config = RouterFixture.CONFIG.withFallback(new RouterConfig.Fallback(RouterConfig.FallbackMode.DECODE_LOCAL, 10));
        try (RouterFixture fixture = RouterFixture.start(1, 1, config)) {
            assertThat(fixture.post("/generate", "{\"text\": \"short\", \"rid\": \"s\"}").statusCode()).isEqualTo(200);
            assertThat(fixture.post("/generate", "{\"text\": \"a prompt of more than ten chars\", \"rid\": \"l\"}").statusCode()).isEqualTo(200);
            assertThat(fixture.prefill().rids()).containsExactly("l");
            assertThat(fixture.decode().rids()).containsExactly("s", "l");
            assertThat(fixture.decode().received.getFirst().body().path("bootstrap_local").asBoolean(false)).isTrue();
            assertThat(fixture.decode().received.getLast().body().has("bootstrap_local")).isFalse();
        }
    }

    @Test
    void aClientMayNotAskForADecodeAloneItself()
            throws Exception
    {
        try (RouterFixture fixture = RouterFixture.start(1, 1, DECODE_LOCAL)) {
            HttpResponse<String> response = fixture.post("/generate", "{\"text\": \"x\", \"bootstrap_local\": true}");
            assertThat(response.statusCode()).isEqualTo(400);
            assertThat(json(response).path("error").path("param").asText()).isEqualTo("bootstrap_local");
        }
    }

    @Test
    void aPrefillThatAnswersDrainingIsRetriedOnAnotherAndTakenOut()
            throws Exception
    {
        try (RouterFixture fixture = RouterFixture.start(2, 1, DECODE_LOCAL)) {
            FakeBackend switching = fixture.prefills.get(0);
            // as a real decode, it waits for KV the refused prefill never sends, until the router aborts it there
            fixture.decode().generator = (self, exchange, body) -> {
                if (body.path("rid").asText().equals("d")) {
                    RouterForwardingTest.answerOnceAborted(self, exchange, body);
                }
                else {
                    FakeBackend.answer(self, exchange, body);
                }
            };
            switching.generator = (self, exchange, body) -> FakeBackend.json(exchange, 503, JSON.readTree(
                    "{\"error\": {\"message\": \"the server is switching its role to decode; send the request to another one\", \"type\": "
                            + "\"server_error\", \"param\": null, \"code\": \"draining\", \"cause\": \"draining\"}}"));

            HttpResponse<String> response = fixture.post("/generate", "{\"text\": \"x\", \"rid\": \"d\"}");
            assertThat(response.statusCode()).as(response.body()).isEqualTo(200);
            assertThat(switching.rids()).containsExactly("d");
            assertThat(fixture.prefills.get(1).rids()).containsExactly("d-retry1");

            // taken out by a callback on the refused call, which may run after the retry has answered the client
            RouterFixture.await(() -> outFor(fixture, switching, "draining"), () -> "the switching prefill out: " + fixture.get("/backends").body());
            // out until a poll finds it serving: the next request goes to the other prefill at once
            assertThat(fixture.post("/generate", "{\"text\": \"x\", \"rid\": \"e\"}").statusCode()).isEqualTo(200);
            assertThat(switching.rids()).containsExactly("d");
        }
    }

    /** Whether the router lists {@code backend} as not healthy, for a reason that contains {@code why}. */
    private static boolean outFor(RouterFixture fixture, FakeBackend backend, String why)
    {
        JsonNode entry = fixture.backend(backend.url());
        return !entry.path("healthy").asBoolean(true) && entry.path("reason").asText().contains(why);
    }
}
