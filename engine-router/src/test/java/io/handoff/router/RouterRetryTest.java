package io.handoff.router;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.sun.net.httpserver.HttpExchange;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.io.OutputStream;
import java.net.http.HttpResponse;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

import static io.handoff.router.RouterFixture.json;
import static org.assertj.core.api.Assertions.assertThat;

/** A request whose KV transfer failed for a retryable cause runs once more, in a new room, on another prefill when there is one. */
class RouterRetryTest
{
    @Test
    void aChecksumMismatchIsRetriedOnceInANewRoomOnTheOtherPrefillAndTheClientGetsTheRetrysAnswer()
            throws Exception
    {
        try (RouterFixture fixture = RouterFixture.start(2, 1)) {
            fixture.decode().generator = failFirstWith("checksum_mismatch");

            HttpResponse<String> response = fixture.post("/generate", "{\"text\": \"hi\", \"rid\": \"r-1\"}");

            assertThat(response.statusCode()).isEqualTo(200);
            assertThat(json(response)).isEqualTo(FakeBackend.response(fixture.decode(), "r-1-retry1", "abc"));
            List<FakeBackend.Received> decodes = fixture.decode().received;
            assertThat(decodes).extracting(FakeBackend.Received::rid).containsExactly("r-1", "r-1-retry1");
            JsonNode firstRoom = decodes.get(0).body().path("bootstrap_room");
            JsonNode secondRoom = decodes.get(1).body().path("bootstrap_room");
            assertThat(secondRoom.asLong()).isNotEqualTo(firstRoom.asLong());
            // the first attempt went to p1 (round-robin), the retry to the other prefill, with its control endpoint
            assertThat(fixture.prefills.get(0).rids()).containsExactly("r-1");
            assertThat(fixture.prefills.get(1).rids()).containsExactly("r-1-retry1");
            assertThat(decodes.get(1).body().path("bootstrap_host").asText()).isEqualTo("10.0.0.2:7001");
            assertThat(fixture.prefills.get(1).only().body().path("bootstrap_room")).isEqualTo(secondRoom);
            assertThat(retries(fixture, "checksum_mismatch")).isEqualTo(1);
            assertThat(retries(fixture, "transport_failure")).isZero();
            assertThat(fixture.get("/metrics").body()).contains("handoff_router_inflight_requests 0");
        }
    }

    @Test
    void withOnePrefillTheRetryGoesToItAgain()
            throws Exception
    {
        try (RouterFixture fixture = RouterFixture.start(1, 1)) {
            fixture.decode().generator = failFirstWith("transport_failure");

            HttpResponse<String> response = fixture.post("/generate", "{\"text\": \"hi\", \"rid\": \"one\"}");

            assertThat(response.statusCode()).isEqualTo(200);
            assertThat(fixture.prefill().rids()).containsExactly("one", "one-retry1");
            assertThat(retries(fixture, "transport_failure")).isEqualTo(1);
        }
    }

    @Test
    void aRetryThatFailsForARetryableCauseTooIsA502NamingTheCauseAndBothAttempts()
            throws Exception
    {
        try (RouterFixture fixture = RouterFixture.start(2, 1)) {
            fixture.decode().generator = (self, exchange, body) -> fail(exchange, body, body.path("rid").asText().endsWith("-retry1") ? "peer_lost" : "checksum_mismatch");

            HttpResponse<String> response = fixture.post("/generate", "{\"text\": \"hi\", \"rid\": \"twice\"}");

            assertThat(response.statusCode()).isEqualTo(502);
            JsonNode error = json(response).path("error");
            assertThat(error.path("code").asText()).isEqualTo("kv_transfer_failed");
            assertThat(error.path("cause").asText()).isEqualTo("peer_lost");
            assertThat(error.path("message").asText())
                    .startsWith("rid twice: the KV transfer failed twice. First ")
                    .contains("(checksum_mismatch): test: attempt twice failed")
                    .contains("then, retried in a new room, ")
                    .contains("(peer_lost): test: attempt twice-retry1 failed");
            assertThat(fixture.decode().rids()).containsExactly("twice", "twice-retry1");
            assertThat(retries(fixture, "checksum_mismatch")).isEqualTo(1);
            assertThat(retries(fixture, "peer_lost")).isZero();
        }
    }

