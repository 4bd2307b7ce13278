package io.handoff.http;

import com.fasterxml.jackson.databind.JsonNode;
import io.handoff.core.model.ByteTokenizer;
import io.handoff.core.model.SamplingParams;
import io.handoff.core.scheduler.GenerateRequest;
import io.handoff.core.scheduler.GenerateResult;
import io.handoff.core.scheduler.TokenListener;
import io.handoff.http.base.PrometheusText;
import io.handoff.http.testing.PrometheusFormat;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.net.Socket;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.stream.Stream;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The HTTP API over real HTTP on loopback, in this process, against the real scheduler and model (with
 * the reference attention). One server for the class; tests that need other settings start their own.
 */
class ApiServerTest
{
    private static final ByteTokenizer TOKENIZER = new ByteTokenizer();
    private static LocalServer local;

    @BeforeAll
    static void start()
            throws IOException
    {
        local = LocalServer.standard();
    }

    @AfterAll
    static void stop()
    {
        local.close();
    }

    @AfterEach
    void nothingIsLeftInFlightAndNoPageIsHeldByARequest()
    {
        local.awaitNothingInFlight();
    }

    @Test
    void generateReturnsWhatTheSchedulerProducesForTheSamePromptAndSampling()
    {
        HttpResponse<String> response = local.post("/generate",
                "{\"text\": \"hello\", \"sampling_params\": {\"max_new_tokens\": 12, \"temperature\": 0.7, \"seed\": 3}}");

        assertThat(response.statusCode()).as(response.body()).isEqualTo(200);
        JsonNode body = LocalServer.json(response);
        GenerateResult direct = local.scheduler.submit(new GenerateRequest("direct", TOKENIZER.encode("hello", true), 12,
                new SamplingParams(0.7f, 1f, 3), Set.of(), false, false), TokenListener.NONE).result().join();
        assertThat(ids(body.get("output_ids"))).containsExactly(direct.outputIds());
        assertThat(body.get("text").asText()).isEqualTo(TOKENIZER.decode(direct.outputIds()));
        JsonNode meta = body.get("meta_info");
        assertThat(meta.get("prompt_tokens").asInt()).isEqualTo(6);
        assertThat(meta.get("completion_tokens").asInt()).isEqualTo(direct.outputIds().length);
        assertThat(meta.get("finish_reason").get("type").asText()).isEqualTo(direct.finishReason().name().toLowerCase());
        assertThat(meta.get("e2e_latency").asDouble()).isPositive();
    }

    @Test
    void streamedCompletionAddsUpToTheUnstreamedOneAndEndsWithDone()
    {
        String request = "{\"prompt\": \"The sky\", \"max_tokens\": 10, \"ignore_eos\": true, \"seed\": 5";
        JsonNode whole = LocalServer.json(local.post("/v1/completions", request + "}"));

        List<String> events = events(local.stream("/v1/completions", request + ", \"stream\": true, \"stream_options\": {\"include_usage\": true}}"));

        assertThat(events.getLast()).isEqualTo("[DONE]");
        List<JsonNode> chunks = events.subList(0, events.size() - 1).stream().map(LocalServer::json).toList();
        assertThat(chunks).hasSize(10 + 2); // one per token, the last with the finish reason, then usage
        StringBuilder text = new StringBuilder();
        for (JsonNode chunk : chunks.subList(0, chunks.size() - 1)) {
            assertThat(chunk.get("object").asText()).isEqualTo("text_completion");
            text.append(chunk.get("choices").get(0).get("text").asText());
        }
        assertThat(text.toString()).isEqualTo(whole.get("choices").get(0).get("text").asText());
        assertThat(chunks.get(chunks.size() - 2).get("choices").get(0).get("finish_reason").asText()).isEqualTo("length");
        assertThat(chunks.getLast().get("choices")).isEmpty();
        assertThat(chunks.getLast().get("usage")).isEqualTo(whole.get("usage"));
        assertThat(whole.get("usage").get("completion_tokens").asInt()).isEqualTo(10);
        assertThat(whole.get("usage").get("total_tokens").asInt()).isEqualTo(18);
    }

