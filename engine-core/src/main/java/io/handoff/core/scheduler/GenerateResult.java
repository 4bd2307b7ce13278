package io.handoff.core.scheduler;

import io.handoff.trace.FailureCause;
import io.handoff.trace.FinishReason;
import java.util.List;
import java.util.Optional;

import static java.util.Objects.requireNonNull;

/**
 * What a request produced. When it is delivered, every page the request held is back in the pool (or
 * in the prefix cache).
 *
 * @param cachedTokens prompt tokens whose KV came from the prefix cache
 * @param logits the logits each output token was sampled from, if requested
 * @param queueNanos time from submission to admission
 * @param firstTokenNanos time from submission to the first output token
 * @param totalNanos time from submission to the end
 * @param cause why it failed, when its finish reason is {@link FinishReason#ERROR} (or an abort the engine can name)
 * @param logprobs what the request asked for of them ({@link Logprobs#NONE} when it asked for none); output entries
 *        match {@code outputIds} one for one
 */
public record GenerateResult(
        String rid,
        int[] outputIds,
        FinishReason finishReason,
        Optional<String> error,
        int promptTokens,
        int cachedTokens,
        List<float[]> logits,
        long queueNanos,
        long firstTokenNanos,
        long totalNanos,
        Optional<FailureCause> cause,
        Logprobs logprobs)
{
    public GenerateResult
    {
        logits = List.copyOf(logits);
        requireNonNull(logprobs, "logprobs is null");
    }

    public GenerateResult(String rid, int[] outputIds, FinishReason finishReason, Optional<String> error, int promptTokens, int cachedTokens,
            List<float[]> logits, long queueNanos, long firstTokenNanos, long totalNanos, Optional<FailureCause> cause)
    {
        this(rid, outputIds, finishReason, error, promptTokens, cachedTokens, logits, queueNanos, firstTokenNanos, totalNanos, cause, Logprobs.NONE);
    }
}