    @Test
    void aFailureWhoseCauseIsNotRetryableOrMissingIsRelayedAsItCameWithoutARetry()
            throws Exception
    {
        try (RouterFixture fixture = RouterFixture.start(2, 1)) {
            fixture.decode().generator = (self, exchange, body) -> fail(exchange, body, "handshake_refused");
            HttpResponse<String> refused = fixture.post("/generate", "{\"text\": \"hi\", \"rid\": \"hs\"}");
            assertThat(refused.statusCode()).isEqualTo(500);
            assertThat(json(refused).path("error").path("cause").asText()).isEqualTo("handshake_refused");

            fixture.decode().generator = (self, exchange, body) -> FakeBackend.json(exchange, 500,
                    json("{\"error\": {\"message\": \"no cause here\", \"type\": \"server_error\", \"param\": null, \"code\": \"internal_error\"}}"));
            HttpResponse<String> plain = fixture.post("/generate", "{\"text\": \"hi\", \"rid\": \"plain\"}");
            assertThat(plain.statusCode()).isEqualTo(500);
            assertThat(json(plain).path("error").path("message").asText()).isEqualTo("no cause here");

            assertThat(fixture.decode().rids()).containsExactly("hs", "plain");
            assertThat(retries(fixture, "checksum_mismatch") + retries(fixture, "transport_failure")).isZero();
        }
    }

    @Test
    void aPrefillThatFailsFirstForARetryableCauseIsRetriedToo()
            throws Exception
    {
        try (RouterFixture fixture = RouterFixture.start(2, 1)) {
            fixture.prefills.get(0).generator = (self, exchange, body) -> fail(exchange, body, "transport_failure");
            fixture.decode().generator = (self, exchange, body) -> {
                if (body.path("rid").asText().endsWith("-retry1")) {
                    FakeBackend.answer(self, exchange, body);
                }
                else {
                    RouterForwardingTest.answerOnceAborted(self, exchange, body);
                }
            };

            HttpResponse<String> response = fixture.post("/generate", "{\"text\": \"hi\", \"rid\": \"pf\"}");

            assertThat(response.statusCode()).isEqualTo(200);
            assertThat(json(response).path("meta_info").path("id").asText()).isEqualTo("pf-retry1");
            assertThat(fixture.decode().aborted).containsExactly("pf");
            assertThat(fixture.prefills.get(1).rids()).containsExactly("pf-retry1");
            assertThat(retries(fixture, "transport_failure")).isEqualTo(1);
        }
    }

    @Test
    void aPrefillThatCannotBeReachedIsRetriedOnAnotherOneWhenThereIsOne()
            throws Exception
    {
        try (RouterFixture fixture = RouterFixture.start(2, 1)) {
            fixture.prefills.get(0).stop();
            fixture.decode().generator = (self, exchange, body) -> {
                if (body.path("rid").asText().endsWith("-retry1")) {
                    FakeBackend.answer(self, exchange, body);
                }
                else {
                    RouterForwardingTest.answerOnceAborted(self, exchange, body);
                }
            };

            HttpResponse<String> response = fixture.post("/generate", "{\"text\": \"hi\", \"rid\": \"gone\"}");

            assertThat(response.statusCode()).isEqualTo(200);
            assertThat(fixture.prefills.get(1).rids()).containsExactly("gone-retry1");
            assertThat(fixture.decode().aborted).containsExactly("gone");
            assertThat(retries(fixture, "peer_lost")).isEqualTo(1);
        }
    }

    @Test
    void aStreamWhoseFirstEventIsATransferFailureIsRetriedAndTheClientSeesOnlyTheRetrysStream()
            throws Exception
    {
        try (RouterFixture fixture = RouterFixture.start(2, 1)) {
            fixture.decode().generator = (self, exchange, body) -> {
                if (body.path("rid").asText().endsWith("-retry1")) {
                    FakeBackend.answer(self, exchange, body);
                    return;
                }
                // as a decode answers a stream whose room failed: headers at once, then the error event, then [DONE]
                OutputStream out = FakeBackend.startEvents(exchange);
                FakeBackend.event(out, error("checksum_mismatch", body.path("rid").asText()));
                FakeBackend.done(out);
            };

            HttpResponse<Stream<String>> response = fixture.stream("/generate", "{\"text\": \"hi\", \"stream\": true, \"rid\": \"s\"}");

            assertThat(response.statusCode()).isEqualTo(200);
            List<String> events = response.body().filter(line -> !line.isEmpty()).toList();
            assertThat(events).hasSize(4).noneMatch(line -> line.contains("error"));
            assertThat(json(events.get(2).substring("data: ".length()))).isEqualTo(FakeBackend.response(fixture.decode(), "s-retry1", "abc"));
            assertThat(retries(fixture, "checksum_mismatch")).isEqualTo(1);
        }
    }

