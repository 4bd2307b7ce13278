package io.handoff.router;

import com.fasterxml.jackson.databind.node.ObjectNode;
import org.junit.jupiter.api.Test;

import java.net.http.HttpResponse;

import static io.handoff.router.RouterFixture.json;
import static org.assertj.core.api.Assertions.assertThat;

/** Requests of several generations (batches, {@code n > 1}) through the router: a block of rooms, their rids, the bound, chat. */
class RouterGenerationGroupsTest
{
    @Test
    void aRequestOfSeveralGenerationsTakesABlockOfConsecutiveRoomsAndBothServersGetItsRidList()
            throws Exception
    {
        try (RouterFixture fixture = RouterFixture.start(1, 1)) {
            HttpResponse<String> batch = fixture.post("/generate", "{\"text\": [\"a\", \"b\"], \"rid\": [\"x\", \"y\"], \"sampling_params\": {\"n\": 2}}");
            HttpResponse<String> next = fixture.post("/generate", "{\"text\": \"c\", \"rid\": \"z\"}");

            assertThat(batch.statusCode()).isEqualTo(200);
            assertThat(next.statusCode()).isEqualTo(200);
            ObjectNode prefill = fixture.prefill().received.get(0).body();
            ObjectNode decode = fixture.decode().received.get(0).body();
            assertThat(prefill.get("rid")).isEqualTo(json("[\"x\", \"y\"]"));
            assertThat(decode.get("rid")).isEqualTo(json("[\"x\", \"y\"]"));
            assertThat(decode.get("bootstrap_room")).isEqualTo(prefill.get("bootstrap_room"));
            // 2 prompts × 2 outputs: rooms first .. first + 3 are this request's, the next request's comes after them
            assertThat(fixture.prefill().received.get(1).body().get("bootstrap_room").asLong()).isEqualTo(prefill.get("bootstrap_room").asLong() + 4);
        }
    }

    @Test
    void chatIsRoutedToBothServersWithARoomPerChoice()
            throws Exception
    {
        try (RouterFixture fixture = RouterFixture.start(1, 1)) {
            String chat = "{\"messages\": [{\"role\": \"user\", \"content\": \"Hi\"}], \"n\": 3, \"rid\": \"chat-1\"}";
            assertThat(fixture.post("/v1/chat/completions", chat).statusCode()).isEqualTo(200);
            assertThat(fixture.post("/v1/chat/completions", chat.replace("chat-1", "chat-2")).statusCode()).isEqualTo(200);

            assertThat(fixture.prefill().received).extracting(FakeBackend.Received::path).containsExactly("/v1/chat/completions", "/v1/chat/completions");
            assertThat(fixture.decode().rids()).containsExactly("chat-1", "chat-2");
            ObjectNode decode = fixture.decode().received.get(0).body();
            assertThat(decode.path("messages")).isEqualTo(json("[{\"role\": \"user\", \"content\": \"Hi\"}]"));
            assertThat(decode.path("bootstrap_host").asText()).isEqualTo("10.0.0.1:7001");
            assertThat(fixture.decode().received.get(1).body().get("bootstrap_room").asLong()).isEqualTo(decode.get("bootstrap_room").asLong() + 3);
        }
    }

    @Test
    void moreGenerationsThanARequestMayAskForAreRefusedAtTheRouter()
            throws Exception
    {
        try (RouterFixture fixture = RouterFixture.start(1, 1)) {
            HttpResponse<String> response = fixture.post("/v1/completions", "{\"prompt\": [\"a\", \"b\", \"c\"], \"n\": 22}");

            assertThat(response.statusCode()).isEqualTo(400);
            assertThat(json(response).at("/error/param").asText()).isEqualTo("n");
            assertThat(json(response).at("/error/message").asText()).contains("3 prompt(s) × 22 output(s) = 66 generations");
            HttpResponse<String> badRid = fixture.post("/generate", "{\"text\": [\"a\"], \"rid\": [7]}");
            assertThat(badRid.statusCode()).isEqualTo(400);
            assertThat(json(badRid).at("/error/param").asText()).isEqualTo("rid");
            assertThat(fixture.prefill().received).isEmpty();
            assertThat(fixture.decode().received).isEmpty();
        }
    }

    @Test
    void aPrefillFailureOfABatchAbortsEachOfItsRidsOnTheDecode()
            throws Exception
    {
        try (RouterFixture fixture = RouterFixture.start(1, 1)) {
            fixture.prefill().generator = (self, exchange, body) -> FakeBackend.json(exchange, 500,
                    json("{\"error\": {\"message\": \"prefill exploded\", \"type\": \"server_error\", \"param\": null, \"code\": \"internal_error\"}}"));
            fixture.decode().generator = (self, exchange, body) -> {
                // answers once both of the request's rids were aborted, as a decode that waits for KV would end
                self.awaitAbort("b1");
                self.awaitAbort("b2");
                FakeBackend.json(exchange, 200, json("{\"text\": \"\"}"));
            };

            HttpResponse<String> response = fixture.post("/generate", "{\"text\": [\"p\", \"q\"], \"rid\": [\"b1\", \"b2\"]}");

            assertThat(response.statusCode()).isEqualTo(500);
            assertThat(json(response).at("/error/message").asText()).isEqualTo("prefill exploded");
            assertThat(fixture.decode().aborted).containsExactlyInAnyOrder("b1", "b2");
        }
    }
}