    @Test
    void generateStreamSendsCumulativeChunksThenTheFinishReasonThenDone()
    {
        List<String> events = events(local.stream("/generate",
                "{\"input_ids\": [256, 104, 105], \"stream\": true, \"sampling_params\": {\"max_new_tokens\": 5, \"temperature\": 0, \"ignore_eos\": true}}"));

        assertThat(events.getLast()).isEqualTo("[DONE]");
        List<JsonNode> chunks = events.subList(0, events.size() - 1).stream().map(LocalServer::json).toList();
        assertThat(chunks).hasSize(6);
        for (int i = 0; i < 5; i++) {
            assertThat(chunks.get(i).get("output_ids")).hasSize(i + 1);
            assertThat(chunks.get(i).get("meta_info").get("finish_reason").isNull()).isTrue();
        }
        JsonNode last = chunks.getLast();
        assertThat(last.get("output_ids")).isEqualTo(chunks.get(4).get("output_ids"));
        assertThat(last.get("text").asText()).isEqualTo(TOKENIZER.decode(ids(last.get("output_ids"))));
        assertThat(last.get("meta_info").get("finish_reason").toString()).isEqualTo("{\"type\":\"length\",\"length\":5}");
        assertThat(last.get("meta_info").get("prompt_tokens").asInt()).isEqualTo(3);
    }

    @Test
    void stopStringEndsTheTextBeforeItWithFinishReasonStop()
    {
        String greedy = "\"prompt\": \"stop here\", \"max_tokens\": 24, \"temperature\": 0, \"ignore_eos\": true";
        String full = LocalServer.json(local.post("/v1/completions", "{" + greedy + "}")).get("choices").get(0).get("text").asText();
        String stop = full.substring(6, 8);
        String expected = full.substring(0, full.indexOf(stop));

        JsonNode completion = LocalServer.json(local.post("/v1/completions", "{" + greedy + ", \"stop\": " + LocalServer.JSON.valueToTree(stop) + "}"));
        JsonNode generate = LocalServer.json(local.post("/generate", "{\"text\": \"stop here\", \"sampling_params\": {\"max_new_tokens\": 24, "
                + "\"temperature\": 0, \"ignore_eos\": true, \"stop\": [" + LocalServer.JSON.valueToTree(stop) + "]}}"));

        JsonNode choice = completion.get("choices").get(0);
        assertThat(choice.get("text").asText()).isEqualTo(expected);
        assertThat(choice.get("finish_reason").asText()).isEqualTo("stop");
        assertThat(choice.get("stop_reason").asText()).isEqualTo(stop);
        assertThat(completion.get("usage").get("completion_tokens").asInt()).isLessThanOrEqualTo(24);
        assertThat(generate.get("text").asText()).isEqualTo(expected);
        assertThat(generate.get("meta_info").get("finish_reason").get("type").asText()).isEqualTo("stop");
        assertThat(generate.get("meta_info").get("finish_reason").get("matched").asText()).isEqualTo(stop);
        assertThat(generate.get("output_ids")).hasSize(completion.get("usage").get("completion_tokens").asInt());
    }

    @Test
    void stopTokenIdEndsTheOutputAtItsFirstOccurrence()
    {
        String greedy = "\"text\": \"tokens\", \"sampling_params\": {\"max_new_tokens\": 16, \"temperature\": 0, \"ignore_eos\": true";
        int[] full = ids(LocalServer.json(local.post("/generate", "{" + greedy + "}}")).get("output_ids"));
        int stopId = full[5];
        int first = 0;
        while (full[first] != stopId) {
            first++;
        }

        JsonNode body = LocalServer.json(local.post("/generate", "{" + greedy + ", \"stop_token_ids\": [" + stopId + "]}}"));

        int[] expectedIds = Arrays.copyOf(full, first + 1);
        assertThat(ids(body.get("output_ids"))).containsExactly(expectedIds);
        assertThat(body.get("text").asText()).isEqualTo(TOKENIZER.decode(Arrays.copyOf(full, first)));
        assertThat(body.get("meta_info").get("finish_reason").toString()).isEqualTo("{\"type\":\"stop\",\"matched\":" + stopId + "}");
    }

