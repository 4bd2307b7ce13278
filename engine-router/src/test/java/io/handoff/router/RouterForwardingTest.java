package io.handoff.router;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import org.junit.jupiter.api.Test;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.net.Socket;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.util.Iterator;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

import static io.handoff.router.RouterFixture.json;
import static org.assertj.core.api.Assertions.assertThat;

/** How the router pairs one client request with a prefill and a decode, relays the decode's answer, and ends both sides on a failure. */
class RouterForwardingTest
{
    @Test
    void bothServersGetTheSameRidRoomAndGenerationAndTheDecodeGetsThePrefillsControlEndpoint()
            throws Exception
    {
        try (RouterFixture fixture = RouterFixture.start(1, 1)) {
            HttpResponse<String> response = fixture.post("/generate",
                    "{\"text\": \"hello\", \"rid\": \"r-1\", \"sampling_params\": {\"max_new_tokens\": 4, \"temperature\": 0}}");

            assertThat(response.statusCode()).isEqualTo(200);
            assertThat(json(response)).isEqualTo(FakeBackend.response(fixture.decode(), "r-1", "abc"));
            ObjectNode prefill = fixture.prefill().only().body();
            ObjectNode decode = fixture.decode().only().body();
            assertThat(prefill.path("rid").asText()).isEqualTo("r-1");
            assertThat(decode.path("rid").asText()).isEqualTo("r-1");
            assertThat(prefill.path("bootstrap_room").isIntegralNumber()).isTrue();
            assertThat(decode.path("bootstrap_room")).isEqualTo(prefill.path("bootstrap_room"));
            assertThat(prefill.path("bootstrap_generation").asInt(-1)).isZero();
            assertThat(decode.path("bootstrap_generation").asInt(-1)).isZero();
            assertThat(decode.path("bootstrap_host").asText()).isEqualTo("10.0.0.1:7001");
            assertThat(prefill.has("bootstrap_host")).isFalse();
            // The client's own fields reach both unchanged.
            assertThat(prefill.path("text").asText()).isEqualTo("hello");
            assertThat(decode.path("sampling_params")).isEqualTo(json("{\"max_new_tokens\": 4, \"temperature\": 0}"));
            assertThat(prefill.path("stream").asBoolean(true)).isFalse();
            assertThat(decode.has("stream")).isFalse();
        }
    }

    @Test
    void aRidIsGeneratedWhenTheClientGivesNoneAndEveryRequestGetsItsOwnRoom()
            throws Exception
    {
        try (RouterFixture fixture = RouterFixture.start(1, 1)) {
            assertThat(fixture.post("/generate", "{\"text\": \"a\"}").statusCode()).isEqualTo(200);
            assertThat(fixture.post("/generate", "{\"text\": \"b\"}").statusCode()).isEqualTo(200);

            List<FakeBackend.Received> prefills = fixture.prefill().received;
            List<FakeBackend.Received> decodes = fixture.decode().received;
            assertThat(prefills).hasSize(2);
            for (int i = 0; i < 2; i++) {
                assertThat(prefills.get(i).rid()).isNotBlank().isEqualTo(decodes.get(i).rid());
                assertThat(prefills.get(i).body().path("bootstrap_room")).isEqualTo(decodes.get(i).body().path("bootstrap_room"));
            }
            assertThat(prefills.get(0).rid()).isNotEqualTo(prefills.get(1).rid());
            assertThat(prefills.get(0).body().path("bootstrap_room").asLong()).isNotEqualTo(prefills.get(1).body().path("bootstrap_room").asLong());
        }
    }

    @Test
    void completionsGoToTheSameEndpointOnBothServers()
            throws Exception
    {
        try (RouterFixture fixture = RouterFixture.start(1, 1)) {
            HttpResponse<String> response = fixture.post("/v1/completions", "{\"prompt\": \"hi\", \"max_tokens\": 2, \"rid\": \"c-1\"}");

            assertThat(response.statusCode()).isEqualTo(200);
            assertThat(fixture.prefill().only().path()).isEqualTo("/v1/completions");
            assertThat(fixture.decode().only().path()).isEqualTo("/v1/completions");
            assertThat(fixture.decode().only().body().path("prompt").asText()).isEqualTo("hi");
        }
    }

