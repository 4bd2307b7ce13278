package io.handoff.demo;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

class StreamingClientTest
{
    private static final String DONE = "[DONE]";

    private static String chunk(String ids, String finishReason)
    {
        return "{\"text\":\"\",\"output_ids\":[" + ids + "],\"meta_info\":{\"id\":\"r\",\"finish_reason\":" + finishReason + "}}";
    }

    @Test
    void sendsAGreedyStreamingRequestThatIgnoresEos()
            throws Exception
    {
        try (FakeServer server = new FakeServer().events("/generate", chunk("5", "null"), chunk("5,6", "{\"type\":\"length\",\"length\":2}"), DONE);
                StreamingClient client = new StreamingClient(server.url(), Duration.ofMinutes(1))) {
            client.generate(0, "Question: 1+1?\nAnswer:", 2);
            JsonNode body = new ObjectMapper().readTree(server.requestBodies.getFirst());
            assertThat(body.get("text").asText()).isEqualTo("Question: 1+1?\nAnswer:");
            assertThat(body.get("stream").asBoolean()).isTrue();
            assertThat(body.get("sampling_params").get("max_new_tokens").asInt()).isEqualTo(2);
            assertThat(body.get("sampling_params").get("temperature").asDouble()).isZero();
            assertThat(body.get("sampling_params").get("ignore_eos").asBoolean()).isTrue();
        }
    }

    @Test
    void collectsTheTokensAndTimesEachOne()
    {
        try (FakeServer server = new FakeServer().events("/generate", chunk("7", "null"), chunk("7,8", "null"), chunk("7,8,9", "null"),
                chunk("7,8,9", "{\"type\":\"length\",\"length\":3}"), DONE);
                StreamingClient client = new StreamingClient(server.url(), Duration.ofMinutes(1))) {
            RequestResult result = client.generate(4, "p", 3);
            assertThat(result.completed()).isTrue();
            assertThat(result.index()).isEqualTo(4);
            assertThat(result.outputIds()).containsExactly(7, 8, 9);
            assertThat(result.ttftMillis()).isNotNaN().isGreaterThanOrEqualTo(0);
            assertThat(result.interTokenMillis()).hasSize(2);
            assertThat(java.util.Arrays.stream(result.interTokenMillis()).min().orElseThrow()).isGreaterThanOrEqualTo(0);
        }
    }

    @Test
    void runsEveryPromptAndKeepsTheirOrder()
            throws Exception
    {
        try (FakeServer server = new FakeServer().events("/generate", chunk("1", "null"), chunk("1", "{\"type\":\"length\",\"length\":1}"), DONE);
                StreamingClient client = new StreamingClient(server.url(), Duration.ofMinutes(1))) {
            List<RequestResult> results = client.run(List.of("a", "b", "c", "d", "e"), 1, 2);
            assertThat(results).extracting(RequestResult::index).containsExactly(0, 1, 2, 3, 4);
            assertThat(results).allSatisfy(result -> assertThat(result.completed()).isTrue());
            assertThat(server.requestBodies).hasSize(5);
        }
    }

    @Test
    void anHttpErrorIsTheRequestsErrorWithTheServersMessage()
    {
        try (FakeServer server = new FakeServer().answer("/generate", 503, "application/json",
                "{\"error\":{\"message\":\"no decode server is healthy\",\"type\":\"unavailable\"}}");
                StreamingClient client = new StreamingClient(server.url(), Duration.ofMinutes(1))) {
            RequestResult result = client.generate(0, "p", 2);
            assertThat(result.completed()).isFalse();
            assertThat(result.error()).contains("HTTP 503: no decode server is healthy");
        }
    }

    @Test
    void anErrorEventFailsTheRequestAndKeepsWhatArrived()
    {
        try (FakeServer server = new FakeServer().events("/generate", chunk("3", "null"),
                "{\"error\":{\"message\":\"generation failed: KV checksum mismatch on page 12\"}}", DONE);
                StreamingClient client = new StreamingClient(server.url(), Duration.ofMinutes(1))) {
            RequestResult result = client.generate(0, "p", 2);
            assertThat(result.error()).contains("the server reported an error: generation failed: KV checksum mismatch on page 12");
            assertThat(result.outputIds()).containsExactly(3);
        }
    }

    @Test
    void anAbortedRequestFails()
    {
        try (FakeServer server = new FakeServer().events("/generate", chunk("3", "{\"type\":\"abort\",\"message\":\"decode lost its prefill\"}"), DONE);
                StreamingClient client = new StreamingClient(server.url(), Duration.ofMinutes(1))) {
            assertThat(client.generate(0, "p", 2).error()).contains("aborted by the server: decode lost its prefill");
        }
    }

    @Test
    void aStreamCutShortFails()
    {
        try (FakeServer server = new FakeServer().events("/generate", chunk("3", "null"));
                StreamingClient client = new StreamingClient(server.url(), Duration.ofMinutes(1))) {
            assertThat(client.generate(0, "p", 2).error()).contains("the stream ended without [DONE] after 1 tokens");
        }
    }

    @Test
    void nobodyListeningFailsTheRequest()
    {
        int port = FreePorts.allocate(1).getFirst();
        try (StreamingClient client = new StreamingClient(java.net.URI.create("http://127.0.0.1:" + port), Duration.ofMinutes(1))) {
            assertThat(client.generate(0, "p", 2).error().orElseThrow()).startsWith("POST http://127.0.0.1:" + port + "/generate failed");
        }
    }
}
