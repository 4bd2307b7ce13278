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
}