    @Test
    void aStreamPassesThroughInOrderWithDoneWhileThePrefillIsAskedNotToStream()
            throws Exception
    {
        try (RouterFixture fixture = RouterFixture.start(1, 1)) {
            HttpResponse<Stream<String>> response = fixture.stream("/generate", "{\"text\": \"hi\", \"stream\": true, \"rid\": \"s-1\"}");

            assertThat(response.statusCode()).isEqualTo(200);
            assertThat(response.headers().firstValue("Content-Type")).hasValue("text/event-stream; charset=utf-8");
            List<String> events = response.body().filter(line -> !line.isEmpty()).toList();
            assertThat(events).hasSize(4);
            assertThat(json(events.get(0).substring("data: ".length())).path("text").asText()).isEqualTo("a");
            assertThat(json(events.get(1).substring("data: ".length())).path("text").asText()).isEqualTo("ab");
            assertThat(json(events.get(2).substring("data: ".length()))).isEqualTo(FakeBackend.response(fixture.decode(), "s-1", "abc"));
            assertThat(events.get(3)).isEqualTo("data: [DONE]");
            assertThat(fixture.prefill().only().body().path("stream").asBoolean(true)).isFalse();
            assertThat(fixture.decode().only().body().path("stream").asBoolean(false)).isTrue();
        }
    }

    @Test
    void eachEventReachesTheClientBeforeTheDecodeSendsTheNext()
            throws Exception
    {
        CountDownLatch firstSeen = new CountDownLatch(1);
        try (RouterFixture fixture = RouterFixture.start(1, 1)) {
            fixture.decode().generator = (self, exchange, body) -> {
                OutputStream out = FakeBackend.startEvents(exchange);
                FakeBackend.event(out, FakeBackend.JSON.createObjectNode().put("text", "first"));
                // The second event is only sent once the client has the first: a router that buffered would never get it.
                if (firstSeen.await(30, TimeUnit.SECONDS)) {
                    FakeBackend.event(out, FakeBackend.JSON.createObjectNode().put("text", "second"));
                }
                FakeBackend.done(out);
            };
            HttpResponse<Stream<String>> response = fixture.stream("/generate", "{\"text\": \"hi\", \"stream\": true}");
            Iterator<String> lines = response.body().filter(line -> !line.isEmpty()).iterator();

            assertThat(lines.next()).isEqualTo("data: {\"text\":\"first\"}");
            firstSeen.countDown();
            assertThat(lines.next()).isEqualTo("data: {\"text\":\"second\"}");
            assertThat(lines.next()).isEqualTo("data: [DONE]");
        }
    }

    @Test
    void aPrefillThatFailsBeforeTheDecodeAnswersGetsTheDecodeAbortedAndTheClientThePrefillsError()
            throws Exception
    {
        try (RouterFixture fixture = RouterFixture.start(1, 1)) {
            fixture.prefill().generator = (self, exchange, body) -> FakeBackend.json(exchange, 500,
                    json("{\"error\": {\"message\": \"prefill exploded\", \"type\": \"server_error\", \"param\": null, \"code\": \"internal_error\"}}"));
            fixture.decode().generator = RouterForwardingTest::answerOnceAborted;

            HttpResponse<String> response = fixture.post("/generate", "{\"text\": \"hi\", \"rid\": \"pf-1\"}");

            assertThat(response.statusCode()).isEqualTo(500);
            assertThat(json(response).path("error").path("message").asText()).isEqualTo("prefill exploded");
            assertThat(fixture.decode().aborted).containsExactly("pf-1");
            assertThat(fixture.prefill().aborted).isEmpty();
        }
    }

    @Test
    void aPrefillThatFailsBeforeAStreamingDecodesFirstEventGetsTheClientThePrefillsError()
            throws Exception
    {
        try (RouterFixture fixture = RouterFixture.start(1, 1)) {
            fixture.prefill().generator = (self, exchange, body) -> {
                exchange.getResponseHeaders().set("Retry-After", "2");
                FakeBackend.json(exchange, 503, json("{\"error\": {\"message\": \"prefill queue is full\", \"type\": \"overloaded_error\", \"param\": null, \"code\": \"overloaded\"}}"));
            };
            // A decode answers a stream's headers at once and its first event only once the KV has come.
            fixture.decode().generator = (self, exchange, body) -> {
                OutputStream out = FakeBackend.startEvents(exchange);
                if (self.awaitAbort(body.path("rid").asText())) {
                    FakeBackend.event(out, FakeBackend.JSON.createObjectNode().putObject("meta_info").putObject("finish_reason").put("type", "abort"));
                }
                FakeBackend.done(out);
            };

            HttpResponse<String> response = fixture.post("/generate", "{\"text\": \"hi\", \"stream\": true, \"rid\": \"pf-s\"}");

            assertThat(response.statusCode()).isEqualTo(503);
            assertThat(response.headers().firstValue("Retry-After")).hasValue("2");
            assertThat(json(response).path("error").path("message").asText()).isEqualTo("prefill queue is full");
            assertThat(fixture.decode().aborted).containsExactly("pf-s");
        }
    }

