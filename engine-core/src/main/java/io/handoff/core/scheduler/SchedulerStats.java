package io.handoff.core.scheduler;

import io.handoff.core.kv.PageAccounting;

/**
 * A snapshot of the scheduler, published after every loop iteration (metrics read it from any thread).
 *
 * @param cachedPromptTokens prompt tokens served from the prefix cache, over all requests
 */
public record SchedulerStats(
        int running,
        int waiting,
        PageAccounting pages,
        int cachedPages,
        long steps,
        long promptTokens,
        long cachedPromptTokens,
        long generatedTokens,
        long finishedRequests)
{
    public double prefixHitRate()
    {
        return promptTokens == 0 ? 0 : (double) cachedPromptTokens / promptTokens;
    }
}
