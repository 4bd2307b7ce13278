package io.handoff.http.chat;

import io.handoff.core.output.LogprobOptions;
import io.handoff.core.output.SamplingOptions;
import io.handoff.core.scheduler.RoomTicket;
import io.handoff.core.scheduler.TokenLogprob;
import io.handoff.http.base.ApiError;
import io.handoff.http.base.Exchange;
import io.handoff.http.base.JsonFields;
import io.handoff.http.fields.TokenTexts;

import java.io.IOException;
import java.util.List;
import java.util.Optional;
import java.util.OptionalInt;

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

    /** Token ids are below this. */
    int vocabSize();

    /** The id of the special token written {@code text}, when the tokenizer has one (a tool format's start token). */
    default OptionalInt specialTokenId(String text)
    {
        return OptionalInt.empty();
    }

    /** How log-probability entries show a token. */
    TokenTexts tokenTexts();

    /** The output tokens to produce when the request does not say. */
    default int defaultMaxTokens()
    {
        return 16;
    }

    /** The room of a request a router sent to a prefill or decode (checked against who sent it); empty on a colocated server. */
    Optional<RoomTicket> ticket(JsonFields body, Exchange exchange);

    /**
     * Runs the request's {@code n} generations to their end, telling {@code sink} each one's output text (stop-string
     * prefixes held back), tokens and (when asked for) their log probabilities as they grow; a sink's {@link IOException}
     * means the client is gone: all are aborted and the result says {@link Result#clientGone()}. Throws
     * {@link io.handoff.http.base.ApiError} when refused (context, overload).
     */
    Result generate(Request request, TextSink sink)
            throws InterruptedException;

    @FunctionalInterface
    interface TextSink
    {
        /**
         * @param index the choice
         * @param logprobsSoFar one per output token so far; empty when the request asked for none
         */
        void onText(int index, String textSoFar, int[] outputIdsSoFar, List<TokenLogprob> logprobsSoFar)
                throws IOException;
    }

    /**
     * One request: how to sample and stop, and the log probabilities to return (the output's).
     *
     * @param n how many choices, each from the same prompt; choice {@code j} samples with seed {@code seed + j}
     * @param ticket the room of the first choice (choice {@code j} has the next ones) on a prefill or decode
     */
    record Request(String rid, int[] promptIds, int maxTokens, SamplingOptions sampling, Optional<LogprobOptions> logprobs, int n,
            Optional<RoomTicket> ticket)
    {
        public Request
        {
            requireNonNull(rid, "rid is null");
            requireNonNull(promptIds, "promptIds is null");
            requireNonNull(sampling, "sampling is null");
            requireNonNull(logprobs, "logprobs is null");
            requireNonNull(ticket, "ticket is null");
        }

        public List<String> stops()
        {
            return sampling.stops();
        }
    }

    /**
     * @param outcomes every choice's, by index
     * @param failure the error the client is told when a choice failed (the others were aborted)
     * @param clientGone the client disconnected before the end, and every choice was aborted for it
     */
    record Result(List<Outcome> outcomes, Optional<ApiError> failure, boolean clientGone)
    {
        public Result
        {
            outcomes = List.copyOf(outcomes);
            requireNonNull(failure, "failure is null");
        }

        /** The one choice of an {@code n = 1} request; when the request failed, an {@code error} outcome that says why. */
        public Outcome single()
        {
            if (failure.isPresent()) {
                return new Outcome("", "error", 0, new int[0], Optional.of(failure.get().getMessage()), false, List.of());
            }
            return outcomes.getFirst();
        }
    }

    /**
     * @param finishReason OpenAI's word: {@code stop}, {@code length}, {@code abort}, or {@code error} (then {@code error} says why)
     * @param logprobs one per output token when the request asked for them (an entry the engine did not deliver is null)
     */
    record Outcome(String text, String finishReason, int promptTokens, int[] outputIds, Optional<String> error, boolean clientGone,
            List<TokenLogprob> logprobs)
    {
        public Outcome
        {
            requireNonNull(text, "text is null");
            requireNonNull(finishReason, "finishReason is null");
            requireNonNull(outputIds, "outputIds is null");
            requireNonNull(error, "error is null");
            requireNonNull(logprobs, "logprobs is null");
        }

        public int completionTokens()
        {
            return outputIds.length;
        }
    }
}