    @Test
    void anUnreachablePrefillIsA502NamingItAndTheDecodeIsAborted()
            throws Exception
    {
        try (RouterFixture fixture = RouterFixture.start(1, 1)) {
            fixture.decode().generator = RouterForwardingTest::answerOnceAborted;
            fixture.prefill().stop();

            HttpResponse<String> response = fixture.post("/generate", "{\"text\": \"hi\", \"rid\": \"pf-2\"}");

            assertThat(response.statusCode()).isEqualTo(502);
            JsonNode error = json(response).path("error");
            assertThat(error.path("code").asText()).isEqualTo("prefill_failed");
            assertThat(error.path("message").asText()).contains("prefill server " + fixture.prefill().url());
            assertThat(fixture.decode().aborted).containsExactly("pf-2");
        }
    }

    @Test
    void aDecodeThatFailsGetsThePrefillAbortedAndTheClientTheDecodesErrorWithItsRetryAfter()
            throws Exception
    {
        try (RouterFixture fixture = RouterFixture.start(1, 1)) {
            fixture.prefill().generator = RouterForwardingTest::answerOnceAborted;
            fixture.decode().generator = (self, exchange, body) -> {
                exchange.getResponseHeaders().set("Retry-After", "3");
                FakeBackend.json(exchange, 503, json("{\"error\": {\"message\": \"decode is full\", \"type\": \"overloaded_error\", \"param\": null, \"code\": \"overloaded\"}}"));
            };

            HttpResponse<String> response = fixture.post("/generate", "{\"text\": \"hi\", \"rid\": \"df-1\"}");

            assertThat(response.statusCode()).isEqualTo(503);
            assertThat(response.headers().firstValue("Retry-After")).hasValue("3");
            assertThat(json(response).path("error").path("message").asText()).isEqualTo("decode is full");
            assertThat(fixture.prefill().aborted).containsExactly("df-1");
            assertThat(fixture.decode().aborted).isEmpty();
        }
    }

    @Test
    void aDecodeStreamThatBreaksEndsWithAnErrorEventNamingTheDecode()
            throws Exception
    {
        try (RouterFixture fixture = RouterFixture.start(1, 1)) {
            fixture.prefill().generator = RouterForwardingTest::answerOnceAborted;
            fixture.decode().generator = (self, exchange, body) -> {
                OutputStream out = FakeBackend.startEvents(exchange);
                FakeBackend.event(out, FakeBackend.JSON.createObjectNode().put("text", "a"));
                // Half an event, then the connection is cut without the chunked stream's end.
                out.write("data: {\"te".getBytes(StandardCharsets.UTF_8));
                out.flush();
                exchange.getHttpContext().getServer().stop(0);
            };

            HttpResponse<Stream<String>> response = fixture.stream("/generate", "{\"text\": \"hi\", \"stream\": true, \"rid\": \"br-1\"}");
            List<String> events = response.body().filter(line -> !line.isEmpty()).toList();

            assertThat(events).hasSize(3);
            assertThat(events.get(0)).isEqualTo("data: {\"text\":\"a\"}");
            JsonNode error = json(events.get(1).substring("data: ".length())).path("error");
            assertThat(error.path("code").asText()).isEqualTo("decode_failed");
            assertThat(error.path("message").asText()).contains("decode server " + fixture.decode().url());
            assertThat(events.get(2)).isEqualTo("data: [DONE]");
            assertThat(fixture.prefill().aborted).containsExactly("br-1");
        }
    }

    @Test
    void aClientThatDisconnectsMidStreamIsAbortedOnBothServers()
            throws Exception
    {
        try (RouterFixture fixture = RouterFixture.start(1, 1)) {
            fixture.prefill().generator = RouterForwardingTest::answerOnceAborted;
            fixture.decode().generator = (self, exchange, body) -> {
                OutputStream out = FakeBackend.startEvents(exchange);
                String rid = body.path("rid").asText();
                // Streams until aborted: the router only learns of the disconnect when a write to the client fails.
                for (int i = 0; i < 100_000 && !self.abortArrived(rid, 5); i++) {
                    FakeBackend.event(out, FakeBackend.JSON.createObjectNode().put("token", i));
                }
                FakeBackend.done(out);
            };

            byte[] body = "{\"text\": \"hi\", \"stream\": true, \"rid\": \"gone-1\"}".getBytes(StandardCharsets.UTF_8);
            try (Socket socket = new Socket("127.0.0.1", fixture.router.address().getPort())) {
                socket.getOutputStream().write(("POST /generate HTTP/1.1\r\nHost: router\r\nContent-Type: application/json\r\nContent-Length: "
                        + body.length + "\r\n\r\n").getBytes(StandardCharsets.US_ASCII));
                socket.getOutputStream().write(body);
                socket.getOutputStream().flush();
                BufferedReader reader = new BufferedReader(new InputStreamReader(socket.getInputStream(), StandardCharsets.UTF_8));
                String line;
                do {
                    line = reader.readLine();
                }
                while (line != null && !line.startsWith("data: "));
                assertThat(line).startsWith("data: {\"token\":");
            }

            assertThat(fixture.decode().awaitAbort("gone-1")).isTrue();
            assertThat(fixture.prefill().awaitAbort("gone-1")).isTrue();
        }
    }