    @Test
    void abortRequestEndsAStreamingGenerationAfterItsFirstToken()
    {
        HttpResponse<Stream<String>> response = local.stream("/generate",
                "{\"text\": \"long\", \"rid\": \"abort-me\", \"stream\": true, \"sampling_params\": {\"max_new_tokens\": 3000, \"ignore_eos\": true}}");
        Iterator<String> lines = response.body().iterator();
        String first = nextEvent(lines);
        assertThat(LocalServer.json(first).get("output_ids")).isNotEmpty();

        HttpResponse<String> abort = local.post("/abort_request", "{\"rid\": \"abort-me\"}");

        assertThat(abort.statusCode()).as(abort.body()).isEqualTo(200);
        assertThat(LocalServer.json(abort).get("aborted").asBoolean()).isTrue();
        List<String> rest = new ArrayList<>();
        lines.forEachRemaining(line -> {
            if (line.startsWith("data: ")) {
                rest.add(line.substring(6));
            }
        });
        assertThat(rest.getLast()).isEqualTo("[DONE]");
        JsonNode last = LocalServer.json(rest.get(rest.size() - 2));
        assertThat(last.get("meta_info").get("finish_reason").get("type").asText()).isEqualTo("abort");
        assertThat(last.get("meta_info").get("completion_tokens").asInt()).isBetween(1, 2999);
        // The rid stays registered until its exchange has ended, which is just after the client has read [DONE].
        local.awaitStats(stats -> local.server.inFlight() == 0, "the aborted exchange to end");
        HttpResponse<String> again = local.post("/abort_request", "{\"rid\": \"abort-me\"}");
        assertThat(again.statusCode()).isEqualTo(404);
        assertThat(again.body()).contains("no request with rid 'abort-me' is in flight");
    }

    @Test
    void clientThatDisconnectsMidStreamHasItsRequestAbortedAndItsPagesFreed()
            throws IOException
    {
        double disconnectsBefore = metrics().get("handoff_client_disconnects_total");
        byte[] body = "{\"text\": \"bye\", \"stream\": true, \"sampling_params\": {\"max_new_tokens\": 3000, \"ignore_eos\": true}}"
                .getBytes(StandardCharsets.UTF_8);
        try (Socket socket = new Socket("127.0.0.1", local.server.address().getPort())) {
            OutputStream out = socket.getOutputStream();
            out.write(("POST /generate HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: " + body.length
                    + "\r\n\r\n").getBytes(StandardCharsets.US_ASCII));
            out.write(body);
            out.flush();
            BufferedReader in = new BufferedReader(new InputStreamReader(socket.getInputStream(), StandardCharsets.UTF_8));
            String line;
            do {
                line = in.readLine();
                assertThat(line).as("the stream ended before its first token").isNotNull();
            }
            while (!line.startsWith("data: {"));
            assertThat(local.scheduler.stats().running()).isEqualTo(1);
        }

        var stats = local.awaitStats(s -> s.running() == 0 && LocalServer.requestPages(s) == 0 && local.server.inFlight() == 0,
                "the abandoned request to be aborted");

        assertThat(stats.finishedRequests()).isPositive();
        assertThat(metrics().get("handoff_client_disconnects_total")).isEqualTo(disconnectsBefore + 1);
        assertThat(metrics().get("handoff_kv_request_pages")).isZero();
    }

    @Test
    void requestWithTheRidOfOneInFlightIsAConflict()
    {
        HttpResponse<Stream<String>> response = local.stream("/v1/completions",
                "{\"prompt\": \"dup\", \"rid\": \"dup\", \"stream\": true, \"max_tokens\": 3000, \"ignore_eos\": true}");
        Iterator<String> lines = response.body().iterator();
        nextEvent(lines);

        HttpResponse<String> second = local.post("/generate", "{\"text\": \"dup\", \"rid\": \"dup\"}");

        assertThat(second.statusCode()).isEqualTo(409);
        assertError(LocalServer.json(second), "duplicate_rid", "rid", "a request with rid 'dup' is already in flight");
        assertThat(local.post("/abort_request", "{\"rid\": \"dup\"}").statusCode()).isEqualTo(200);
        lines.forEachRemaining(line -> {});
    }

