package io.handoff.http.chat;

import java.io.IOException;
import java.util.List;
import java.util.Optional;

import static java.util.Objects.requireNonNull;

/** What {@link ChatCompletionsApi} needs from the engine: the served model's template, its tokenizer's encoder, and generation. */
public interface ChatModel
{
    /** The model's name as clients send it in {@code model}. */
    String id();

    /** The tokenizer's chat template with its BOS/EOS texts; empty when the model has none (chat is then refused). */
    Optional<ChatTemplate> template();

    /** The longest prompt plus output the model takes. */
    int maxContext();

    /** The rendered prompt as token ids, adding no BOS (the template writes it). */
    int[] encode(String prompt);

    /** The output tokens to produce when the request does not say. */
    default int defaultMaxTokens()
    {
        return 16;
    }

    /**
     * Runs one generation to its end, telling {@code sink} the output text (stop-string prefixes held back)
     * as it grows; a sink's {@link IOException} means the client is gone: abort and return with
     * {@link Outcome#clientGone()}. Throws {@link io.handoff.http.ApiError} when refused (context, overload).
     */
    Outcome generate(Request request, TextSink sink)
            throws InterruptedException;

    @FunctionalInterface
    interface TextSink
    {
        void onText(String textSoFar)
                throws IOException;
    }

    record Request(String rid, int[] promptIds, int maxTokens, float temperature, float topP, long seed, List<String> stops)
    {
        public Request
        {
            requireNonNull(rid, "rid is null");
            requireNonNull(promptIds, "promptIds is null");
            stops = List.copyOf(requireNonNull(stops, "stops is null"));
        }
    }

    /**
     * @param finishReason OpenAI's word: {@code stop}, {@code length}, {@code abort}, or {@code error} (then {@code error} says why)
     */
    record Outcome(String text, String finishReason, int promptTokens, int completionTokens, Optional<String> error, boolean clientGone)
    {
        public Outcome
        {
            requireNonNull(text, "text is null");
            requireNonNull(finishReason, "finishReason is null");
            requireNonNull(error, "error is null");
        }
    }
}
