package io.handoff.http;

import io.handoff.core.model.ModelConfig;
import io.handoff.core.model.tokenizer.Tokenizer;
import io.handoff.core.output.Generation;
import io.handoff.core.output.GenerationGroup;
import io.handoff.core.output.GenerationParams;
import io.handoff.core.scheduler.RequestRejectedException;
import io.handoff.core.scheduler.Scheduler;
import io.handoff.http.base.ApiError;
import io.handoff.http.base.OutputCount;
import org.apache.logging.log4j.LogManager;
import org.apache.logging.log4j.Logger;

import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLong;

import static java.util.Objects.requireNonNull;

/**
 * The requests this server has in flight, by rid: admission (a unique rid, not while draining, the
 * scheduler's verdict as an HTTP error), abort by rid, and the drain of a graceful shutdown.
 */
final class Generations
        implements GenerationGroup.Registry
{
    private static final Logger log = LogManager.getLogger(Generations.class);

    private final Scheduler scheduler;
    private final ModelConfig model;
    private final Tokenizer tokenizer;
    private final ServerMetrics metrics;
    private final Duration retryAfter;
    private final int maxPromptTokens;
    private final Map<String, Generation> active = new LinkedHashMap<>();
    // Guarded by active: rids that name several generations of one request (a group), and how to abort them.
    private final Map<String, Runnable> groups = new LinkedHashMap<>();
    private final AtomicLong nextRid = new AtomicLong();
    private final String ridPrefix = Long.toHexString(System.currentTimeMillis());
    private boolean draining;
    // why it does not admit, for the refusal's message
    private String drainingBecause = "the server is shutting down";

    /** @param maxPromptTokens the longest prompt accepted ({@code handoff.server.max-prompt-tokens}); 0: the model's context decides */
    Generations(Scheduler scheduler, ModelConfig model, Tokenizer tokenizer, ServerMetrics metrics, Duration retryAfter, int maxPromptTokens)
    {
        if (maxPromptTokens < 0) {
            throw new IllegalArgumentException("maxPromptTokens must be at least 0, was " + maxPromptTokens);
        }
        this.maxPromptTokens = maxPromptTokens;
        this.tokenizer = requireNonNull(tokenizer, "tokenizer is null");
        this.scheduler = requireNonNull(scheduler, "scheduler is null");
        this.model = requireNonNull(model, "model is null");
        this.metrics = requireNonNull(metrics, "metrics is null");
        this.retryAfter = requireNonNull(retryAfter, "retryAfter is null");
    }

    /** A rid for a request that brought none: unique within this process. */
    @Override
    public String newRid()
    {
        return ridPrefix + "-" + nextRid.incrementAndGet();
    }

    /**
     * Refuses a request that cannot fit the model's context, naming the field the client should change.
     * (The scheduler checks this too, but cannot know what the API calls its fields.)
     */
    void checkContext(int promptTokens, String promptParam, int maxNewTokens, String maxParam)
    {
        int context = model.maxContext();
        if (promptTokens == 0) {
            throw ApiError.invalid("invalid_value", promptParam, "the prompt is empty; send at least one token to continue");
        }
        if (maxPromptTokens > 0 && promptTokens > maxPromptTokens) {
            throw ApiError.invalid("prompt_too_long", promptParam, "the prompt is " + promptTokens + " tokens; this server accepts at most "
                    + maxPromptTokens + " (handoff.server.max-prompt-tokens)");
        }
        if (promptTokens >= context) {
            throw ApiError.invalid("context_length_exceeded", promptParam, "the prompt is " + promptTokens
                    + " tokens; the model's context is " + context + " tokens, and at least one must be left to generate");
        }
        if ((long) promptTokens + maxNewTokens > context) {
            throw ApiError.invalid("context_length_exceeded", maxParam, "the prompt (" + promptTokens + " tokens) + " + maxParam + " ("
                    + maxNewTokens + ") = " + (promptTokens + maxNewTokens) + " exceeds the model's context of " + context
                    + " tokens; set " + maxParam + " to at most " + (context - promptTokens));
        }
    }

    /** Registers and submits a request; the caller must close the returned generation. */
    Generation start(GenerationParams params)
    {
        return start(params, false);
    }

    /** {@link #start(GenerationParams)}, with the output's log probabilities computed when {@code scored} ({@link Generation#cumulativeLogprob}). */
    @Override
    public Generation start(GenerationParams params, boolean scored)
    {
        Generation generation = new Generation(params, scheduler, tokenizer, metrics, () -> remove(params.rid()), scored);
        synchronized (active) {
            if (draining) {
                metrics.rejected(RequestRejectedException.Kind.SHUTTING_DOWN);
                throw ApiError.draining(drainingBecause + "; send the request to another one");
            }
            if (active.containsKey(params.rid()) || groups.containsKey(params.rid())) {
                throw ApiError.conflict("duplicate_rid", "rid", "a request with rid '" + params.rid() + "' is already in flight; rids must be unique");
            }
            active.put(params.rid(), generation);
        }
        try {
            generation.submit();
            return generation;
        }
        catch (RequestRejectedException e) {
            remove(params.rid());
            metrics.rejected(e.kind());
            throw switch (e.kind()) {
                case INVALID -> ApiError.invalid("invalid_value", null, e.getMessage());
                case OVERLOADED -> ApiError.overloaded(e.getMessage(), retryAfter);
                case SHUTTING_DOWN -> ApiError.unavailable("shutting_down", e.getMessage());
            };
        }
        catch (RuntimeException e) {
            remove(params.rid());
            throw e;
        }
    }

    /**
     * The outputs a request asks for ({@code count}: its prompts times n or best_of), started as one group: output
     * {@code i} gets rid {@code rids.outputs()[i]}, room {@code bootstrap_room + i} and seed {@code seed + i % perPrompt}.
     * The engine's refusals come back as the HTTP errors they are (a failed prompt run as the generation's failure).
     */
    GenerationGroup startGroup(Bootstrap bootstrap, List<GenerationParams> prompts, OutputCount count, OutputRids rids)
            throws InterruptedException
    {
        if (rids.outputs().size() != count.total()) {
            throw new IllegalArgumentException(rids.outputs().size() + " rids for " + count);
        }
        List<GenerationParams> outputs = new ArrayList<>();
        for (int i = 0; i < count.total(); i++) {
            GenerationParams prompt = prompts.get(i / count.perPrompt());
            outputs.add(prompt.forOutput(rids.outputs().get(i), i % count.perPrompt(), Bootstrap.forOutput(prompt.ticket(), i)));
        }
        try {
            // a decode's request without a room (the router's decode-local fallback) computes its prompt here
            boolean computesPrompts = bootstrap.computesPrompts() || prompts.getFirst().ticket().isEmpty();
            return GenerationGroup.start(this, prompts, outputs, shape(count), rids.groups(), computesPrompts);
        }
        catch (GenerationGroup.PromptRunFailed e) {
            throw failure(e.outcome());
        }
    }

    static GenerationGroup.Shape shape(OutputCount count)
    {
        return new GenerationGroup.Shape(count.prompts(), count.perPrompt(), count.returned());
    }

    /** The error a failed generation answers with: its message, and its cause for a router or client to act on. */
    static ApiError failure(Generation.Outcome outcome)
    {
        return ApiError.generationFailed(outcome.error(), outcome.cause());
    }

    /** best_of's choice of outputs, or a 500 when the engine returned no log probability to rank one by. */
    static List<Integer> best(GenerationGroup.Result result, OutputCount count)
    {
        try {
            return result.best(shape(count));
        }
        catch (IllegalStateException e) {
            throw ApiError.internal(e.getMessage());
        }
    }

    /**
     * Names a group of generations {@code rid} (each has a rid of its own too), so that {@code abort(rid)} runs
     * {@code abort}; close the returned handle when the group ends. A rid in flight already is a 409.
     */
    @Override
    public AutoCloseable nameGroup(String rid, Runnable abort)
    {
        requireNonNull(abort, "abort is null");
        synchronized (active) {
            if (active.containsKey(rid) || groups.containsKey(rid)) {
                throw ApiError.conflict("duplicate_rid", "rid", "a request with rid '" + rid + "' is already in flight; rids must be unique");
            }
            groups.put(rid, abort);
        }
        return () -> {
            synchronized (active) {
                groups.remove(rid, abort);
            }
        };
    }

    /** Aborts the in-flight request (or group) with this rid; false when there is none. */
    boolean abort(String rid)
    {
        Generation generation;
        Runnable group;
        synchronized (active) {
            generation = active.get(rid);
            group = groups.get(rid);
        }
        if (generation == null && group == null) {
            return false;
        }
        if (generation != null) {
            generation.abort();
        }
        if (group != null) {
            group.run();
        }
        return true;
    }

    int inFlight()
    {
        synchronized (active) {
            return active.size();
        }
    }

    boolean draining()
    {
        synchronized (active) {
            return draining;
        }
    }

    private void remove(String rid)
    {
        synchronized (active) {
            active.remove(rid);
            active.notifyAll();
        }
    }

    /**
     * Stops admitting (for {@code why}, which refusals say) and waits until no request is in flight or {@code deadline}
     * passes, aborting nothing; true when none is left. {@link #resume} admits again.
     */
    boolean pause(String why, long deadlineNanos)
            throws InterruptedException
    {
        synchronized (active) {
            draining = true;
            drainingBecause = why;
            awaitEmpty(deadlineNanos);
            return active.isEmpty();
        }
    }

    /** Admits again after {@link #pause}. */
    void resume()
    {
        synchronized (active) {
            draining = false;
            drainingBecause = "the server is shutting down";
        }
    }

    /**
     * Stops admitting, lets in-flight requests finish until {@code finishBy}, aborts the rest and waits
     * for them (their pages) until {@code abortBy}. Returns how many were aborted.
     */
    int drain(long finishByNanos, long abortByNanos)
            throws InterruptedException
    {
        List<Generation> left;
        synchronized (active) {
            draining = true;
            drainingBecause = "the server is shutting down";
            awaitEmpty(finishByNanos);
            left = List.copyOf(active.values());
        }
        if (!left.isEmpty()) {
            log.info("aborting {} in-flight request(s) that did not finish within the grace period", left.size());
            left.forEach(Generation::abort);
        }
        synchronized (active) {
            awaitEmpty(abortByNanos);
            if (!active.isEmpty()) {
                log.warn("{} request(s) still in flight at the end of the grace period: {}", active.size(), active.keySet());
            }
        }
        return left.size();
    }

    private void awaitEmpty(long deadlineNanos)
            throws InterruptedException
    {
        long left;
        while (!active.isEmpty() && (left = deadlineNanos - System.nanoTime()) > 0) {
            active.wait(Math.max(1, left / 1_000_000));
        }
    }
}
