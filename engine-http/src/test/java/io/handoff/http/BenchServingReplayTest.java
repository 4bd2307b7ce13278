package io.handoff.http;

import com.fasterxml.jackson.databind.JsonNode;
import io.handoff.core.model.ByteTokenizer;
import io.handoff.core.runtime.ChatTemplateText;
import io.handoff.core.scheduler.KvHandoff;
import io.handoff.core.scheduler.SchedulerConfig;
import io.handoff.http.base.ServerConfig;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.net.http.HttpResponse;
import java.util.List;
import java.util.Optional;
import java.util.stream.Stream;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The request bodies SGLang's {@code bench_serving} sends for {@code --backend sglang} ({@code /generate}),
 * {@code sglang-oai} ({@code /v1/completions}) and {@code sglang-oai-chat} ({@code /v1/chat/completions}), streaming and
 * not, replayed unchanged against a real server on loopback; each answer is read the way that client reads it (the
 * text it accumulates, the output length it takes from the answer) and must give what the model produced.
 */
class BenchServingReplayTest
{
    private static final int OUTPUT_LEN = 6;
    private static final ByteTokenizer TOKENIZER = new ByteTokenizer();
    private static LocalServer local;

    @BeforeAll
    static void start()
            throws IOException
    {
        local = new LocalServer(new SchedulerConfig(8, 256, 64, true, 2), ServerConfig.loopback(), 512, null, KvHandoff.NONE,
                Optional.of(new ChatTemplateText(ApiParamsTest.TEMPLATE, "", "")));
    }

    @AfterAll
    static void stop()
    {
        local.close();
    }

    @AfterEach
    void nothingIsLeftInFlight()
    {
        local.awaitNothingInFlight();
    }

    /** What bench_serving keeps of one request: the generated text and the output length. */
    private record Read(String text, int outputLen) {}

    /** {@code async_request_sglang_generate}'s payload: the prompt as text or token ids, greedy, ignore_eos, and its fixed extras. */
    private static String sglangPayload(String promptField, boolean stream)
    {
        return "{" + promptField + ", \"sampling_params\": {\"temperature\": 0.0, \"max_new_tokens\": " + OUTPUT_LEN + ", \"ignore_eos\": true}, "
                + "\"stream\": " + stream + ", \"lora_path\": null, \"return_logprob\": false, \"return_routed_experts\": false, "
                + "\"logprob_start_len\": -1}";
    }

    /** Streaming: every chunk with a non-empty {@code text} replaces the text and sets the length from {@code meta_info.completion_tokens}. */
    private static Read readSglang(boolean stream, String payload)
    {
        if (!stream) {
            HttpResponse<String> response = local.post("/generate", payload);
            assertThat(response.statusCode()).as(response.body()).isEqualTo(200);
            JsonNode body = LocalServer.json(response);
            return new Read(body.get("text").asText(), body.at("/meta_info/completion_tokens").asInt());
        }
        String text = "";
        int outputLen = OUTPUT_LEN;
        for (JsonNode data : chunks(local.stream("/generate", payload))) {
            if (data.has("text") && !data.get("text").asText().isEmpty()) {
                text = data.get("text").asText();
                outputLen = data.get("meta_info").get("completion_tokens").asInt();
            }
        }
        return new Read(text, outputLen);
    }

    @Test
    void sglangBackendPayloadsWithTextOrTokenIdsAreAnsweredAsTheClientReadsThem()
    {
        int[] prompt = TOKENIZER.encode("Hello, how are", true);
        String ids = "\"input_ids\": " + LocalServer.JSON.valueToTree(prompt);
        Read whole = readSglang(false, sglangPayload("\"text\": \"Hello, how are\"", false));

        assertThat(whole.outputLen()).isEqualTo(OUTPUT_LEN);
        assertThat(readSglang(true, sglangPayload("\"text\": \"Hello, how are\"", true))).isEqualTo(whole);
        assertThat(readSglang(false, sglangPayload(ids, false))).isEqualTo(whole);
        assertThat(readSglang(true, sglangPayload(ids, true))).isEqualTo(whole);
    }

    @Test
    void sglangOaiCompletionPayloadsAreAnsweredAsTheClientReadsThem()
    {
        String payload = "{\"model\": \"tiny-mla\", \"prompt\": \"Hello, how are\", \"best_of\": 1, \"max_tokens\": " + OUTPUT_LEN + ", "
                + "\"temperature\": 0.0, \"ignore_eos\": true, \"stream\": ";
        HttpResponse<String> response = local.post("/v1/completions", payload + "false}");
        assertThat(response.statusCode()).as(response.body()).isEqualTo(200);
        JsonNode whole = LocalServer.json(response);

        StringBuilder text = new StringBuilder();
        int outputLen = OUTPUT_LEN;
        for (JsonNode data : chunks(local.stream("/v1/completions", payload + "true}"))) {
            String piece = data.get("choices").get(0).get("text").asText();
            if (!piece.isEmpty()) {
                text.append(piece);
                outputLen = data.path("usage").path("completion_tokens").asInt(outputLen);
            }
        }

        assertThat(text.toString()).isEqualTo(whole.at("/choices/0/text").asText());
        assertThat(outputLen).isEqualTo(whole.at("/usage/completion_tokens").asInt()).isEqualTo(OUTPUT_LEN);
    }

    @Test
    void sglangOaiChatPayloadsAreAnsweredAsTheClientReadsThem()
    {
        String payload = "{\"model\": \"tiny-mla\", \"messages\": [{\"role\": \"user\", \"content\": \"Hello, how are\"}], "
                + "\"max_completion_tokens\": " + OUTPUT_LEN + ", \"temperature\": 0.0, \"ignore_eos\": true, \"stream\": ";
        HttpResponse<String> response = local.post("/v1/chat/completions", payload + "false}");
        assertThat(response.statusCode()).as(response.body()).isEqualTo(200);
        JsonNode whole = LocalServer.json(response);

        StringBuilder content = new StringBuilder();
        int outputLen = OUTPUT_LEN;
        for (JsonNode data : chunks(local.stream("/v1/chat/completions", payload + "true}"))) {
            JsonNode choices = data.path("choices");
            String piece = choices.isEmpty() ? "" : choices.get(0).path("delta").path("content").asText("");
            content.append(piece);
            outputLen = data.path("usage").path("completion_tokens").asInt(outputLen);
        }

        assertThat(whole.at("/usage/completion_tokens").asInt()).isEqualTo(OUTPUT_LEN);
        assertThat(content.toString()).isEqualTo(whole.at("/choices/0/message/content").asText());
        assertThat(outputLen).isEqualTo(OUTPUT_LEN);
    }

    @Test
    void anExtraThatAsksForAFeatureTheEngineLacksIsRefusedNamingIt()
    {
        HttpResponse<String> response = local.post("/generate", sglangPayload("\"text\": \"Hello\"", false).replace("\"lora_path\": null",
                "\"lora_path\": \"my-adapter\""));

        assertThat(response.statusCode()).isEqualTo(400);
        assertThat(LocalServer.json(response).at("/error/param").asText()).isEqualTo("lora_path");
    }

    /** The {@code data:} payloads before {@code [DONE]}, which must end the stream. */
    private static List<JsonNode> chunks(HttpResponse<Stream<String>> response)
    {
        List<String> events = ApiServerTest.events(response);
        assertThat(events.getLast()).isEqualTo("[DONE]");
        return events.subList(0, events.size() - 1).stream().map(LocalServer::json).toList();
    }
}
