package io.handoff.core.scheduler;

/** Receives a request's output tokens as they are produced, on the scheduler thread: return quickly. */
@FunctionalInterface
public interface TokenListener
{
    TokenListener NONE = (index, token) -> {};

    void onToken(int index, int tokenId);

    /**
     * What the scheduler calls: the token and, when the request asked for log probabilities, the token's
     * ({@code null} otherwise). By default the log probability is dropped.
     */
    default void onToken(int index, int tokenId, TokenLogprob logprob)
    {
        onToken(index, tokenId);
    }

    /**
     * The prompt's log probabilities ({@link Logprobs#input()} from {@link Logprobs#inputFrom()}; no output entries),
     * called once, just before the first token's {@code onToken}, when the request asked for log probabilities. They
     * are known then on every path (computed here, or received from the prefill with the first token), so a stream
     * can show them from its first chunk. Empty input when some were not computed. By default they are dropped.
     */
    default void onPrompt(Logprobs prompt) {}
}
