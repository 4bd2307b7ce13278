package io.handoff.http;

import com.fasterxml.jackson.databind.JsonNode;
import io.handoff.core.model.ByteTokenizer;
import io.handoff.core.model.SamplingParams;
import io.handoff.core.runtime.ChatTemplateText;
import io.handoff.core.scheduler.GenerateRequest;
import io.handoff.core.scheduler.GenerateResult;
import io.handoff.core.scheduler.KvHandoff;
import io.handoff.core.scheduler.LogprobRequest;
import io.handoff.core.scheduler.SchedulerConfig;
import io.handoff.core.scheduler.TokenListener;
import io.handoff.http.base.ServerConfig;
import io.handoff.http.fields.TokenTexts;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

import java.io.IOException;
import java.net.http.HttpResponse;
import java.time.Instant;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.stream.Stream;

import static io.handoff.http.ApiServerTest.assertError;
import static io.handoff.http.ApiServerTest.events;
import static io.handoff.http.ApiServerTest.ids;
import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/**
 * The per-generation fields of {@code /generate}, {@code /v1/completions} and {@code /v1/chat/completions} over real HTTP
 * against the real scheduler: each field's range errors, what the accepted ones run, stop trimming, echo, the log
 * probability shapes and a per-request {@code created}.
 */
class ApiParamsTest
{
    static final String TEMPLATE = "{%- for m in messages %}{{- '<|' + m.role + '|>' + m.content + '\\n' }}{%- endfor %}"
            + "{%- if add_generation_prompt %}{{- '<|assistant|>' }}{% endif %}";
    private static final ByteTokenizer TOKENIZER = new ByteTokenizer();
    private static LocalServer local;

