package io.handoff.dist;

import com.fasterxml.jackson.databind.JsonNode;
import io.handoff.testkit.model.SeededCheckpoint;
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
 * the colocated server's outputs, each generation in a room of its own; streamed log probabilities carry the prompt's
 * from the first chunk ({@code /generate}, completions' echo) and equal the colocated server's whole answers.
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
        // greedy, so the streamed answers can be compared with the whole ones to the token
        String logprobBatch = "{\"text\": [\"Hello there\", \"Bye\"], \"sampling_params\": {\"max_new_tokens\": 4, \"temperature\": 0, "
                + "\"ignore_eos\": true}, \"return_logprob\": true, \"top_logprobs_num\": 2, \"logprob_start_len\": 0}";
        String echo = "{\"prompt\": [\"Hello\", \"Good morning\"], \"n\": 2, \"max_tokens\": 4, \"temperature\": 0, \"ignore_eos\": true, "
                + "\"echo\": true, \"logprobs\": 2}";
        JsonNode colocatedLogprobBatch;
        JsonNode colocatedEcho;
        JsonNode colocatedBatch;
        JsonNode colocatedCompletions;
        JsonNode colocatedChat;
        JsonNode colocatedBestOf;
        try (ServerProcess colocated = ServerProcess.serve(temp, "colocated", path)) {
            colocatedBatch = ok(colocated, "/generate", batch);
            colocatedCompletions = ok(colocated, "/v1/completions", completions);
            colocatedChat = ok(colocated, "/v1/chat/completions", chat);
            colocatedBestOf = ok(colocated, "/v1/completions", bestOf);
            colocatedLogprobBatch = ok(colocated, "/generate", logprobBatch);
            colocatedEcho = ok(colocated, "/v1/completions", echo);
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
            // a stream's every chunk carries the prompt's log probabilities, which the decode got with the first token
            List<JsonNode> logprobChunks = streamed(router, "/generate", streaming(logprobBatch));
            for (int i = 0; i < 2; i++) {
                JsonNode whole = colocatedLogprobBatch.get(i).get("meta_info");
                List<JsonNode> own = ofIndex(logprobChunks, i, "");
                assertThat(own).hasSize(4 + 1);
                for (JsonNode chunk : own) {
                    assertThat(chunk.at("/meta_info/input_token_logprobs")).as("output %d", i).isEqualTo(whole.get("input_token_logprobs"));
                    assertThat(chunk.at("/meta_info/input_top_logprobs")).as("output %d", i).isEqualTo(whole.get("input_top_logprobs"));
                }
                assertThat(own.getLast().at("/meta_info/output_token_logprobs")).isEqualTo(whole.get("output_token_logprobs"));
            }
            // streamed echo: each choice's first chunk starts with its prompt and its tokens; all chunks make the whole answer
            List<JsonNode> echoChunks = streamed(router, "/v1/completions", streaming(echo));
            for (int i = 0; i < 4; i++) {
                JsonNode whole = colocatedEcho.at("/choices/" + i);
                List<JsonNode> own = ofIndex(echoChunks, i, "/choices/0");
                assertThat(own.getFirst().get("text").asText()).startsWith(i < 2 ? "Hello" : "Good morning");
                assertThat(own.getFirst().at("/logprobs/token_logprobs/0").isNull()).isTrue();
                assertThat(String.join("", own.stream().map(c -> c.get("text").asText()).toList())).isEqualTo(whole.get("text").asText());
                for (String list : List.of("tokens", "token_logprobs", "top_logprobs", "text_offset")) {
                    List<JsonNode> joined = new ArrayList<>();
                    own.forEach(c -> c.at("/logprobs/" + list).forEach(joined::add));
                    List<JsonNode> expected = new ArrayList<>();
                    whole.at("/logprobs/" + list).forEach(expected::add);
                    assertThat(joined).as("choice %d's %s", i, list).isEqualTo(expected);
                }
            }
            // one room per generation: 4 + 4 (streamed) + 4 + 2 + 3 candidates + 2 + 4 (streamed log probabilities)
            assertThat(decode.metric("handoff_disagg_rooms_total{outcome=\"success\"}")).isEqualTo(23);
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

    /** The last {@code output_ids} of each streamed output, by its {@code index}. */
    private static Map<Integer, JsonNode> streamedOutputs(ServerProcess server, String body)
    {
        Map<Integer, JsonNode> last = new TreeMap<>();
        for (JsonNode chunk : streamed(server, "/generate", body)) {
            last.put(chunk.get("index").intValue(), chunk.get("output_ids"));
        }
        return last;
    }

    /** A stream's events before its one {@code [DONE]}, which ends it. */
    private static List<JsonNode> streamed(ServerProcess server, String path, String body)
    {
        HttpResponse<Stream<String>> response = server.stream(path, body);
        assertThat(response.statusCode()).isEqualTo(200);
        List<String> data = response.body().filter(line -> line.startsWith("data: ")).map(line -> line.substring(6)).toList();
        assertThat(data.getLast()).isEqualTo("[DONE]");
        assertThat(data.stream().filter("[DONE]"::equals)).hasSize(1);
        return data.subList(0, data.size() - 1).stream().map(ServerProcess::json).toList();
    }

    /** The events (or their part at {@code pointer}) of the output at {@code index}, in order. */
    private static List<JsonNode> ofIndex(List<JsonNode> events, int index, String pointer)
    {
        return events.stream().map(event -> event.at(pointer)).filter(event -> event.get("index").intValue() == index).toList();
    }

    private static String streaming(String body)
    {
        return "{\"stream\": true, " + body.substring(1);
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
