package io.handoff.http;

import com.code_intelligence.jazzer.junit.FuzzTest;
import com.fasterxml.jackson.databind.node.IntNode;
import io.handoff.http.base.ApiError;
import io.handoff.http.base.JsonFields;
import io.handoff.http.chat.ChatRequest;
import io.handoff.http.fields.SamplingFields;

import java.util.Set;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Any request body is either read or refused with a 400 {@link ApiError}: never another exception, which the server
 * would turn into a 500. /v1/chat/completions goes through {@link ChatRequest#parse}; /generate and /v1/completions
 * through the same {@link JsonFields} readers, with the bounds their handlers use.
 */
class RequestBodyFuzzTest
{
    private static final int MAX_CONTEXT = 4096;
    private static final int VOCAB = 32_000;

    @FuzzTest(maxExecutions = 20_000)
    void chatBodyParsesOrIsABadRequest(byte[] body)
    {
        try {
            ChatRequest request = ChatRequest.parse(JsonFields.parse(body).copy(), MAX_CONTEXT);
            assertThat(request.messages()).isNotEmpty();
        }
        catch (ApiError e) {
            assertBadRequest(e);
        }
    }

    @FuzzTest(maxExecutions = 20_000)
    void generateAndCompletionFieldsReadOrAreABadRequest(byte[] body)
    {
        try {
            JsonFields fields = JsonFields.parse(body);
            fields.string("text");
            fields.string("rid");
            fields.bool("stream");
            fields.intArray("input_ids", 0, VOCAB);
            fields.integer("max_tokens", 1, MAX_CONTEXT);
            fields.number("temperature", 0, false, 2);
            fields.number("top_p", 0, true, 1);
            fields.integer("seed", Long.MIN_VALUE, Long.MAX_VALUE);
            fields.strings("stop", SamplingFields.MAX_STOP_STRINGS);
            fields.onlyNeutral("n", IntNode.valueOf(1), "one completion per request");
            fields.onlyNeutral("logprobs", null, "log probabilities are not returned");
            fields.raw("prompt").filter(p -> p.isArray()).ifPresent(p -> JsonFields.intArray("prompt", p, 0, VOCAB));
            fields.object("sampling_params").ifPresent(sampling -> {
                sampling.integer("max_new_tokens", 1, MAX_CONTEXT);
                sampling.intArray("stop_token_ids", 0, VOCAB);
                sampling.strings("stop", SamplingFields.MAX_STOP_STRINGS);
                sampling.bool("ignore_eos");
            });
            fields.allowOnly(Set.of("text", "rid", "stream", "input_ids", "max_tokens", "temperature", "top_p", "seed", "stop", "n",
                    "logprobs", "prompt", "sampling_params"));
        }
        catch (ApiError e) {
            assertBadRequest(e);
        }
    }

    private static void assertBadRequest(ApiError e)
    {
        assertThat(e.status()).as(e.getMessage()).isEqualTo(400);
        assertThat(e.getMessage()).isNotBlank();
    }
}
