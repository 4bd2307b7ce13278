package io.handoff.core.scheduler;

/**
 * What log probabilities a request wants back: those of every output token (with the {@code topN} most likely
 * alternatives at each), and, when {@code inputStart >= 0}, those of the prompt tokens from position
 * {@code inputStart} on. Log probabilities are of the model's own distribution (a log-softmax of the raw logits,
 * before temperature and penalties), as SGLang and vLLM report them by default.
 *
 * <p>A prompt token's log probability needs the logits of the position before it, so a request with
 * {@code inputStart >= 0} reuses at most {@code max(0, inputStart - 1)} cached prompt tokens; position 0 has none
 * (nothing comes before it).
 *
 * @param topN alternatives per position, 0 to {@link #MAX_TOP_N}
 * @param inputStart the first prompt position reported, or {@code -1} for none
 */
public record LogprobRequest(int topN, int inputStart)
{
    /** The most alternatives per position: OpenAI's limit for chat, and it bounds what a prefill sends a decode. */
    public static final int MAX_TOP_N = 20;

    public LogprobRequest
    {
        if (topN < 0 || topN > MAX_TOP_N) {
            throw new RequestRejectedException(RequestRejectedException.Kind.INVALID, "top logprobs must be in 0.." + MAX_TOP_N + ", got " + topN);
        }
        if (inputStart < -1) {
            throw new RequestRejectedException(RequestRejectedException.Kind.INVALID, "logprob start must be -1 (none) or a prompt position, got " + inputStart);
        }
    }

    public boolean wantsInput()
    {
        return inputStart >= 0;
    }
}
