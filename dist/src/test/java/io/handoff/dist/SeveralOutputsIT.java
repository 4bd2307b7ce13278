package io.handoff.dist;

import com.fasterxml.jackson.databind.JsonNode;
import io.handoff.core.model.hf.SeededCheckpoint;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.locks.LockSupport;
import java.util.stream.Stream;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Several outputs for one request through a prefill, a decode and a router (processes of the distribution), on a
 * checkpoint with a chat template: batched {@code /generate} (also streamed), {@code n = 2} completions and chat give
 * the colocated server's outputs, each generation in a room of its own.
 */
class SeveralOutputsIT
{
    private static final String TEMPLATE = "{% for m in messages %}<|im_start|>{{ m.role }}\\n{{ m.content }}<|im_end|>\\n{% endfor %}"
            + "{% if add_generation_prompt %}<|im_start|>assistant\\n{% endif %}";

    @TempDir
    Path temp;

    @Test
    void batchesAndNOutputsThroughTheRouterGiveTheColocatedOutputs()
            throws Exception
    {
        Path model = temp.resolve("tiny-chat");
        SeededCheckpoint.write(model, 11L, false);
        Files.writeString(model.resolve("tokenizer_config.json"), "{\"bos_token\": \"<|begin_of_text|>\", \"eos_token\": \"<|end_of_text|>\", "
                + "\"chat_template\": \"" + TEMPLATE + "\"}\n");
        String path = "--model-path=" + model;
        String batch = "{\"text\": [\"The first prompt of the batch, long enough for a page or two\", \"A second one\"], "
                + "\"sampling_params\": {\"n\": 2, \"max_new_tokens\": 6, \"temperature\": 0.8, \"seed\": 3, \"ignore_eos\": true}}";
        String completions = "{\"prompt\": [\"Hello\", \"Good morning\"], \"n\": 2, \"max_tokens\": 5, \"temperature\": 0.7, \"seed\": 1, "
                + "\"ignore_eos\": true}";
        String chat = "{\"messages\": [{\"role\": \"user\", \"content\": \"Say something\"}], \"n\": 2, \"max_tokens\": 5, \"temperature\": 0.7, "
                + "\"seed\": 2}";
        String bestOf = "{\"prompt\": \"Pick the best\", \"n\": 2, \"best_of\": 3, \"max_tokens\": 5, \"temperature\": 1.0, \"seed\": 4, "
                + "\"ignore_eos\": true}";
        JsonNode colocatedBatch;
        JsonNode colocatedCompletions;
        JsonNode colocatedChat;
        JsonNode colocatedBestOf;
        try (ServerProcess colocated = ServerProcess.serve(temp, "colocated", path)) {
            colocatedBatch = ok(colocated, "/generate", batch);
            colocatedCompletions = ok(colocated, "/v1/completions", completions);
            colocatedChat = ok(colocated, "/v1/chat/completions", chat);
            colocatedBestOf = ok(colocated, "/v1/completions", bestOf);
        }
        assertThat(colocatedBatch).hasSize(4);
        // two samples of one prompt differ (seeds 3 and 4)
        assertThat(colocatedBatch.get(0).get("output_ids")).isNotEqualTo(colocatedBatch.get(1).get("output_ids"));

        try (ServerProcess prefill = ServerProcess.serve(temp, "prefill", path);
                ServerProcess decode = ServerProcess.serve(temp, "decode", path);
                ServerProcess router = router(prefill, decode)) {
            JsonNode routedBatch = ok(router, "/generate", batch);
            for (int i = 0; i < 4; i++) {
                assertThat(routedBatch.get(i).get("output_ids")).as("output %d", i).isEqualTo(colocatedBatch.get(i).get("output_ids"));
            }
            assertThat(streamedOutputs(router, batch.replace("{\"text\"", "{\"stream\": true, \"text\""))).isEqualTo(Map.of(
                    0, colocatedBatch.get(0).get("output_ids"), 1, colocatedBatch.get(1).get("output_ids"),
                    2, colocatedBatch.get(2).get("output_ids"), 3, colocatedBatch.get(3).get("output_ids")));
            assertThat(texts(ok(router, "/v1/completions", completions), "text")).isEqualTo(texts(colocatedCompletions, "text"));
            JsonNode routedChat = ok(router, "/v1/chat/completions", chat);
            assertThat(routedChat.get("choices")).hasSize(2);
            assertThat(texts(routedChat, "message")).isEqualTo(texts(colocatedChat, "message"));
            assertThat(routedChat.get("usage")).isEqualTo(colocatedChat.get("usage"));
            // best_of ranks the candidates by the log probabilities the decode got from the prefill with the first token
            JsonNode routedBestOf = ok(router, "/v1/completions", bestOf);
            assertThat(texts(routedBestOf, "text")).isEqualTo(texts(colocatedBestOf, "text"));
            assertThat(routedBestOf.get("usage")).isEqualTo(colocatedBestOf.get("usage"));
            // one room per generation: 4 + 4 (streamed) + 4 + 2 + 3 candidates
            assertThat(decode.metric("handoff_disagg_rooms_total{outcome=\"success\"}")).isEqualTo(17);
            prefill.assertNoPagesLeaked();
            decode.assertNoPagesLeaked();
        }
    }

    private static JsonNode ok(ServerProcess server, String path, String body)
    {
        HttpResponse<String> response = server.post(path, body);
        assertThat(response.statusCode()).as(path + ": " + response.body()).isEqualTo(200);
        return ServerProcess.json(response.body());
    }

    private static List<String> texts(JsonNode response, String field)
    {
        List<String> texts = new ArrayList<>();
        for (JsonNode choice : response.get("choices")) {
            texts.add(choice.get("index").intValue() + ":" + choice.get(field));
        }
        return texts;
    }

    /** The last {@code output_ids} of each streamed output, by its {@code index}; the stream ends with one {@code [DONE]}. */
    private static Map<Integer, JsonNode> streamedOutputs(ServerProcess server, String body)
    {
        HttpResponse<Stream<String>> response = server.stream("/generate", body);
        assertThat(response.statusCode()).isEqualTo(200);
        List<String> data = response.body().filter(line -> line.startsWith("data: ")).map(line -> line.substring(6)).toList();
        assertThat(data.getLast()).isEqualTo("[DONE]");
        assertThat(data.stream().filter("[DONE]"::equals)).hasSize(1);
        Map<Integer, JsonNode> last = new TreeMap<>();
        for (String event : data.subList(0, data.size() - 1)) {
            JsonNode chunk = ServerProcess.json(event);
            last.put(chunk.get("index").intValue(), chunk.get("output_ids"));
        }
        return last;
    }

    private ServerProcess router(ServerProcess prefill, ServerProcess decode)
            throws Exception
    {
        ServerProcess router = ServerProcess.launch(temp, "router", List.of("router", "--port", "0", "--prefill", "http://127.0.0.1:" + prefill.port,
                "--decode", "http://127.0.0.1:" + decode.port, "-Dhandoff.router.health-interval=200ms"));
        long deadline = System.nanoTime() + Duration.ofSeconds(60).toNanos();
        while (!router.get("/health").body().contains("\"status\":\"ok\"")) {
            if (System.nanoTime() > deadline) {
                throw new AssertionError("the router's servers are not healthy: " + router.get("/backends").body() + "\n" + router.logText());
            }
            LockSupport.parkNanos(50_000_000);
        }
        return router;
    }
}