    @Test
    void aStreamThatFailsAfterItsFirstTokenIsNotRetried()
            throws Exception
    {
        try (RouterFixture fixture = RouterFixture.start(2, 1)) {
            fixture.decode().generator = (self, exchange, body) -> {
                OutputStream out = FakeBackend.startEvents(exchange);
                FakeBackend.event(out, FakeBackend.JSON.createObjectNode().put("text", "a"));
                FakeBackend.event(out, error("transport_failure", body.path("rid").asText()));
                FakeBackend.done(out);
            };

            HttpResponse<Stream<String>> response = fixture.stream("/generate", "{\"text\": \"hi\", \"stream\": true, \"rid\": \"late\"}");

            List<String> events = response.body().filter(line -> !line.isEmpty()).toList();
            assertThat(events).hasSize(3);
            assertThat(json(events.get(1).substring("data: ".length())).path("error").path("cause").asText()).isEqualTo("transport_failure");
            assertThat(fixture.decode().rids()).containsExactly("late");
            assertThat(retries(fixture, "transport_failure")).isZero();
        }
    }

    @Test
    void anAbortThatTheDecodeRefusedBecauseTheRequestHadNotReachedItIsSentAgainOnceTheDecodeAnswers()
            throws Exception
    {
        CountDownLatch taken = new CountDownLatch(1);
        try (RouterFixture fixture = RouterFixture.start(1, 1)) {
            fixture.prefill().generator = RouterForwardingTest::answerOnceAborted;
            // the decode takes the request only once the client's abort has come and been refused: no such rid yet
            fixture.decode().knows = rid -> taken.getCount() == 0;
            fixture.decode().generator = (self, exchange, body) -> {
                if (!taken.await(30, TimeUnit.SECONDS)) {
                    return;
                }
                // as a decode streams: headers at once, then nothing until its KV comes or the request is aborted
                OutputStream out = FakeBackend.startEvents(exchange);
                out.flush();
                if (self.awaitAbort(body.path("rid").asText())) {
                    ObjectNode last = FakeBackend.response(self, body.path("rid").asText(), "");
                    ((ObjectNode) last.path("meta_info")).putObject("finish_reason").put("type", "abort");
                    FakeBackend.event(out, last);
                }
                FakeBackend.done(out);
            };
            CompletableFuture<HttpResponse<String>> call = fixture.postAsync("/generate", "{\"text\": \"hi\", \"stream\": true, \"rid\": \"early\"}");
            assertThat(fixture.decode().awaitReceived("early")).isTrue();
            assertThat(fixture.post("/abort_request", "{\"rid\": \"early\"}").statusCode()).isEqualTo(200);
            assertThat(fixture.decode().aborted).containsExactly("early");

            taken.countDown();
            HttpResponse<String> response = call.get(30, TimeUnit.SECONDS);

            assertThat(response.statusCode()).isEqualTo(200);
            assertThat(response.body()).contains("\"type\":\"abort\"").endsWith("data: [DONE]\n\n");
            // the first was refused; the router said it again once the decode had answered, and that one ended it
            assertThat(fixture.decode().aborted).containsExactly("early", "early");
            assertThat(fixture.decode().rids()).containsExactly("early");
        }
    }

    /** The first attempt of each request fails for {@code cause}; the retry gets the default answer. */
    private static FakeBackend.Generator failFirstWith(String cause)
    {
        return (self, exchange, body) -> {
            if (body.path("rid").asText().endsWith("-retry1")) {
                FakeBackend.answer(self, exchange, body);
            }
            else {
                fail(exchange, body, cause);
            }
        };
    }

    private static void fail(HttpExchange exchange, ObjectNode body, String cause)
            throws IOException
    {
        FakeBackend.json(exchange, 500, error(cause, body.path("rid").asText()));
    }

    /** A server's error object for a generation that failed for {@code cause}. */
    private static ObjectNode error(String cause, String rid)
    {
        ObjectNode body = FakeBackend.JSON.createObjectNode();
        body.putObject("error").put("message", "test: attempt " + rid + " failed").put("type", "server_error").putNull("param")
                .put("code", "internal_error").put("cause", cause);
        return body;
    }

    private static long retries(RouterFixture fixture, String cause)
    {
        String metrics = fixture.get("/metrics").body();
        String prefix = "handoff_router_retries_total{cause=\"" + cause + "\"} ";
        return metrics.lines().filter(line -> line.startsWith(prefix)).mapToLong(line -> (long) Double.parseDouble(line.substring(prefix.length())))
                .findFirst().orElseThrow(() -> new AssertionError("no " + prefix + "in " + metrics));
    }
}
