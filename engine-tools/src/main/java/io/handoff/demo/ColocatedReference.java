package io.handoff.demo;

import io.handoff.core.model.SamplingParams;
import io.handoff.core.model.tokenizer.Tokenizer;
import io.handoff.core.scheduler.GenerateRequest;
import io.handoff.core.scheduler.GenerateResult;
import io.handoff.core.scheduler.RequestRejectedException;
import io.handoff.core.scheduler.Scheduler;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Semaphore;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The same requests on a colocated engine in this process ({@code handoff generate}'s path: the
 * scheduler directly), with the same number in flight. Its output ids are what the disaggregated run
 * must reproduce bit for bit; its TTFT is the colocated figure measured in the same run.
 */
public final class ColocatedReference
{
    private final Tokenizer tokenizer;
    private final AtomicLong submitted = new AtomicLong();
    private final Scheduler scheduler;

    /** @param tokenizer the model's, as the servers' HTTP API encodes a text prompt with it */
    public ColocatedReference(Scheduler scheduler, Tokenizer tokenizer)
    {
        this.scheduler = scheduler;
        this.tokenizer = tokenizer;
    }

    /** Runs every prompt, {@code concurrency} at a time; the results are in prompt order. */
    public List<RequestResult> run(List<String> prompts, int maxNewTokens, int concurrency)
            throws InterruptedException
    {
        Semaphore inFlight = new Semaphore(concurrency);
        List<CompletableFuture<RequestResult>> results = new ArrayList<>();
        for (int index = 0; index < prompts.size(); index++) {
            inFlight.acquire();
            CompletableFuture<RequestResult> result = submit(index, prompts.get(index), maxNewTokens);
            result.whenComplete((done, failure) -> inFlight.release());
            results.add(result);
        }
        List<RequestResult> ordered = new ArrayList<>();
        for (CompletableFuture<RequestResult> result : results) {
            try {
                ordered.add(result.get());
            }
            catch (ExecutionException e) {
                ordered.add(RequestResult.failed(ordered.size(), new int[0], "the colocated engine failed: " + e.getCause()));
            }
        }
        return ordered;
    }

    private CompletableFuture<RequestResult> submit(int index, String prompt, int maxNewTokens)
    {
        GenerateRequest request = new GenerateRequest("demo-colocated-" + submitted.incrementAndGet(), tokenizer.encodePrompt(prompt), maxNewTokens,
                SamplingParams.GREEDY, Set.of(), true, false);
        long[] arrivals = new long[maxNewTokens];
        try {
            return scheduler.submit(request, (position, token) -> {
                if (position < arrivals.length) {
                    arrivals[position] = System.nanoTime();
                }
            }).result().thenApply(result -> result(index, result, arrivals));
        }
        catch (RequestRejectedException e) {
            return CompletableFuture.completedFuture(RequestResult.failed(index, new int[0], "the colocated engine refused it: " + e.getMessage()));
        }
    }

    private static RequestResult result(int index, GenerateResult result, long[] arrivals)
    {
        if (result.error().isPresent()) {
            return RequestResult.failed(index, result.outputIds(), "the colocated engine failed: " + result.error().get());
        }
        int tokens = Math.min(result.outputIds().length, arrivals.length);
        double[] gaps = new double[Math.max(0, tokens - 1)];
        for (int i = 1; i < tokens; i++) {
            gaps[i - 1] = (arrivals[i] - arrivals[i - 1]) / 1e6;
        }
        double ttft = result.outputIds().length == 0 ? Double.NaN : result.firstTokenNanos() / 1e6;
        return new RequestResult(index, Arrays.copyOf(result.outputIds(), result.outputIds().length), ttft, gaps, Optional.empty());
    }
}