    static Stream<List<Object>> badRequests()
    {
        String huge = "a".repeat(4100);
        return Stream.of(
                List.of("/v1/completions", "{\"prompt\": \"x\", \"max_tokens\": ", 400, "invalid_json", "", "not valid JSON at line 1, column 31"),
                List.of("/v1/completions", "{\"prompt\": \"x\", \"prompt\": \"y\"}", 400, "invalid_json", "", "Duplicate field 'prompt'"),
                List.of("/generate", "", 400, "invalid_json", "", "the request body is empty"),
                List.of("/generate", "[1, 2]", 400, "invalid_type", "", "must be a JSON object, got an array"),
                List.of("/v1/completions", "{\"prompt\": \"x\", \"max_tokens\": \"8\"}", 400, "invalid_type", "max_tokens", "max_tokens must be an integer, got the string \"8\""),
                List.of("/v1/completions", "{\"prompt\": \"x\", \"temperature\": \"hot\"}", 400, "invalid_type", "temperature", "temperature must be a number"),
                List.of("/v1/completions", "{\"prompt\": \"x\", \"stream\": 1}", 400, "invalid_type", "stream", "stream must be true or false"),
                List.of("/v1/completions", "{\"prompt\": \"x\", \"max_tokenz\": 8}", 400, "unknown_field", "max_tokenz", "unknown field 'max_tokenz'"),
                List.of("/generate", "{\"text\": \"x\", \"sampling_params\": {\"max_tokens\": 8}}", 400, "unknown_field", "sampling_params.max_tokens",
                        "unknown field 'sampling_params.max_tokens'; known fields: custom_params, ebnf, frequency_penalty, ignore_eos"),
                List.of("/generate", "{\"text\": \"x\", \"sampling_params\": {\"max_new_tokens\": 0}}", 400, "invalid_value",
                        "sampling_params.max_new_tokens", "sampling_params.max_new_tokens must be in 1..4096, got 0"),
                List.of("/generate", "{\"text\": \"x\", \"sampling_params\": {\"max_new_tokens\": 5000}}", 400, "invalid_value",
                        "sampling_params.max_new_tokens", "must be in 1..4096, got 5000"),
                List.of("/v1/completions", "{\"prompt\": \"x\", \"max_tokens\": 4095}", 400, "context_length_exceeded", "max_tokens",
                        "the prompt (2 tokens) + max_tokens (4095) = 4097 exceeds the model's context of 4096 tokens; set max_tokens to at most 4094"),
                List.of("/v1/completions", "{\"prompt\": \"" + huge + "\"}", 400, "context_length_exceeded", "prompt",
                        "the prompt is 4101 tokens; the model's context is 4096 tokens"),
                List.of("/generate", "{\"input_ids\": [], \"sampling_params\": {}}", 400, "invalid_value", "input_ids", "the prompt is empty"),
                // empty prompts: a tokenizer's start token alone is not something to continue
                List.of("/generate", "{\"text\": \"\"}", 400, "invalid_value", "text", "text is empty; send the prompt to continue"),
                List.of("/v1/completions", "{\"prompt\": \"\", \"max_tokens\": 2}", 400, "invalid_value", "prompt",
                        "prompt is empty; send the text to continue"),
                List.of("/v1/completions", "{\"prompt\": [\"\"]}", 400, "invalid_value", "prompt[0]", "prompt[0] is empty"),
                List.of("/v1/completions", "{\"prompt\": []}", 400, "invalid_value", "prompt", "the prompt is empty"),
                List.of("/v1/completions", "{\"prompt\": [[]]}", 400, "invalid_value", "prompt[0]", "the prompt is empty"),
                // the router's fields on a colocated server, however malformed, are out of place
                List.of("/generate", "{\"text\": \"x\", \"bootstrap_host\": \"not-a-host\"}", 400, "unexpected_field", "bootstrap_host",
                        "'bootstrap_host' belongs to a disaggregated deployment"),
                List.of("/v1/completions", "{\"prompt\": \"x\", \"model\": \"gpt-4\"}", 404, "model_not_found", "model",
                        "model 'gpt-4' is not served here; this server serves 'tiny-mla'"),
                List.of("/v1/completions", "{\"prompt\": \"x\", \"n\": 65}", 400, "invalid_value", "n", "n must be in 1..64, got 65"),
                List.of("/v1/completions", "{\"prompt\": \"x\", \"suffix\": \"y\"}", 400, "unsupported", "suffix",
                        "suffix = \"y\" is not supported (fill-in-the-middle is not supported: the completion only continues the prompt); leave it out"),
                List.of("/v1/completions", "{\"prompt\": [\"a\", 7]}", 400, "invalid_type", "prompt[1]", "prompt[1] must be a string as prompt[0] is"),
                List.of("/v1/completions", "{\"prompt\": [256, 104, 999]}", 400, "invalid_value", "prompt", "prompt[2] = 999 is outside [0, 259)"),
                List.of("/v1/completions", "{\"max_tokens\": 3}", 400, "missing_field", "prompt", "'prompt' is required"),
                List.of("/generate", "{\"text\": \"x\", \"input_ids\": [1]}", 400, "missing_field", "input_ids", "exactly one of them"),
                List.of("/generate", "{\"text\": \"x\", \"sampling_params\": {\"top_p\": 0}}", 400, "invalid_value", "sampling_params.top_p",
                        "sampling_params.top_p must be in (0.0, 1.0], got 0"),
                List.of("/generate", "{\"text\": \"x\", \"sampling_params\": {\"stop\": [1]}}", 400, "invalid_type", "sampling_params.stop",
                        "must be a string or an array of strings"),
                List.of("/generate", "{\"text\": \"x\", \"rid\": 5}", 400, "invalid_type", "rid", "rid must be a string, got the number 5"),
                List.of("/abort_request", "{}", 400, "missing_field", "rid", "'rid' is required"),
                List.of("/abort_request", "{\"rid\": \"nope\"}", 404, "rid_not_found", "rid", "no request with rid 'nope' is in flight"));
    }

