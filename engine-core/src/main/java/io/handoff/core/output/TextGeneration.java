package io.handoff.core.output;

import io.handoff.core.model.tokenizer.Tokenizer;
import io.handoff.core.scheduler.GenerateRequest;
import io.handoff.core.scheduler.GenerateResult;
import io.handoff.core.scheduler.Scheduler;
import io.handoff.core.scheduler.TokenListener;

import java.util.concurrent.CompletableFuture;

import static java.util.Objects.requireNonNull;

/**
 * One request's output as text, for a front end that wants the whole answer (the CLI's {@code generate}): the tokens
 * are decoded as the scheduler produces them, and a stop string ends the request as the HTTP APIs end it: the text
 * stops before it, the request is aborted in the scheduler (which knows stop token ids, not strings), and the finish
 * reason is {@code stop}. The stop and text rules are {@link OutputText}'s, the same the HTTP APIs apply.
 */
public final class TextGeneration
{
    /** The text and how it ended; {@link OutputText.Ending#outputIds} are cut at the stop string's token. */
    public record Result(GenerateResult result, String text, OutputText.Ending ending) {}

    private final OutputText text;
    private final CompletableFuture<Result> result;

    private TextGeneration(Scheduler scheduler, GenerateRequest request, SamplingOptions options, Tokenizer tokenizer)
    {
        this.text = new OutputText(options, tokenizer.eosTokenIds(), tokenizer);
        TokenListener listener = (index, tokenId) -> {
            boolean stopString;
            synchronized (text) {
                stopString = text.append(tokenId) && text.match().orElseThrow() instanceof OutputText.StopString;
            }
            if (stopString) {
                scheduler.abort(request.rid());
            }
        };
        this.result = scheduler.submit(request, listener).result().thenApply(done -> {
            synchronized (text) {
                text.finish();
                return new Result(done, text.text(), text.ending(done.outputIds(), done.finishReason(), tokenizer.eosTokenIds()));
            }
        });
    }

    /**
     * Submits {@code request}, whose sampling and stop rules are {@code options}; throws
     * {@link io.handoff.core.scheduler.RequestRejectedException} when the scheduler refuses it.
     */
    public static TextGeneration submit(Scheduler scheduler, GenerateRequest request, SamplingOptions options, Tokenizer tokenizer)
    {
        return new TextGeneration(requireNonNull(scheduler, "scheduler is null"), requireNonNull(request, "request is null"),
                requireNonNull(options, "options is null"), requireNonNull(tokenizer, "tokenizer is null"));
    }

    /** Completes when the request has ended and its pages are back. */
    public CompletableFuture<Result> result()
    {
        return result;
    }
}