    @Test
    void abortRequestIsForwardedToBothServersOfThatRid()
            throws Exception
    {
        try (RouterFixture fixture = RouterFixture.start(1, 1)) {
            fixture.prefill().generator = RouterForwardingTest::answerOnceAborted;
            fixture.decode().generator = RouterForwardingTest::answerOnceAborted;
            CompletableFuture<HttpResponse<String>> request = fixture.postAsync("/generate", "{\"text\": \"hi\", \"rid\": \"ab-1\"}");
            assertThat(fixture.prefill().awaitReceived("ab-1")).isTrue();
            assertThat(fixture.decode().awaitReceived("ab-1")).isTrue();

            HttpResponse<String> duplicate = fixture.post("/generate", "{\"text\": \"again\", \"rid\": \"ab-1\"}");
            assertThat(duplicate.statusCode()).isEqualTo(409);
            assertThat(json(duplicate).path("error").path("code").asText()).isEqualTo("duplicate_rid");

            HttpResponse<String> abort = fixture.post("/abort_request", "{\"rid\": \"ab-1\"}");

            assertThat(abort.statusCode()).isEqualTo(200);
            assertThat(json(abort)).isEqualTo(json("{\"rid\": \"ab-1\", \"aborted\": true}"));
            assertThat(fixture.prefill().aborted).containsExactly("ab-1");
            assertThat(fixture.decode().aborted).containsExactly("ab-1");
            HttpResponse<String> ended = request.get(30, TimeUnit.SECONDS);
            assertThat(ended.statusCode()).isEqualTo(200);
            assertThat(json(ended).path("meta_info").path("finish_reason").path("type").asText()).isEqualTo("abort");
            // Once it has ended, the rid is unknown here, as on a server.
            HttpResponse<String> late = fixture.post("/abort_request", "{\"rid\": \"ab-1\"}");
            assertThat(late.statusCode()).isEqualTo(404);
            assertThat(json(late).path("error").path("code").asText()).isEqualTo("rid_not_found");
        }
    }

    @Test
    void aBodyThatIsNotAJsonObjectIs400AndReachesNoServer()
            throws Exception
    {
        try (RouterFixture fixture = RouterFixture.start(1, 1)) {
            HttpResponse<String> malformed = fixture.post("/generate", "{\"text\": ");
            HttpResponse<String> array = fixture.post("/v1/completions", "[1, 2]");
            HttpResponse<String> badRid = fixture.post("/generate", "{\"text\": \"hi\", \"rid\": 7}");

            assertThat(malformed.statusCode()).isEqualTo(400);
            assertThat(json(malformed).path("error").path("code").asText()).isEqualTo("invalid_json");
            assertThat(json(malformed).path("error").path("type").asText()).isEqualTo("invalid_request_error");
            assertThat(array.statusCode()).isEqualTo(400);
            assertThat(json(array).path("error").path("code").asText()).isEqualTo("invalid_type");
            assertThat(badRid.statusCode()).isEqualTo(400);
            assertThat(json(badRid).path("error").path("param").asText()).isEqualTo("rid");
            assertThat(fixture.prefill().received).isEmpty();
            assertThat(fixture.decode().received).isEmpty();
        }
    }

    @Test
    void bootstrapFieldsFromTheClientAreRefused()
            throws Exception
    {
        try (RouterFixture fixture = RouterFixture.start(1, 1)) {
            HttpResponse<String> response = fixture.post("/generate", "{\"text\": \"hi\", \"bootstrap_room\": 5}");

            assertThat(response.statusCode()).isEqualTo(400);
            assertThat(json(response).path("error").path("code").asText()).isEqualTo("router_field");
            assertThat(json(response).path("error").path("param").asText()).isEqualTo("bootstrap_room");
            assertThat(fixture.prefill().received).isEmpty();
        }
    }

    /** Holds the request until the router aborts its rid, then ends it as a server ends an aborted request. */
    static void answerOnceAborted(FakeBackend self, com.sun.net.httpserver.HttpExchange exchange, ObjectNode body)
            throws java.io.IOException, InterruptedException
    {
        String rid = body.path("rid").asText();
        if (!self.awaitAbort(rid)) {
            FakeBackend.json(exchange, 500, json("{\"error\": {\"message\": \"test: no abort came\"}}"));
            return;
        }
        ObjectNode response = FakeBackend.response(self, rid, "");
        ((ObjectNode) response.path("meta_info")).putObject("finish_reason").put("type", "abort");
        FakeBackend.json(exchange, 200, response);
    }
}
