package io.handoff.bench.scheduler;

import io.handoff.core.model.SamplingParams;
import io.handoff.core.scheduler.GenerateRequest;
import io.handoff.core.scheduler.GenerateResult;
import io.handoff.core.scheduler.Scheduler;
import io.handoff.core.scheduler.SchedulerStats;
import io.handoff.trace.FinishReason;

import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.SplittableRandom;
import java.util.concurrent.CompletableFuture;

import static java.util.Objects.requireNonNull;

/**
 * The bench's requests: {@code requests} prompts submitted at once to a scheduler that runs at most {@code batch} of
 * them (its {@code max-running-requests}), so its own admission replaces each finished request with the next at once
 * and the batch stays full, with no client in the loop. Every prompt starts with the same fixed prefix (a system
 * prompt: the radix cache matches it on every admission once it is cached) and ends in its own seeded suffix; every
 * request decodes {@code decodeTokens} tokens, ignoring EOS. The same seed gives the same requests on every engine.
 */
record Workload(int requests, int promptLength, int sharedPrefix, int decodeTokens, long seed)
{
    private static final long PREFIX_SEED = 7;

    /** What one run cost: wall time, and the steps and tokens the scheduler counted in it. */
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

        double cachedPromptFraction()
        {
            return promptTokens == 0 ? 0 : (double) cachedPromptTokens / promptTokens;
        }
    }

    Workload
    {
        if (requests < 1 || decodeTokens < 1 || sharedPrefix < 0 || promptLength <= sharedPrefix) {
            throw new IllegalArgumentException("workload: " + requests + " requests, " + decodeTokens + " decode tokens, prompt " + promptLength
                    + " with shared prefix " + sharedPrefix);
        }
    }

    /** Runs every request to its last token; checks each ended by length with all its tokens. */
    Run run(Scheduler scheduler, String label, int vocab)
    {
        requireNonNull(scheduler, "scheduler is null");
        int ids = Math.min(vocab, 256);
        int[] prefix = new SplittableRandom(PREFIX_SEED).ints(sharedPrefix, 0, ids).toArray();
        SplittableRandom random = new SplittableRandom(seed);
        List<GenerateRequest> prompts = new ArrayList<>(requests);
        for (int i = 0; i < requests; i++) {
            int[] prompt = new int[promptLength];
            System.arraycopy(prefix, 0, prompt, 0, sharedPrefix);
            for (int p = sharedPrefix; p < promptLength; p++) {
                prompt[p] = random.nextInt(ids);
            }
            prompts.add(new GenerateRequest(label + "-" + seed + "-" + i, prompt, decodeTokens, SamplingParams.GREEDY, Set.of(), true, false));
        }
        SchedulerStats before = scheduler.stats();
        long start = System.nanoTime();
        List<CompletableFuture<GenerateResult>> results = new ArrayList<>(requests);
        for (GenerateRequest request : prompts) {
            results.add(scheduler.submit(request, (index, token) -> {}).result());
        }
        results.forEach(CompletableFuture::join);
        double seconds = (System.nanoTime() - start) / 1e9;
        SchedulerStats after = scheduler.stats();
        for (CompletableFuture<GenerateResult> result : results) {
            GenerateResult r = result.join();
            if (r.finishReason() != FinishReason.LENGTH || r.outputIds().length != decodeTokens) {
                throw new IllegalStateException("request " + r.rid() + " on the " + label + " engine ended " + r.finishReason() + " after "
                        + r.outputIds().length + " of " + decodeTokens + " tokens" + r.error().map(e -> ": " + e).orElse(""));
            }
        }
        return new Run(seconds, after.steps() - before.steps(), after.generatedTokens() - before.generatedTokens(),
                after.promptTokens() - before.promptTokens(), after.cachedPromptTokens() - before.cachedPromptTokens());
    }
}
