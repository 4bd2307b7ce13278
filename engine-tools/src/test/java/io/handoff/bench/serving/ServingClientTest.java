package io.handoff.bench.serving;

import com.fasterxml.jackson.databind.JsonNode;
import org.junit.jupiter.api.Test;

import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.URI;
import java.time.Duration;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class ServingClientTest
{
    private static final BenchRequest REQUEST = new BenchRequest(3, new int[] {40, 41, 42}, 4);

    @Test
    void sendsTokenIdsStreamedGreedyAndIgnoringEosAndTimesEveryToken()
            throws Exception
    {
        try (StubServer server = new StubServer(200); ServingClient client = new ServingClient(server.url(), Duration.ofMinutes(1))) {
            Sample sample = client.generate(REQUEST, "bench-x-a-3");

            JsonNode body = server.bodies.getFirst();
            assertThat(body.get("rid").asText()).isEqualTo("bench-x-a-3");
            assertThat(body.get("stream").asBoolean()).isTrue();
            assertThat(body.get("input_ids")).extracting(JsonNode::asInt).containsExactly(40, 41, 42);
            assertThat(body.get("sampling_params").get("max_new_tokens").asInt()).isEqualTo(4);
            assertThat(body.get("sampling_params").get("temperature").asDouble()).isZero();
            assertThat(body.get("sampling_params").get("ignore_eos").asBoolean()).isTrue();
            assertThat(sample.completed()).as(sample.error().orElse("")).isTrue();
            assertThat(sample.status()).isEqualTo(200);
            assertThat(sample.index()).isEqualTo(3);
            assertThat(sample.inputTokens()).isEqualTo(3);
            assertThat(sample.outputIds()).containsExactly(40, 41, 42, 43);
            assertThat(sample.itlMillis()).hasSize(3);
            assertThat(sample.ttftMillis()).isBetween(0.0, sample.e2eMillis());
        }
    }

    @Test
    void aRefusedRequestKeepsItsStatusAndTheServersReason()
            throws Exception
    {
        try (StubServer server = new StubServer(503); ServingClient client = new ServingClient(server.url(), Duration.ofMinutes(1))) {
            Sample sample = client.generate(REQUEST, "r");

            assertThat(sample.completed()).isFalse();
            assertThat(sample.status()).isEqualTo(503);
            assertThat(sample.error()).contains("the waiting queue is full");
        }
    }

    @Test
    void theModelsVocabularyAndContextComeFromV1Models()
            throws Exception
    {
        try (StubServer server = new StubServer(200); ServingClient client = new ServingClient(server.url(), Duration.ofMinutes(1))) {
            assertThat(client.model()).isEqualTo(new ServingClient.ModelInfo("stub", 100, 2048, true));
        }
    }

    @Test
    void aUrlNobodyListensOnIsAClearErrorAndARequestToItAFailedSample()
            throws Exception
    {
        int port;
        try (ServerSocket socket = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            port = socket.getLocalPort();
        }
        try (ServingClient client = new ServingClient(URI.create("http://127.0.0.1:" + port), Duration.ofSeconds(10))) {
            assertThatThrownBy(client::model).hasMessageContaining("http://127.0.0.1:" + port + ": cannot connect")
                    .hasMessageContaining("is a handoff server or router listening there?");
            Sample sample = client.generate(REQUEST, "r");
            assertThat(sample.completed()).isFalse();
            assertThat(sample.status()).isZero();
            assertThat(sample.error().orElseThrow()).contains("POST http://127.0.0.1:" + port + "/generate failed");
        }
    }
}