    @ParameterizedTest
    @MethodSource("badRequests")
    void badRequestIsRefusedWithAnErrorThatSaysWhatWasWrong(List<Object> bad)
    {
        HttpResponse<String> response = local.post((String) bad.get(0), (String) bad.get(1));

        assertThat(response.statusCode()).as(response.body()).isEqualTo(bad.get(2));
        assertThat(response.headers().firstValue("Content-Type")).contains("application/json");
        assertError(LocalServer.json(response), (String) bad.get(3), (String) bad.get(4), (String) bad.get(5));
    }

    @Test
    void unknownPathAndWrongMethodAreRefusedWithJsonErrors()
    {
        HttpResponse<String> unknown = local.get("/v2/chat");
        HttpResponse<String> wrongMethod = local.get("/generate");

        assertThat(unknown.statusCode()).isEqualTo(404);
        assertError(LocalServer.json(unknown), "not_found", "", "no endpoint /v2/chat; endpoints: /abort_request, /admin/role, /bootstrap, /detokenize, /flush_cache, /generate");
        assertThat(wrongMethod.statusCode()).isEqualTo(405);
        assertThat(wrongMethod.headers().firstValue("Allow")).contains("POST");
        assertError(LocalServer.json(wrongMethod), "method_not_allowed", "", "GET is not allowed on /generate; use POST");
    }