    @BeforeAll
    static void start()
            throws IOException
    {
        local = new LocalServer(new SchedulerConfig(8, 256, 64, true, 2), ServerConfig.loopback(), 512, null, KvHandoff.NONE,
                Optional.of(new ChatTemplateText(TEMPLATE, "", "")));
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

    private static final String CHAT = "{\"messages\": [{\"role\": \"user\", \"content\": \"Hi\"}]";

    static Stream<List<String>> badFields()
    {
        String generate = "{\"text\": \"hello\", \"sampling_params\": {\"max_new_tokens\": 4, ";
        return Stream.of(
                List.of("/generate", generate + "\"top_k\": 0}}", "sampling_params.top_k", "sampling_params.top_k = 0 leaves no token to sample"),
                List.of("/generate", generate + "\"top_k\": -2}}", "sampling_params.top_k", "must be in -1..2147483647, got -2"),
                List.of("/generate", generate + "\"min_p\": 1.5}}", "sampling_params.min_p", "sampling_params.min_p must be in [0.0, 1.0], got 1.5"),
                List.of("/generate", generate + "\"repetition_penalty\": 0}}", "sampling_params.repetition_penalty", "must be in (0.0, 2.0], got 0"),
                List.of("/generate", generate + "\"repetition_penalty\": 2.5}}", "sampling_params.repetition_penalty", "got 2.5"),
                List.of("/generate", generate + "\"frequency_penalty\": 2.5}}", "sampling_params.frequency_penalty", "must be in [-2.0, 2.0], got 2.5"),
                List.of("/generate", generate + "\"presence_penalty\": -3}}", "sampling_params.presence_penalty", "must be in [-2.0, 2.0], got -3"),
                List.of("/generate", generate + "\"min_new_tokens\": 5}}", "sampling_params.min_new_tokens",
                        "sampling_params.min_new_tokens = 5 exceeds the output limit of 4 tokens"),
                List.of("/generate", generate + "\"min_new_tokens\": -1}}", "sampling_params.min_new_tokens", "got -1"),
                List.of("/generate", generate + "\"seed\": 1, \"sampling_seed\": 2}}", "sampling_params.sampling_seed",
                        "sampling_params.sampling_seed = 2 and sampling_params.seed = 1 disagree"),
                List.of("/generate", generate + "\"logit_bias\": {\"65\": 5}}}", "sampling_params.logit_bias", "logit bias is not implemented"),
                List.of("/generate", generate + "\"json_schema\": \"{\\\"not\\\": {}}\"}}", "sampling_params.json_schema",
                        "sampling_params.json_schema: #: the keyword 'not' cannot be enforced by this engine"),
                List.of("/generate", generate + "\"json_schema\": \"{\\\"type\\\": \"}}", "sampling_params.json_schema", "is not JSON"),
                List.of("/generate", generate + "\"regex\": \"a\", \"ebnf\": \"root ::= \\\"a\\\"\"}}", "sampling_params.ebnf",
                        "set one constraint, not regex and ebnf"),
                List.of("/generate", generate + "\"ebnf\": \"root ::= root \\\"a\\\"\"}}", "sampling_params.ebnf", "left-recursive"),
                List.of("/generate", generate + "\"structural_tag\": \"{}\"}}", "sampling_params.structural_tag", "structural tags are not implemented"),
                List.of("/generate", generate + "\"stop_token_ids\": [300]}}", "sampling_params.stop_token_ids", "= 300 is outside [0, 259)"),
                List.of("/generate", generate + "\"no_stop_trim\": 1}}", "sampling_params.no_stop_trim", "must be true or false"),
                List.of("/generate", generate + "\"skip_special_tokens\": \"no\"}}", "sampling_params.skip_special_tokens", "must be true or false"),
                List.of("/generate", generate + "\"spaces_between_special_tokens\": 0}}", "sampling_params.spaces_between_special_tokens",
                        "must be true or false"),
                List.of("/generate", generate + "\"temperature\": -1}}", "sampling_params.temperature", "must be in [0.0, 100.0], got -1"),
                List.of("/generate", "{\"text\": \"hello\", \"return_logprob\": true, \"top_logprobs_num\": 21}", "top_logprobs_num",
                        "top_logprobs_num must be in 0..20, got 21"),
                // "hello" is 6 tokens with the BOS: positions 0..5
                List.of("/generate", "{\"text\": \"hello\", \"return_logprob\": true, \"logprob_start_len\": 6}", "logprob_start_len",
                        "logprob_start_len must be in -1..5, got 6"),
                List.of("/generate", "{\"text\": \"hello\", \"logprob_start_len\": -2}", "logprob_start_len", "got -2"),
                List.of("/generate", "{\"text\": \"hello\", \"return_logprob\": \"yes\"}", "return_logprob", "must be true or false"),
                List.of("/generate", "{\"text\": \"hello\", \"token_ids_logprob\": [5]}", "token_ids_logprob",
                        "log probabilities of chosen token ids are not returned"),
                List.of("/generate", "{\"text\": \"hello\", \"lora_path\": \"adapter\"}", "lora_path", "LoRA adapters are not served"),
                List.of("/generate", "{\"text\": \"hello\", \"image_data\": \"x.png\"}", "image_data", "this model takes text only"),
                List.of("/generate", "{\"text\": \"hello\", \"return_hidden_states\": true}", "return_hidden_states", "hidden states are not returned"),
                List.of("/generate", "{\"text\": \"hello\", \"custom_logit_processor\": \"p\"}", "custom_logit_processor", "not run"),
                List.of("/generate", "{\"text\": \"hello\", \"session_params\": {}}", "session_params", "sessions are not kept"),
                List.of("/generate", "{\"text\": \"hello\", \"data_parallel_rank\": 1}", "data_parallel_rank", "leave it out or set it to 0"),
                List.of("/generate", "{\"text\": \"hello\", \"modalities\": [\"image\"]}", "modalities", "this model takes text only"),
                List.of("/generate", "{\"text\": \"hello\", \"stream_options\": {\"usage\": true}}", "stream_options.usage", "unknown field"),
                List.of("/v1/completions", "{\"prompt\": \"hello\", \"logprobs\": 21}", "logprobs", "logprobs must be in 0..20, got 21"),
                List.of("/v1/completions", "{\"prompt\": \"hello\", \"max_tokens\": 2, \"min_tokens\": 3}", "min_tokens",
                        "min_tokens = 3 exceeds the output limit of 2 tokens"),
                List.of("/v1/completions", "{\"prompt\": \"hello\", \"top_k\": 0}", "top_k", "top_k = 0 leaves no token to sample"),
                List.of("/v1/completions", "{\"prompt\": \"hello\", \"temperature\": 2.5}", "temperature", "must be in [0.0, 2.0], got 2.5"),
                List.of("/v1/completions", "{\"prompt\": \"hello\", \"presence_penalty\": 2.01}", "presence_penalty", "got 2.01"),
                List.of("/v1/completions", "{\"prompt\": \"hello\", \"lora_path\": \"adapter\"}", "lora_path", "LoRA adapters are not served"),
                List.of("/v1/completions", "{\"prompt\": \"hello\", \"regex\": \"(a+\"}", "regex", "regex: regular expression \"(a+\" at offset 3: expected ')'"),
                List.of("/v1/completions", "{\"prompt\": \"hello\", \"regex\": \"a+\", \"response_format\": {\"type\": \"json_object\"}}", "response_format",
                        "response_format and regex both constrain the output; send one"),
                List.of("/v1/completions", "{\"prompt\": \"hello\", \"response_format\": {\"type\": \"json_schema\", \"json_schema\": {\"schema\": "
                        + "{\"type\": \"string\", \"format\": \"uri\"}}}}", "response_format.json_schema.schema", "'uri' cannot be enforced"),
                List.of("/v1/chat/completions", CHAT + ", \"top_logprobs\": 2}", "top_logprobs", "needs \"logprobs\": true"),
                List.of("/v1/chat/completions", CHAT + ", \"top_k\": 0}", "top_k", "leaves no token to sample"),
                List.of("/v1/chat/completions", CHAT + ", \"repetition_penalty\": 3}", "repetition_penalty", "got 3"),
                List.of("/v1/chat/completions", CHAT + ", \"max_tokens\": 1, \"min_tokens\": 2}", "min_tokens", "exceeds the output limit of 1 tokens"),
                List.of("/v1/chat/completions", CHAT + ", \"logit_bias\": {\"1\": 2}}", "logit_bias", "logit bias is not implemented"));
    }

    @ParameterizedTest
    @MethodSource("badFields")
    void aBadFieldIsA400NamingIt(List<String> bad)
    {
        HttpResponse<String> response = local.post(bad.get(0), bad.get(1));

        assertThat(response.statusCode()).as(response.body()).isEqualTo(400);
        JsonNode body = LocalServer.json(response);
        assertThat(body.at("/error/param").asText()).as(body.toString()).isEqualTo(bad.get(2));
        assertThat(body.at("/error/message").asText()).as(body.toString()).contains(bad.get(3));
    }

    private static final SamplingParams EVERY_RULE = new SamplingParams(0.8f, 0.9f, 20, 0.05f, 1.1f, 0.2f, 0.1f, 4, 7);

    private static int[] direct(int[] prompt, int maxNewTokens, SamplingParams sampling)
    {
        return direct(prompt, maxNewTokens, sampling, false);
    }

    private static int[] direct(int[] prompt, int maxNewTokens, SamplingParams sampling, boolean ignoreEos)
    {
        GenerateResult result = local.scheduler.submit(new GenerateRequest("direct-" + System.nanoTime(), prompt, maxNewTokens, sampling, Set.of(),
                ignoreEos, false), TokenListener.NONE).result().join();
        return result.outputIds();
    }

    @Test
    void everySamplingFieldReachesTheEngineInEachApisSpelling()
    {
        int[] expected = direct(TOKENIZER.encode("Once upon a time", true), 8, EVERY_RULE);

        JsonNode generate = LocalServer.json(local.post("/generate", "{\"text\": \"Once upon a time\", \"sampling_params\": {\"max_new_tokens\": 8, "
                + "\"temperature\": 0.8, \"top_k\": 20, \"top_p\": 0.9, \"min_p\": 0.05, \"sampling_seed\": 7, \"repetition_penalty\": 1.1, "
                + "\"frequency_penalty\": 0.2, \"presence_penalty\": 0.1, \"min_new_tokens\": 4, \"spaces_between_special_tokens\": true, "
                + "\"json_schema\": null, \"logit_bias\": {}}}"));
        JsonNode completion = LocalServer.json(local.post("/v1/completions", "{\"prompt\": \"Once upon a time\", \"max_tokens\": 8, "
                + "\"temperature\": 0.8, \"top_k\": 20, \"top_p\": 0.9, \"min_p\": 0.05, \"seed\": 7, \"repetition_penalty\": 1.1, "
                + "\"frequency_penalty\": 0.2, \"presence_penalty\": 0.1, \"min_tokens\": 4, \"logit_bias\": {}, \"lora_path\": null}"));

        assertThat(ids(generate.get("output_ids"))).containsExactly(expected);
        assertThat(completion.at("/choices/0/text").asText()).isEqualTo(TOKENIZER.decode(expected));
    }

    @Test
    void everyApiHoldsItsOutputToTheConstraintItSends()
    {
        String schema = "{\"type\": \"object\", \"properties\": {\"ok\": {\"type\": \"boolean\"}, \"n\": {\"type\": \"integer\", \"minimum\": 1, "
                + "\"maximum\": 9}}, \"required\": [\"ok\", \"n\"], \"additionalProperties\": false}";
        String objectPattern = "\\{\\s*\"ok\"\\s*:\\s*(true|false)\\s*,\\s*\"n\"\\s*:\\s*[1-9]\\s*}";
        JsonNode generate = LocalServer.json(local.post("/generate", "{\"text\": \"Answer:\", \"sampling_params\": {\"max_new_tokens\": 200, "
                + "\"temperature\": 0.9, \"seed\": 5, \"regex\": \"(yes|no), [0-9]{3}\\\\.\"}}"));
        assertThat(generate.get("text").asText()).matches("(yes|no), [0-9]{3}\\.");
        assertThat(generate.at("/meta_info/finish_reason/type").asText()).isEqualTo("stop");
        JsonNode completion = LocalServer.json(local.post("/v1/completions", "{\"prompt\": \"JSON:\", \"max_tokens\": 200, \"temperature\": 0.8, "
                + "\"seed\": 2, \"response_format\": {\"type\": \"json_schema\", \"json_schema\": {\"name\": \"s\", \"schema\": " + schema + "}}}"));
        assertThat(completion.at("/choices/0/text").asText()).matches(objectPattern);
        assertThat(completion.at("/choices/0/finish_reason").asText()).isEqualTo("stop");
        JsonNode chat = LocalServer.json(local.post("/v1/chat/completions", CHAT + ", \"max_tokens\": 200, \"temperature\": 0.8, \"seed\": 4, "
                + "\"json_schema\": " + schema + "}"));
        assertThat(chat.at("/choices/0/message/content").asText()).matches(objectPattern);
    }

    @Test
    void topKOfOneAndMinPOfOneSampleTheGreedyToken()
    {
        String greedy = LocalServer.json(local.post("/v1/completions", "{\"prompt\": \"Once\", \"max_tokens\": 10, \"temperature\": 0, "
                + "\"ignore_eos\": true}")).at("/choices/0/text").asText();
        String sampled = "{\"prompt\": \"Once\", \"max_tokens\": 10, \"temperature\": 1.5, \"seed\": 3, \"ignore_eos\": true";

        assertThat(LocalServer.json(local.post("/v1/completions", sampled + "}")).at("/choices/0/text").asText()).isNotEqualTo(greedy);
        assertThat(LocalServer.json(local.post("/v1/completions", sampled + ", \"top_k\": 1}")).at("/choices/0/text").asText()).isEqualTo(greedy);
        assertThat(LocalServer.json(local.post("/v1/completions", sampled + ", \"min_p\": 1}")).at("/choices/0/text").asText()).isEqualTo(greedy);
        JsonNode generate = LocalServer.json(local.post("/generate", "{\"text\": \"Once\", \"sampling_params\": {\"max_new_tokens\": 10, "
                + "\"temperature\": 1.5, \"sampling_seed\": 3, \"ignore_eos\": true, \"top_k\": 1}}"));
        assertThat(generate.get("text").asText()).isEqualTo(greedy);
    }

    @Test
    void chatSamplesWithTheSameFieldsAsTheOtherApis()
    {
        int[] prompt = TOKENIZER.encode("<|user|>Hi\n<|assistant|>", false);
        int[] expected = direct(prompt, 6, new SamplingParams(0.7f, 1f, 5, 0f, 1.3f, 0f, 0.5f, 2, 11));

        JsonNode chat = LocalServer.json(local.post("/v1/chat/completions", CHAT + ", \"max_tokens\": 6, \"temperature\": 0.7, \"top_k\": 5, "
                + "\"repetition_penalty\": 1.3, \"presence_penalty\": 0.5, \"min_tokens\": 2, \"seed\": 11, \"ignore_eos\": false}"));

        assertThat(chat.at("/choices/0/message/content").asText()).isEqualTo(TOKENIZER.decode(expected));
        assertThat(chat.at("/usage/prompt_tokens").asInt()).isEqualTo(prompt.length);
    }

    @Test
    void noStopTrimKeepsTheStopStringInTheText()
    {
        String free = LocalServer.json(local.post("/generate", "{\"text\": \"abc\", \"sampling_params\": {\"max_new_tokens\": 12, "
                + "\"temperature\": 0, \"ignore_eos\": true}}")).get("text").asText();
        // a stop string from the middle of the greedy output: two characters that start at index 3
        String stop = free.substring(3, 5);
        int at = free.indexOf(stop);
        String body = "{\"text\": \"abc\", \"sampling_params\": {\"max_new_tokens\": 12, \"temperature\": 0, \"ignore_eos\": true, "
                + "\"stop\": " + LocalServer.JSON.valueToTree(stop);

        JsonNode trimmed = LocalServer.json(local.post("/generate", body + "}}"));
        JsonNode kept = LocalServer.json(local.post("/generate", body + ", \"no_stop_trim\": true}}"));

        assertThat(trimmed.get("text").asText()).isEqualTo(free.substring(0, at));
        assertThat(kept.get("text").asText()).isEqualTo(free.substring(0, at + stop.length()));
        assertThat(kept.at("/meta_info/finish_reason/matched").asText()).isEqualTo(stop);
        assertThat(kept.get("output_ids")).isEqualTo(trimmed.get("output_ids"));
    }

    @Test
    void echoPutsThePromptBeforeTheCompletionAndItsTokensFirstInTheLogprobs()
    {
        int[] expected = direct(TOKENIZER.encode("Hello", true), 4, SamplingParams.GREEDY, true);
        JsonNode echoed = LocalServer.json(local.post("/v1/completions", "{\"prompt\": \"Hello\", \"max_tokens\": 4, \"temperature\": 0, "
                + "\"ignore_eos\": true, \"echo\": true, \"logprobs\": 2}"));

        assertThat(echoed.at("/choices/0/text").asText()).isEqualTo("Hello" + TOKENIZER.decode(expected));
        JsonNode logprobs = echoed.at("/choices/0/logprobs");
        // BOS, H, e, l, l, o, then the four output tokens
        assertThat(logprobs.get("tokens")).hasSize(6 + 4);
        assertThat(logprobs.get("tokens").get(0).asText()).isEqualTo("<s>");
        assertThat(logprobs.get("tokens").get(1).asText()).isEqualTo("H");
        assertThat(logprobs.get("token_logprobs").get(0).isNull()).isTrue();
        assertThat(logprobs.get("top_logprobs").get(0).isNull()).isTrue();
        // the BOS has no characters in the text; each byte (or U+FFFD for a part of a character) has one
        assertThat(ints(logprobs.get("text_offset"))).containsExactly(0, 0, 1, 2, 3, 4, 5, 6, 7, 8);
        for (int i = 0; i < 4; i++) {
            assertThat(logprobs.get("tokens").get(6 + i).asText()).isEqualTo(TokenTexts.of(TOKENIZER).text(expected[i]));
        }
        assertThat(echoed.at("/usage/completion_tokens").asInt()).isEqualTo(4);
        JsonNode plain = LocalServer.json(local.post("/v1/completions", "{\"prompt\": \"Hello\", \"max_tokens\": 4, \"temperature\": 0, "
                + "\"ignore_eos\": true, \"echo\": true}"));
        assertThat(plain.at("/choices/0/text")).isEqualTo(echoed.at("/choices/0/text"));
        assertThat(plain.at("/choices/0/logprobs").isNull()).isTrue();
    }

    @Test
    void sglangLogprobsFollowSglangsShapes()
    {
        JsonNode body = LocalServer.json(local.post("/generate", "{\"text\": \"The capital\", \"sampling_params\": {\"max_new_tokens\": 5, "
                + "\"temperature\": 0, \"ignore_eos\": true}, \"return_logprob\": true, \"top_logprobs_num\": 3, \"logprob_start_len\": 0, "
                + "\"return_text_in_logprobs\": true}"));

        JsonNode meta = body.get("meta_info");
        int[] prompt = TOKENIZER.encode("The capital", true);
        int[] output = ids(body.get("output_ids"));
        JsonNode input = meta.get("input_token_logprobs");
        assertThat(input).hasSize(prompt.length);
        assertThat(input.get(0).get(0).isNull()).isTrue();
        for (int p = 0; p < prompt.length; p++) {
            assertThat(input.get(p)).hasSize(3);
            assertThat(input.get(p).get(1).asInt()).isEqualTo(prompt[p]);
            assertThat(input.get(p).get(2).asText()).isEqualTo(TokenTexts.of(TOKENIZER).text(prompt[p]));
        }
        assertThat(meta.get("input_top_logprobs")).hasSize(prompt.length);
        assertThat(meta.get("input_top_logprobs").get(0).isNull()).isTrue();
        JsonNode outputLogprobs = meta.get("output_token_logprobs");
        assertThat(outputLogprobs).hasSize(output.length);
        assertThat(meta.get("output_top_logprobs")).hasSize(output.length);
        for (int i = 0; i < output.length; i++) {
            assertThat(outputLogprobs.get(i).get(1).asInt()).isEqualTo(output[i]);
        }
    }

    @Test
    void sglangsDefaultStartReportsOnlyThePromptsLastPositionAndNoTextUnlessAsked()
    {
        JsonNode meta = LocalServer.json(local.post("/generate", "{\"text\": \"abc\", \"sampling_params\": {\"max_new_tokens\": 3, "
                + "\"temperature\": 0, \"ignore_eos\": true}, \"return_logprob\": true, \"logprob_start_len\": -1, \"lora_path\": null}")).get("meta_info");

        assertThat(meta.get("input_token_logprobs")).isEqualTo(LocalServer.json("[[null, 99, null]]"));
        assertThat(meta.get("output_token_logprobs")).hasSize(3).allSatisfy(triple -> assertThat(triple.get(2).isNull()).isTrue());
        assertThat(meta.has("output_top_logprobs")).isFalse();
    }

    @Test
    void logprobValuesAreTheEnginesAndTheGreedyChoiceIsTheMostLikely()
    {
        assumeTrue(engineComputesLogprobs(), "the engine does not compute log probabilities yet");
        JsonNode meta = LocalServer.json(local.post("/generate", "{\"text\": \"The capital\", \"sampling_params\": {\"max_new_tokens\": 5, "
                + "\"temperature\": 0, \"ignore_eos\": true}, \"return_logprob\": true, \"top_logprobs_num\": 3, \"logprob_start_len\": 0}"))
                .get("meta_info");
        JsonNode output = meta.get("output_token_logprobs");
        JsonNode top = meta.get("output_top_logprobs");
        for (int i = 0; i < output.size(); i++) {
            assertThat(output.get(i).get(0).asDouble()).isLessThanOrEqualTo(0);
            assertThat(top.get(i)).hasSize(3);
            assertThat(top.get(i).get(0).get(1).asInt()).isEqualTo(output.get(i).get(1).asInt());
            assertThat(top.get(i).get(0).get(0).asDouble()).isEqualTo(output.get(i).get(0).asDouble());
        }
        for (int p = 1; p < meta.get("input_token_logprobs").size(); p++) {
            assertThat(meta.get("input_token_logprobs").get(p).get(0).isNumber()).isTrue();
        }
    }

    @Test
    void completionAndChatLogprobsHaveOpenAisShapesInWholeAndStreamedAnswers()
    {
        assumeTrue(engineComputesLogprobs(), "the engine does not compute log probabilities yet");
        String request = "{\"prompt\": \"Hi\", \"max_tokens\": 5, \"temperature\": 0, \"ignore_eos\": true, \"logprobs\": 2";
        JsonNode whole = LocalServer.json(local.post("/v1/completions", request + "}")).at("/choices/0/logprobs");
        assertThat(whole.get("tokens")).hasSize(5);
        // the two most likely and the chosen one among them (greedy: the first), by their text (two U+FFFDs are one key)
        assertThat(whole.get("top_logprobs").get(0).size()).isBetween(1, 2);
        List<JsonNode> chunks = events(local.stream("/v1/completions", request + ", \"stream\": true}")).stream()
                .filter(event -> !event.equals("[DONE]")).map(LocalServer::json).toList();
        List<Double> streamed = chunks.stream().flatMap(chunk -> stream(chunk.at("/choices/0/logprobs/token_logprobs"))).map(JsonNode::asDouble).toList();
        assertThat(streamed).isEqualTo(stream(whole.get("token_logprobs")).map(JsonNode::asDouble).toList());

        JsonNode chat = LocalServer.json(local.post("/v1/chat/completions", CHAT + ", \"max_tokens\": 4, \"temperature\": 0, \"ignore_eos\": true, "
                + "\"logprobs\": true, \"top_logprobs\": 2}")).at("/choices/0/logprobs/content");
        assertThat(chat).hasSize(4);
        for (JsonNode entry : chat) {
            assertThat(entry.get("top_logprobs")).hasSize(2);
            assertThat(entry.get("top_logprobs").get(0).get("token")).isEqualTo(entry.get("token"));
            assertThat(entry.get("bytes")).hasSize(1);
        }
    }

    @Test
    void generateStreamsThePromptsLogprobsFromTheFirstChunkEqualToTheWholeAnswers()
    {
        assumeTrue(engineComputesLogprobs(), "the engine does not compute log probabilities yet");
        String request = "{\"text\": [\"The capital\", \"Hi\"], \"sampling_params\": {\"max_new_tokens\": 4, \"temperature\": 0, "
                + "\"ignore_eos\": true, \"n\": 2}, \"return_logprob\": true, \"top_logprobs_num\": 2, \"logprob_start_len\": 0";
        JsonNode whole = LocalServer.json(local.post("/generate", request + "}"));
        List<JsonNode> chunks = events(local.stream("/generate", request + ", \"stream\": true}")).stream()
                .filter(event -> !event.equals("[DONE]")).map(LocalServer::json).toList();

        assertThat(whole).hasSize(4);
        for (int index = 0; index < 4; index++) {
            JsonNode meta = whole.get(index).get("meta_info");
            int at = index;
            List<JsonNode> own = chunks.stream().filter(chunk -> chunk.get("index").asInt() == at).toList();
            assertThat(own).hasSize(4 + 1);
            // every chunk, the first included, carries the prompt's entries (SGLang's meta_info is cumulative)
            for (JsonNode chunk : own) {
                assertThat(chunk.at("/meta_info/input_token_logprobs")).isEqualTo(meta.get("input_token_logprobs"));
                assertThat(chunk.at("/meta_info/input_top_logprobs")).isEqualTo(meta.get("input_top_logprobs"));
            }
            assertThat(meta.get("input_token_logprobs").get(1).get(0).isNumber()).isTrue();
            assertThat(own.getFirst().at("/meta_info/output_token_logprobs")).hasSize(1);
        }
    }

    @Test
    void streamedEchoWithLogprobsStartsEachChoiceWithItsPromptAsTheWholeAnswerDoes()
    {
        assumeTrue(engineComputesLogprobs(), "the engine does not compute log probabilities yet");
        String request = "{\"prompt\": [\"Hello\", \"Hi\"], \"n\": 2, \"max_tokens\": 4, \"temperature\": 0, \"ignore_eos\": true, "
                + "\"echo\": true, \"logprobs\": 2";
        JsonNode whole = LocalServer.json(local.post("/v1/completions", request + "}"));
        List<JsonNode> chunks = events(local.stream("/v1/completions", request + ", \"stream\": true}")).stream()
                .filter(event -> !event.equals("[DONE]")).map(LocalServer::json).toList();

        for (int index = 0; index < 4; index++) {
            JsonNode choice = whole.at("/choices/" + index);
            int at = index;
            List<JsonNode> own = chunks.stream().map(chunk -> chunk.at("/choices/0")).filter(c -> c.get("index").asInt() == at).toList();
            String prompt = index < 2 ? "Hello" : "Hi";
            JsonNode first = own.getFirst();
            assertThat(first.get("text").asText()).startsWith(prompt);
            assertThat(first.at("/logprobs/token_logprobs/0").isNull()).isTrue();
            assertThat(first.at("/logprobs/tokens")).hasSize(TOKENIZER.encodePrompt(prompt).length + 1);
            assertThat(own.stream().map(c -> c.get("text").asText()).reduce("", String::concat)).isEqualTo(choice.get("text").asText());
            for (String list : List.of("tokens", "token_logprobs", "top_logprobs", "text_offset")) {
                assertThat(own.stream().flatMap(c -> stream(c.at("/logprobs/" + list))).toList())
                        .as(list).isEqualTo(stream(choice.at("/logprobs/" + list)).toList());
            }
        }
    }

    @Test
    void createdIsWhenEachRequestArrived()
    {
        long before = Instant.now().getEpochSecond();
        JsonNode completion = LocalServer.json(local.post("/v1/completions", "{\"prompt\": \"a\", \"max_tokens\": 1}"));
        JsonNode chat = LocalServer.json(local.post("/v1/chat/completions", CHAT + ", \"max_tokens\": 1}"));
        long after = Instant.now().getEpochSecond();

        assertThat(completion.get("created").asLong()).isBetween(before, after);
        assertThat(chat.get("created").asLong()).isBetween(before, after);
    }

    private static boolean engineComputesLogprobs()
    {
        GenerateRequest request = new GenerateRequest("probe-" + System.nanoTime(), TOKENIZER.encode("a", true), 1, SamplingParams.GREEDY,
                Set.of(), true, false).withLogprobs(new LogprobRequest(1, -1));
        return !local.scheduler.submit(request, TokenListener.NONE).result().join().logprobs().output().isEmpty();
    }

    private static Stream<JsonNode> stream(JsonNode array)
    {
        return array == null || array.isNull() ? Stream.empty() : Stream.iterate(0, i -> i < array.size(), i -> i + 1).map(array::get);
    }

    private static int[] ints(JsonNode array)
    {
        return stream(array).mapToInt(JsonNode::asInt).toArray();
    }
}
