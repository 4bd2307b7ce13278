package io.handoff.core.scheduler;

import io.handoff.core.kv.PageAccounting;
import io.handoff.core.kv.QuarantineTimes;
import io.handoff.trace.FailureCause;

import java.util.EnumMap;
import java.util.Map;

/**
 * A snapshot of the scheduler, published after every loop iteration (metrics read it from any thread).
 *
 * @param cachedPromptTokens prompt tokens served from the prefix cache, over all requests
 * @param failures requests that failed or were aborted, by cause, since start (every cause present, 0 included)
 * @param quarantine how long quarantined pages stayed quarantined, over quarantines that ended
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
        long finishedRequests,
        Map<FailureCause, Long> failures,
        QuarantineTimes.Snapshot quarantine)
{
    public SchedulerStats
    {
        Map<FailureCause, Long> all = new EnumMap<>(FailureCause.class);
        for (FailureCause cause : FailureCause.values()) {
            all.put(cause, failures.getOrDefault(cause, 0L));
        }
        failures = Map.copyOf(all);
    }

    /** A snapshot without failures or quarantines. */
    public SchedulerStats(int running, int waiting, PageAccounting pages, int cachedPages, long steps, long promptTokens, long cachedPromptTokens,
            long generatedTokens, long finishedRequests)
    {
        this(running, waiting, pages, cachedPages, steps, promptTokens, cachedPromptTokens, generatedTokens, finishedRequests, Map.of(),
                QuarantineTimes.Snapshot.EMPTY);
    }

    public long failures(FailureCause cause)
    {
        return failures.get(cause);
    }

    public double prefixHitRate()
    {
        return promptTokens == 0 ? 0 : (double) cachedPromptTokens / promptTokens;
    }
}
