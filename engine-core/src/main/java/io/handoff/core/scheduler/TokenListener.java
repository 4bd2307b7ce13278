package io.handoff.core.scheduler;

/** Receives a request's output tokens as they are produced, on the scheduler thread: return quickly. */
@FunctionalInterface
public interface TokenListener
{
    TokenListener NONE = (index, token) -> {};

    void onToken(int index, int tokenId);
}