    @Test
    void adminRoleChecksTheRoleAndHandsTheSwitchToTheServersSwitcher()
    {
        HttpResponse<String> none = local.post("/admin/role", "{\"role\": \"decode\"}");
        assertThat(none.statusCode()).isEqualTo(409);
        assertError(LocalServer.json(none), "role_switch_unavailable", "role", "this server cannot switch roles");
        assertError(LocalServer.json(local.post("/admin/role", "{\"role\": \"encoder\"}")), "invalid_value", "role",
                "role 'encoder' is not one of prefill, decode, colocated");
        assertError(LocalServer.json(local.post("/admin/role", "{}")), "missing_field", "role", "'role' is required");
        assertThat(local.post("/admin/role", "{\"role\": \"decode\", \"now\": true}").statusCode()).isEqualTo(400);

        java.util.List<String> asked = new java.util.concurrent.CopyOnWriteArrayList<>();
        local.server.roleSwitcher(role -> {
            asked.add(role);
            return new RoleSwitcher.Answer(202, "switching", "restarting as " + role);
        });
        HttpResponse<String> started = local.post("/admin/role", "{\"role\": \"prefill\"}");
        assertThat(started.statusCode()).isEqualTo(202);
        JsonNode body = LocalServer.json(started);
        assertThat(body.path("role").asText()).isEqualTo("colocated");
        assertThat(body.path("requested").asText()).isEqualTo("prefill");
        assertThat(body.path("status").asText()).isEqualTo("switching");
        assertThat(asked).containsExactly("prefill");
    }

    @Test
    void healthNamesTheRoleAndTheLoadARouterPlansWith()
    {
        local.post("/generate", "{\"text\": \"hi\", \"sampling_params\": {\"max_new_tokens\": 3}}");
        JsonNode health = LocalServer.json(local.get("/health"));
        assertThat(health.path("role").asText()).isEqualTo("colocated");
        assertThat(health.path("load").path("waiting").asInt(-1)).isZero();
        assertThat(health.path("load").path("running").asInt(-1)).isZero();
        assertThat(health.path("load").path("ttft_p90_seconds").asDouble(-1)).isPositive();
        assertThat(health.path("load").path("itl_p90_seconds").asDouble(-1)).isPositive();
    }

    @Test
    void modelsListsTheServedModel()
    {
        JsonNode body = LocalServer.json(local.get("/v1/models"));

        assertThat(body.get("object").asText()).isEqualTo("list");
        assertThat(body.get("data")).hasSize(1);
        assertThat(body.get("data").get(0).get("id").asText()).isEqualTo("tiny-mla");
        assertThat(body.get("data").get(0).get("max_model_len").asInt()).isEqualTo(4096);
        assertThat(body.get("data").get(0).get("vocab_size").asInt()).isEqualTo(259);
    }

    /** tiny-mla: kv_lora_rank 128 + qk_rope_head_dim 32 in one latent row, F32, 4 layers; not 8 heads x (32 + 32 + 32). */
    @Test
    void bootstrapDescribesTheMlaKvAsOneLatentHeadAndItsBytesPerToken()
    {
        JsonNode kv = LocalServer.json(local.get("/bootstrap")).get("kv");

        assertThat(kv.get("layout").asText()).isEqualTo("MLA");
        assertThat(kv.get("heads").asInt()).isEqualTo(1);
        assertThat(kv.get("head_dim").asInt()).isEqualTo(128 + 32);
        assertThat(kv.get("v_head_dim").asInt()).isEqualTo(128);
        assertThat(kv.get("values_in_key_row").asBoolean()).isTrue();
        assertThat(kv.get("layers").asInt()).isEqualTo(4);
        assertThat(kv.get("dtype").asText()).isEqualTo("F32");
        assertThat(kv.get("page_size").asInt()).isEqualTo(LocalServer.PAGE_SIZE);
        assertThat(kv.get("bytes_per_token").asLong()).isEqualTo(4L * (128 + 32) * Float.BYTES);
        assertThat(kv.get("bytes_per_page").asLong()).isEqualTo(LocalServer.PAGE_SIZE * 4L * (128 + 32) * Float.BYTES);
    }

