package io.handoff.core.output;

import io.handoff.core.grammar.GrammarException;
import io.handoff.core.grammar.TokenGrammars;
import io.handoff.core.model.tokenizer.Tokenizer;
import io.handoff.core.scheduler.GenerateRequest;
import io.handoff.core.scheduler.GenerateResult;
import io.handoff.core.scheduler.LogprobRequest;
import io.handoff.core.scheduler.Logprobs;
import io.handoff.core.scheduler.RequestRejectedException;
import io.handoff.core.scheduler.Scheduler;
import io.handoff.core.scheduler.TokenListener;
import io.handoff.core.scheduler.TokenLogprob;
import io.handoff.trace.FailureCause;
import io.handoff.trace.FinishReason;

import java.io.IOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

import static java.util.Objects.requireNonNull;

/**
 * One request in flight between the scheduler and a front end (an HTTP exchange, the CLI). The scheduler thread only
 * enqueues events (a token, the result); the front end's thread decodes text, matches stop strings, feeds its sink
 * and, when a stop string appears or the client is gone, aborts the request in the scheduler (which knows stop token
 * ids, not strings). The result arrives only after the request's pages are back, so {@link #run} returning means they are.
 */
public final class Generation
        implements AutoCloseable
{
    /** Receives the output as it grows; throws {@link IOException} when the client is gone. */
    @FunctionalInterface
    public interface Sink
    {
        Sink NONE = generation -> {};

        void onToken(Generation generation)
                throws IOException;
    }

    /**
     * How a request ended, as the APIs report it.
     *
     * @param outputIds the output tokens, ending with the one that completed a stop match
     * @param match the stop string or token that ended it, when {@code reason} is {@link FinishReason#STOP}
     * @param clientGone the client disconnected before the end, and the request was aborted for it
     * @param cause why it failed, when the engine named a cause
     * @param logprobs the log probabilities asked for, output entries matching {@code outputIds}
     */
    public record Outcome(
            String rid,
            int[] promptIds,
            int[] outputIds,
            String text,
            FinishReason reason,
            Optional<OutputText.Match> match,
            Optional<String> error,
            int promptTokens,
            int cachedTokens,
            long queueNanos,
            long firstTokenNanos,
            long totalNanos,
            boolean clientGone,
            Optional<FailureCause> cause,
            Optional<LogprobTrace> logprobs)
    {
        /**
         * Whether the client is told the request failed: an error, or an abort the engine made for a cause of its own
         * (its KV transfer failed), not one the client asked for.
         */
        public boolean failed()
        {
            return reason == FinishReason.ERROR
                    || (reason == FinishReason.ABORT && !clientGone && cause.isPresent() && cause.get() != FailureCause.CLIENT_ABORT);
        }
    }

    private sealed interface Event
            permits Prompt, Token, Done {}

    /** The prompt's log probabilities, which the scheduler delivers just before the first token. */
    private record Prompt(Logprobs logprobs) implements Event {}

    /** @param logprob null unless the request asked for log probabilities */
    private record Token(int id, TokenLogprob logprob, long nanos) implements Event {}

    private record Done(GenerateResult result, Throwable failure) implements Event {}

    /** What a scored generation asks for when its client asked for no log probabilities: the output's, no alternatives. */
    private static final LogprobRequest OUTPUT_LOGPROBS = new LogprobRequest(0, -1);

    private final GenerationParams params;
    private final Scheduler scheduler;
    private final GenerationMetrics metrics;
    private final Runnable onClose;
    private final LinkedBlockingQueue<Event> events = new LinkedBlockingQueue<>();
    private final OutputText text;
    private final Set<Integer> eosTokenIds;
    private final int[] ids;
    private final boolean scored;
    private final List<TokenLogprob> logprobs = new ArrayList<>();
    private volatile CompletableFuture<GenerateResult> result;
    private volatile boolean abortRequested;
    // State of the thread that runs the generation (an HTTP exchange, the CLI).
    private Logprobs promptLogprobs = Logprobs.NONE;
    private Outcome outcome;
    private double cumulativeLogprob = Double.NaN;
    private boolean clientGone;
    private long previousToken;
    private final Tokenizer tokenizer;

    /** @param scored the output's log probabilities are wanted (whether or not the client asked for them), for {@link #cumulativeLogprob} */
    public Generation(GenerationParams params, Scheduler scheduler, Tokenizer tokenizer, GenerationMetrics metrics, Runnable onClose, boolean scored)
    {
        this.scored = scored;
        this.eosTokenIds = tokenizer.eosTokenIds();
        this.params = requireNonNull(params, "params is null");
        this.scheduler = requireNonNull(scheduler, "scheduler is null");
        this.metrics = requireNonNull(metrics, "metrics is null");
        this.onClose = requireNonNull(onClose, "onClose is null");
        this.text = new OutputText(params.options(), tokenizer.eosTokenIds(), tokenizer);
        this.ids = new int[params.maxNewTokens()];
        this.tokenizer = tokenizer;
    }

    /** Submits the request; throws {@link io.handoff.core.scheduler.RequestRejectedException} when the scheduler refuses it. */
    public void submit()
    {
        TokenListener listener = new TokenListener()
        {
            @Override
            public void onToken(int index, int tokenId)
            {
                onToken(index, tokenId, null);
            }

            @Override
            public void onToken(int index, int tokenId, TokenLogprob logprob)
            {
                events.add(new Token(tokenId, logprob, System.nanoTime()));
            }

            @Override
            public void onPrompt(Logprobs prompt)
            {
                events.add(new Prompt(prompt));
            }
        };
        GenerateRequest request = params.toRequest();
        if (params.options().grammar().isPresent()) {
            try {
                request = request.withConstraint(TokenGrammars.of(tokenizer).bind(params.options().grammar().get()));
            }
            catch (GrammarException e) {
                throw new RequestRejectedException(RequestRejectedException.Kind.INVALID, e.getMessage());
            }
        }
        if (scored && request.logprobs().isEmpty()) {
            request = request.withLogprobs(OUTPUT_LOGPROBS);
        }
        result = scheduler.submit(request, listener).result();
        result.whenComplete((done, failure) -> events.add(new Done(done, failure)));
        if (abortRequested) {
            scheduler.abort(params.rid());
        }
    }

    public String rid()
    {
        return params.rid();
    }

    public GenerationParams params()
    {
        return params;
    }

    /** Asks the scheduler to end this request; {@link #run} then reports {@link FinishReason#ABORT}. */
    public void abort()
    {
        abortRequested = true;
        if (result != null) {
            scheduler.abort(params.rid());
        }
    }

    /** The output text a client may be shown so far (a possible stop-string prefix is held back). */
    public String stableText()
    {
        return text.text().substring(0, text.stableLength());
    }

    /** The output tokens so far. */
    public int[] outputIds()
    {
        return Arrays.copyOf(ids, text.tokens());
    }

    /** The log probabilities so far (the prompt's, known from the first token on, and the output's), when the request asked for them. */
    public Optional<LogprobTrace> logprobsSoFar()
    {
        return params.logprobs().map(options -> new LogprobTrace(options, params.promptIds(), promptLogprobs, logprobs));
    }

    /** Blocks until the request has ended and its pages are back, feeding {@code sink} every token. */
    public Outcome run(Sink sink)
            throws InterruptedException
    {
        return run(sink, Long.MAX_VALUE).orElseThrow();
    }

    /** Like {@link #run(Sink)}, but gives up waiting after {@code timeout} (the request goes on until {@link #close}). */
    public Optional<Outcome> run(Sink sink, Duration timeout)
            throws InterruptedException
    {
        return run(sink, System.nanoTime() + timeout.toNanos());
    }

    private Optional<Outcome> run(Sink sink, long deadlineNanos)
            throws InterruptedException
    {
        requireNonNull(sink, "sink is null");
        while (true) {
            Event event = deadlineNanos == Long.MAX_VALUE ? events.take()
                    : events.poll(Math.max(0, deadlineNanos - System.nanoTime()), TimeUnit.NANOSECONDS);
            if (event == null) {
                return Optional.empty();
            }
            switch (event) {
                case Prompt prompt -> promptLogprobs = prompt.logprobs();
                case Token token -> {
                    if (previousToken != 0) {
                        metrics.interToken(token.nanos() - previousToken);
                    }
                    previousToken = token.nanos();
                    if (text.match().isPresent()) {
                        continue; // produced before the abort for a stop string landed: not output
                    }
                    ids[text.tokens()] = token.id();
                    logprobs.add(token.logprob());
                    if (text.append(token.id()) && text.match().orElseThrow() instanceof OutputText.StopString) {
                        scheduler.abort(params.rid()); // the scheduler does not know stop strings
                    }
                    if (!clientGone) {
                        try {
                            sink.onToken(this);
                        }
                        catch (IOException e) {
                            clientGone = true;
                            // Counted before the abort, so anyone who sees the pages back also sees the count.
                            metrics.clientDisconnected();
                            scheduler.abort(params.rid());
                        }
                    }
                }
                case Done done -> {
                    text.finish();
                    outcome = outcome(done, clientGone);
                    cumulativeLogprob = done.result() == null ? Double.NaN : cumulative(done.result().logprobs(), outcome.outputIds().length);
                    metrics.finished(outcome);
                    return Optional.of(outcome);
                }
            }
        }
    }

    /**
     * The sum of the output tokens' log probabilities (how likely the model found this output), once {@link #run}
     * returned for a scored generation; NaN when the engine returned fewer log probabilities than output tokens.
     */
    public double cumulativeLogprob()
    {
        return cumulativeLogprob;
    }

    private static double cumulative(Logprobs logprobs, int outputs)
    {
        if (logprobs.output().size() < outputs) {
            return Double.NaN;
        }
        double sum = 0;
        for (int i = 0; i < outputs; i++) {
            sum += logprobs.output().get(i).logprob();
        }
        return sum;
    }

    private Outcome outcome(Done done, boolean clientGone)
    {
        if (done.failure() != null) {
            return new Outcome(params.rid(), params.promptIds(), new int[0], "", FinishReason.ERROR, Optional.empty(),
                    Optional.of(String.valueOf(done.failure())), params.promptIds().length, 0, 0, 0, 0, clientGone, Optional.of(FailureCause.ENGINE),
                    Optional.empty());
        }
        GenerateResult result = done.result();
        OutputText.Ending ending = text.ending(result.outputIds(), result.finishReason(), eosTokenIds);
        int[] ids = ending.outputIds();
        return new Outcome(params.rid(), params.promptIds(), ids, text.text(), ending.reason(), ending.match(), result.error(), result.promptTokens(),
                result.cachedTokens(), result.queueNanos(), result.firstTokenNanos(), result.totalNanos(), clientGone, result.cause(),
                logprobs(result.logprobs(), ids.length));
    }

    /** The result's log probabilities, or (when it has fewer than the output) those the tokens brought, cut to the output. */
    private Optional<LogprobTrace> logprobs(Logprobs computed, int outputs)
    {
        List<TokenLogprob> output = computed.output().size() >= outputs ? computed.output() : logprobs;
        return params.logprobs().map(options -> new LogprobTrace(options, params.promptIds(), computed,
                output.subList(0, Math.min(outputs, output.size()))));
    }

    /**
     * Ends the generation for its front end: when {@link #run} did not see it to the end (the caller failed
     * before), aborts it and waits for its pages to come back, so nothing outlives the caller.
     */
    @Override
    public void close()
    {
        try {
            if (outcome == null && result != null) {
                scheduler.abort(params.rid());
                try {
                    result.get(1, TimeUnit.MINUTES);
                }
                catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
                catch (TimeoutException | ExecutionException ignored) {
                    // the scheduler reports its own failures; nothing more to release here
                }
            }
        }
        finally {
            onClose.run();
        }
    }
}
