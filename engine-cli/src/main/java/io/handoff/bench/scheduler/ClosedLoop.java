package io.handoff.bench.scheduler;

import io.handoff.core.model.SamplingParams;
import io.handoff.core.scheduler.FinishReason;
import io.handoff.core.scheduler.GenerateRequest;
import io.handoff.core.scheduler.GenerateResult;
import io.handoff.core.scheduler.Scheduler;
import io.handoff.core.scheduler.SchedulerStats;

import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.SplittableRandom;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Semaphore;

import static java.util.Objects.requireNonNull;

/**
 * A closed-loop workload at a fixed batch: {@code batch} requests in flight, each finished one replaced at once by
 * the next, until {@code batch x waves} requests have run. Every prompt starts with the same seeded prefix (so the
 * radix cache matches and inserts on every admission) and ends in its own seeded suffix; every request decodes
 * {@code decodeTokens} tokens, ignoring EOS. The same seed gives the same requests to every engine it runs on.
 */
record ClosedLoop(int batch, int waves, int promptLength, int sharedPrefix, int decodeTokens, long seed)
{
    /** What one run cost: wall time, steps and tokens the scheduler counted in it. */
    record Run(double seconds, long steps, long generatedTokens, long promptTokens, long cachedPromptTokens)
    {
        double microsPerStep()
        {
            return seconds * 1e6 / steps;
        }

        double tokensPerStep()
        {
            return (double) generatedTokens / steps;
        }
    }

    ClosedLoop
    {
        if (batch < 1 || waves < 1 || decodeTokens < 1 || sharedPrefix < 0 || promptLength <= sharedPrefix) {
            throw new IllegalArgumentException("closed loop: batch " + batch + ", waves " + waves + ", decode tokens " + decodeTokens
                    + ", prompt " + promptLength + " with shared prefix " + sharedPrefix);
        }
    }

    Run run(Scheduler scheduler, String label, int vocab)
            throws InterruptedException
    {
        requireNonNull(scheduler, "scheduler is null");
        SplittableRandom random = new SplittableRandom(seed);
        int[] prefix = random.ints(sharedPrefix, 0, Math.min(vocab, 256)).toArray();
        Semaphore slots = new Semaphore(batch);
        List<CompletableFuture<GenerateResult>> results = new ArrayList<>();
        SchedulerStats before = scheduler.stats();
        long start = System.nanoTime();
        for (int i = 0; i < batch * waves; i++) {
            int[] prompt = new int[promptLength];
            System.arraycopy(prefix, 0, prompt, 0, sharedPrefix);
            for (int p = sharedPrefix; p < promptLength; p++) {
                prompt[p] = random.nextInt(Math.min(vocab, 256));
            }
            slots.acquire();
            GenerateRequest request = new GenerateRequest(label + "-" + seed + "-" + i, prompt, decodeTokens, SamplingParams.GREEDY, Set.of(), true, false);
            CompletableFuture<GenerateResult> result = scheduler.submit(request, (index, token) -> {}).result();
            result.whenComplete((r, e) -> slots.release());
            results.add(result);
        }
        results.forEach(CompletableFuture::join);
        double seconds = (System.nanoTime() - start) / 1e9;
        for (CompletableFuture<GenerateResult> result : results) {
            GenerateResult r = result.join();
            if (r.finishReason() != FinishReason.LENGTH || r.outputIds().length != decodeTokens) {
                throw new IllegalStateException("request " + r.rid() + " on the " + label + " engine ended " + r.finishReason() + " after "
                        + r.outputIds().length + " of " + decodeTokens + " tokens" + r.error().map(e -> ": " + e).orElse(""));
            }
        }
        SchedulerStats after = scheduler.stats();
        return new Run(seconds, after.steps() - before.steps(), after.generatedTokens() - before.generatedTokens(),
                after.promptTokens() - before.promptTokens(), after.cachedPromptTokens() - before.cachedPromptTokens());
    }
}