    @Test
    void healthAnswersOkAndHealthGenerateRunsAOneTokenGeneration()
    {
        long before = local.scheduler.stats().generatedTokens();

        HttpResponse<String> health = local.get("/health");
        HttpResponse<String> generate = local.get("/health_generate");

        assertThat(health.statusCode()).isEqualTo(200);
        assertThat(generate.statusCode()).as(generate.body()).isEqualTo(200);
        assertThat(LocalServer.json(generate).get("status").asText()).isEqualTo("ok");
        assertThat(local.scheduler.stats().generatedTokens()).isEqualTo(before + 1);
    }

    @Test
    void metricsAreValidPrometheusTextWithPagesLatenciesAndRequestCounts()
    {
        local.post("/v1/completions", "{\"prompt\": \"metrics\", \"max_tokens\": 4, \"ignore_eos\": true}");

        HttpResponse<String> response = local.get("/metrics");

        assertThat(response.statusCode()).isEqualTo(200);
        assertThat(response.headers().firstValue("Content-Type")).contains(PrometheusText.CONTENT_TYPE);
        Map<String, Double> samples = PrometheusFormat.parse(response.body());
        double pages = samples.get("handoff_kv_pages{state=\"free\"}") + samples.get("handoff_kv_pages{state=\"owned\"}")
                + samples.get("handoff_kv_pages{state=\"receiving\"}") + samples.get("handoff_kv_pages{state=\"quarantined\"}");
        assertThat(pages).isEqualTo(samples.get("handoff_kv_pool_pages")).isEqualTo(512);
        assertThat(samples.get("handoff_http_requests_total{route=\"/v1/completions\",code=\"200\"}")).isGreaterThanOrEqualTo(1);
        assertThat(samples.get("handoff_time_to_first_token_seconds_count")).isGreaterThanOrEqualTo(1)
                .isEqualTo(samples.get("handoff_time_to_first_token_seconds_bucket{le=\"+Inf\"}"));
        assertThat(samples.get("handoff_inter_token_latency_seconds_count")).isGreaterThanOrEqualTo(3);
        assertThat(samples.get("handoff_requests_finished_total{reason=\"length\"}")).isGreaterThanOrEqualTo(1);
        assertThat(samples).containsKeys("handoff_running_requests", "handoff_waiting_requests", "handoff_prefix_cache_hit_rate",
                "handoff_prefix_cache_pages", "handoff_generation_tokens_total", "handoff_e2e_request_latency_seconds_sum");
    }

    static void assertError(JsonNode body, String code, String param, String message)
    {
        JsonNode error = body.get("error");
        assertThat(error).as("an error object in %s", body).isNotNull();
        assertThat(error.get("code").asText()).as(body.toString()).isEqualTo(code);
        assertThat(error.get("type").asText()).isNotEmpty();
        if (param.isEmpty()) {
            assertThat(error.get("param").isNull()).as(body.toString()).isTrue();
        }
        else {
            assertThat(error.get("param").asText()).as(body.toString()).isEqualTo(param);
        }
        assertThat(error.get("message").asText()).contains(message);
    }

    static int[] ids(JsonNode array)
    {
        int[] ids = new int[array.size()];
        for (int i = 0; i < ids.length; i++) {
            ids[i] = array.get(i).asInt();
        }
        return ids;
    }

    /** Every {@code data:} payload of an event stream, in order. */
    static List<String> events(HttpResponse<Stream<String>> response)
    {
        assertThat(response.statusCode()).isEqualTo(200);
        assertThat(response.headers().firstValue("Content-Type")).hasValueSatisfying(type -> assertThat(type).startsWith("text/event-stream"));
        try (Stream<String> lines = response.body()) {
            return lines.filter(line -> line.startsWith("data: ")).map(line -> line.substring(6)).toList();
        }
    }

    static String nextEvent(Iterator<String> lines)
    {
        while (lines.hasNext()) {
            String line = lines.next();
            if (line.startsWith("data: ")) {
                return line.substring(6);
            }
        }
        throw new AssertionError("the stream ended before an event");
    }

    private static Map<String, Double> metrics()
    {
        return PrometheusFormat.parse(local.get("/metrics").body());
    }
}
