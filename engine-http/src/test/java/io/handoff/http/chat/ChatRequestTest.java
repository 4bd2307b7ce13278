package io.handoff.http.chat;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.handoff.core.model.SamplingParams;
import io.handoff.core.output.LogprobOptions;
import io.handoff.core.output.SamplingOptions;
import io.handoff.http.base.ApiError;
import org.junit.jupiter.api.Test;

import java.util.List;
import java.util.Optional;
import java.util.OptionalInt;
import java.util.Set;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class ChatRequestTest
{
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final String USER = "\"messages\": [{\"role\": \"user\", \"content\": \"Hi\"}]";

    private static ChatRequest parse(String body)
    {
        try {
            return ChatRequest.parse((ObjectNode) JSON.readTree(body), 128);
        }
        catch (com.fasterxml.jackson.core.JsonProcessingException e) {
            throw new AssertionError(e);
        }
    }

    private static void refused(String body, String param, String message)
    {
        assertThatThrownBy(() -> parse(body))
                .isInstanceOfSatisfying(ApiError.class, e -> {
                    assertThat(e.status()).isEqualTo(400);
                    assertThat(e.param()).contains(param);
                })
                .hasMessageContaining(message);
    }

    @Test
    void aFullRequestParsesEveryField()
    {
        ChatRequest request = parse("{\"model\": \"m\", \"messages\": [{\"role\": \"system\", \"content\": \"S\"}, "
                + "{\"role\": \"user\", \"content\": [{\"type\": \"text\", \"text\": \"a\"}, {\"type\": \"text\", \"text\": \"b\"}]}, "
                + "{\"role\": \"assistant\", \"content\": null}, {\"role\": \"tool\", \"content\": \"r\", \"tool_call_id\": \"t1\"}], "
                + "\"max_completion_tokens\": 7, \"max_tokens\": 7, \"temperature\": 0.5, \"top_p\": 0.9, \"seed\": 42, \"stop\": [\"x\", \"y\"], "
                + "\"stream\": true, \"stream_options\": {\"include_usage\": true}, \"n\": 1, \"user\": \"u\", \"frequency_penalty\": 0}");
        assertThat(request).isEqualTo(new ChatRequest(Optional.of("m"), List.of(new ChatMessage("system", "S"), new ChatMessage("user", "a\nb"),
                new ChatMessage("assistant", ""), new ChatMessage("tool", "r", List.of(), List.of(), Optional.of("t1"), Optional.empty())), OptionalInt.of(7),
                new SamplingOptions(new SamplingParams(0.5f, 0.9f, 42), List.of("x", "y"), Set.of(), false, false, true), Optional.empty(), true, true, 1, Optional.empty(),
                ChatTools.NONE));
    }

    @Test
    void aMinimalRequestTakesTheDefaults()
    {
        assertThat(parse("{" + USER + ", \"stop\": \"end\"}")).isEqualTo(new ChatRequest(Optional.empty(), List.of(new ChatMessage("user", "Hi")),
                OptionalInt.empty(), new SamplingOptions(new SamplingParams(1f, 1f, 0), List.of("end"), Set.of(), false, false, true), Optional.empty(),
                false, false, 1, Optional.empty(), ChatTools.NONE));
        assertThat(parse("{" + USER + ", \"max_tokens\": 5}").maxTokens()).hasValue(5);
    }

    @Test
    void messagesMustBeANonEmptyArrayOfKnownRolesWithTextContent()
    {
        refused("{}", "messages", "'messages' is required");
        refused("{\"messages\": []}", "messages", "at least one message, got an empty array");
        refused("{\"messages\": \"Hi\"}", "messages", "messages must be an array of {role, content} objects, got the string \"Hi\"");
        refused("{\"messages\": [{\"role\": \"bot\", \"content\": \"x\"}]}", "messages[0].role",
                "messages[0].role = \"bot\" is not supported; use one of [assistant, system, tool, user]");
        refused("{\"messages\": [{\"content\": \"x\"}]}", "messages[0].role", "messages[0].role is required");
        refused("{\"messages\": [{\"role\": \"user\"}]}", "messages[0].content", "messages[0].content is required for a user message");
        refused("{\"messages\": [{\"role\": \"user\", \"content\": 3}]}", "messages[0].content", "got the number 3");
        refused("{\"messages\": [{\"role\": \"user\", \"content\": [{\"type\": \"image_url\", \"image_url\": {}}]}]}", "messages[0].content[0].type",
                "\"image_url\" is not supported");
        refused("{\"messages\": [{\"role\": \"user\", \"content\": \"x\", \"tool_calls\": []}]}", "messages[0].tool_calls",
                "only allowed on an assistant message");
        refused("{\"messages\": [{\"role\": \"user\", \"content\": \"x\", \"reasoning\": \"y\"}]}", "messages[0].reasoning", "unknown field");
    }

    @Test
    void bothTokenLimitsMustAgreeAndFitTheContext()
    {
        refused("{" + USER + ", \"max_tokens\": 5, \"max_completion_tokens\": 6}", "max_completion_tokens",
                "max_completion_tokens = 6 and max_tokens = 5 disagree");
        refused("{" + USER + ", \"max_tokens\": 0}", "max_tokens", "max_tokens must be in 1..128 (the model's context), got 0");
        refused("{" + USER + ", \"max_completion_tokens\": 129}", "max_completion_tokens", "got 129");
        refused("{" + USER + ", \"max_tokens\": 2.5}", "max_tokens", "max_tokens must be an integer, got the number 2.5");
    }

    @Test
    void samplingFieldsAreRangeChecked()
    {
        refused("{" + USER + ", \"temperature\": 3}", "temperature", "temperature must be in [0.0, 2.0], got 3");
        refused("{" + USER + ", \"temperature\": \"hot\"}", "temperature", "must be a number, got the string \"hot\"");
        refused("{" + USER + ", \"top_p\": 0}", "top_p", "top_p must be in (0.0, 1.0], got 0");
        refused("{" + USER + ", \"seed\": \"s\"}", "seed", "seed must be an integer");
    }

    @Test
    void stopStreamAndOptionsAreChecked()
    {
        refused("{" + USER + ", \"stop\": [\"\"]}", "stop", "must not contain an empty string");
        refused("{" + USER + ", \"stop\": [1]}", "stop", "stop must be a string or an array of strings");
        refused("{" + USER + ", \"stop\": " + JSON.valueToTree(java.util.Collections.nCopies(17, "s")) + "}", "stop", "at most 16 strings, got 17");
        refused("{" + USER + ", \"stream\": \"yes\"}", "stream", "stream must be true or false");
        refused("{" + USER + ", \"stream_options\": {\"include_usage\": true}}", "stream_options", "only allowed with \"stream\": true");
        refused("{" + USER + ", \"stream\": true, \"stream_options\": {\"usage\": true}}", "stream_options.usage", "unknown field 'stream_options.usage'");
    }

    @Test
    void unimplementedOptionsAreTakenOnlyAtTheirNeutralValue()
    {
        refused("{" + USER + ", \"n\": 0}", "n", "n must be in 1..64, got 0");
        refused("{" + USER + ", \"logit_bias\": {\"5\": 1}}", "logit_bias", "logit bias is not implemented");
        refused("{" + USER + ", \"lora_path\": \"adapter\"}", "lora_path", "LoRA adapters are not served");
        refused("{" + USER + ", \"tools\": [{}]}", "tools[0].type", "only function tools are supported");
        refused("{" + USER + ", \"response_format\": {\"type\": \"xml\"}}", "response_format.type", "use text, json_object or json_schema");
        refused("{" + USER + ", \"best_of\": 2}", "best_of", "unknown field 'best_of'; known fields: ");
        assertThat(parse("{" + USER + ", \"n\": 1, \"tools\": [], \"tool_choice\": \"none\", \"logprobs\": false}").messages()).hasSize(1);
    }

    @Test
    void theSamplingFieldsAndLogprobsOfEveryApiAreTaken()
    {
        ChatRequest request = parse("{" + USER + ", \"max_tokens\": 9, \"top_k\": 5, \"min_p\": 0.1, \"repetition_penalty\": 1.2, "
                + "\"frequency_penalty\": 0.3, \"presence_penalty\": -0.4, \"min_tokens\": 2, \"seed\": 4, \"ignore_eos\": true, "
                + "\"stop_token_ids\": [7], \"no_stop_trim\": true, \"skip_special_tokens\": false, \"logprobs\": true, \"top_logprobs\": 3, "
                + "\"lora_path\": null, \"logit_bias\": {}}");
        assertThat(request.sampling()).isEqualTo(new SamplingOptions(new SamplingParams(1f, 1f, 5, 0.1f, 1.2f, 0.3f, -0.4f, 2, 4), List.of(),
                Set.of(7), true, true, false));
        assertThat(request.logprobs()).contains(new LogprobOptions(3, -1, true));
        refused("{" + USER + ", \"top_logprobs\": 2}", "top_logprobs", "top_logprobs = 2 needs \"logprobs\": true");
        refused("{" + USER + ", \"logprobs\": true, \"top_logprobs\": 21}", "top_logprobs", "top_logprobs must be in 0..20, got 21");
        refused("{" + USER + ", \"max_tokens\": 3, \"min_tokens\": 4}", "min_tokens", "min_tokens = 4 exceeds the output limit of 3 tokens");
    }
}
