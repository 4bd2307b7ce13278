package io.handoff.core.scheduler;

import io.handoff.core.grammar.TokenMatcher;
import io.handoff.core.prefix.PrefixNode;
import io.handoff.trace.FailureCause;
import io.handoff.trace.FinishReason;
import io.handoff.trace.RequestTimeline;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CompletableFuture;

/**
 * A request's state inside the scheduler. Owned by the scheduler thread, except {@link #outputs}: the
 * compute thread writes output {@code k} while running the step that samples it, and later steps (on
 * the same compute thread) read it as their input; the scheduler thread reads it only after that step's
 * fence has completed. {@link #outputLogprobs} and {@link #inputLogprobs} are written the same way: output
 * {@code k}'s with output {@code k}, a prompt token's in the step that computes the position before it.
 */
final class ScheduledRequest
{
    enum Phase
    {
        WAITING,
        RUNNING,
        /** Finished or aborted, waiting for in-flight steps that still touch its pages. */
        RELEASING,
        DONE
    }

    final GenerateRequest request;
    final TokenListener listener;
    final CompletableFuture<GenerateResult> result = new CompletableFuture<>();
    final long submittedNanos;
    /** The model's vocabulary, for what a handoff checks of token ids a peer sends. */
    final int vocabSize;
    final int[] outputs;
    final List<float[]> logits;
    /** Output {@code k}'s log probability at index {@code k}, when the request asked for them; null otherwise. */
    final TokenLogprob[] outputLogprobs;
    /** The first prompt position {@link #inputLogprobs} covers (the prompt's length when it asked for none). */
    final int inputFrom;
    /** Prompt token {@code inputFrom + i}'s log probability at index {@code i}; empty when none were asked for. */
    final TokenLogprob[] inputLogprobs;
    /** The ids that end it: its stop token ids, and the model's EOS ids unless it ignores EOS. */
    final Set<Integer> endIds;
    /**
     * Where its output is in its grammar, when it has one (compute thread). It reads the output tokens, so on a decode
     * it starts by reading the first token the prefill sampled under the same grammar.
     */
    final TokenMatcher matcher;
    /** Why the output left its grammar (compute thread writes, the scheduler reads after the step's fence); null while it has not. */
    volatile String constraintError;

    Phase phase = Phase.WAITING;
    long admittedNanos;
    long firstTokenNanos;
    int row = -1;
    // the data-parallel rank whose part of the pool holds the request's pages (0 on a server without data parallelism)
    int owner;
    int[] pages = new int[0];
    PrefixNode lockedPrefix;
    int cachedTokens;
    /** Prompt tokens whose KV writes have been scheduled. */
    int scheduledPromptTokens;
    /** Prompt tokens whose KV is written (their steps completed). */
    int computedPromptTokens;
    /** Output tokens whose sampling has been scheduled. */
    int scheduledOutputs;
    /** Output tokens produced (their steps completed). */
    int producedOutputs;
    /** The last step that reads or writes this request's pages. */
    long lastStep = -1;
    /** Decode: the prompt's pages are RECEIVING, waiting for a peer's KV. */
    boolean receivingPrompt;
    /** Decode: the prompt's leading pages the prefix cache held at admission, which are not received (0 when it computes its prompt). */
    int heldPromptPages;
    /** How the pages go back once the request ended; decided once. */
    KvHandoff.Release release;
    /** Whether the scheduler already asked to be woken when {@link #release} allows. */
    boolean releaseWatched;
    FinishReason finishReason;
    String error;
    /** Why it failed, where the failure could name a cause; null otherwise. */
    FailureCause cause;
    /** Its transitions, for /debug/requests (set once at submission, before the scheduler thread sees it). */
    RequestTimeline timeline = RequestTimeline.NONE;

    /** @param eosTokenIds the model's end-of-sequence ids */
    ScheduledRequest(GenerateRequest request, TokenListener listener, long submittedNanos, int vocabSize, Set<Integer> eosTokenIds)
    {
        this.request = request;
        this.listener = listener;
        this.submittedNanos = submittedNanos;
        this.vocabSize = vocabSize;
        this.outputs = new int[request.maxNewTokens()];
        this.logits = request.returnLogits() ? new ArrayList<>() : List.of();
        this.outputLogprobs = request.logprobs().isPresent() ? new TokenLogprob[request.maxNewTokens()] : null;
        this.inputFrom = request.logprobs().map(l -> TokenLogprobs.inputFrom(l, promptLength())).orElse(promptLength());
        this.inputLogprobs = new TokenLogprob[promptLength() - inputFrom];
        this.endIds = endIds(request, eosTokenIds);
        // a grammar that is complete must be able to end the output even when EOS is ignored and no stop id is set
        Set<Integer> grammarEnds = endIds.isEmpty() ? eosTokenIds : endIds;
        if (request.constraint().isPresent() && grammarEnds.isEmpty()) {
            throw new RequestRejectedException(RequestRejectedException.Kind.INVALID, "a constrained output must be able to end: this model has no "
                    + "EOS token; set stop_token_ids");
        }
        this.matcher = request.constraint().map(grammar -> new TokenMatcher(grammar, grammarEnds)).orElse(null);
    }

    /** Alternatives per position the request asked for; meaningful only when it asked for log probabilities. */
    int topLogprobs()
    {
        return request.logprobs().map(LogprobRequest::topN).orElse(0);
    }

    /** Compute thread: output {@code index}'s log probability, when the request asked, from the raw logits it was sampled from. */
    void outputLogprob(int index, float[] rawLogits)
    {
        if (outputLogprobs != null) {
            outputLogprobs[index] = TokenLogprobs.of(rawLogits, outputs[index], topLogprobs());
        }
    }

    /** Compute thread: the log probability of prompt token {@code position + 1}, from the logits at {@code position}. */
    void promptLogprob(int position, float[] logits)
    {
        inputLogprobs[position + 1 - inputFrom] = TokenLogprobs.of(logits, request.promptIds()[position + 1], topLogprobs());
    }

    /** Whether a step that computes prompt position {@code position} must keep its logits: the next token's log probability. */
    boolean needsPromptLogits(int position)
    {
        return position >= inputFrom - 1 && position < promptLength() - 1;
    }

    private static Set<Integer> endIds(GenerateRequest request, Set<Integer> eosTokenIds)
    {
        if (request.ignoreEos() || eosTokenIds.isEmpty()) {
            return request.stopTokenIds();
        }
        Set<Integer> ids = new HashSet<>(request.stopTokenIds());
        ids.addAll(eosTokenIds);
        return Set.copyOf(ids);
    }

    int promptLength()
    {
        return request.promptIds().length;
    }

    /** Positions that ever get KV: the prompt and every output but the last. */
    int kvPositions()
    {
        return promptLength() + request.maxNewTokens() - 1;
    }

    boolean prefillScheduled()
    {
        return scheduledPromptTokens == promptLength();
    }

    /** What a {@link KvHandoff} sees of this request now (its page list is a copy). */
    HandoffRequest handoffView(int pageSize)
    {
        return new HandoffRequest(request.rid(), request.ticket(), request.promptIds(), pages.clone(), pageSize, request.logprobs(), vocabSize,
                heldPromptPages);
    }

    /** Tokens whose KV is final in the pool: what may be cached when the request ends. */
    int[] tokensWithKv()
    {
        int[] tokens = Arrays.copyOf(request.promptIds(), computedPromptTokens + Math.max(0, producedOutputs - 1));
        if (computedPromptTokens == promptLength()) {
            System.arraycopy(outputs, 0, tokens, promptLength(), Math.max(0, producedOutputs - 1));
        }
        return tokens;
    }

    GenerateResult toResult(long nowNanos)
    {
        // Only the produced outputs' logits: in overlap mode a step already scheduled past a stop or an abort
        // samples one more, and after a failed step the list has a gap.
        List<float[]> produced;
        synchronized (logits) {
            produced = List.copyOf(logits.subList(0, Math.min(producedOutputs, logits.size())));
        }
        return new GenerateResult(request.rid(), Arrays.copyOf(outputs, producedOutputs), finishReason,
                Optional.ofNullable(error), promptLength(), cachedTokens, produced,
                admittedNanos == 0 ? nowNanos - submittedNanos : admittedNanos - submittedNanos,
                firstTokenNanos == 0 ? 0 : firstTokenNanos - submittedNanos,
                nowNanos - submittedNanos,
                Optional.ofNullable(cause), logprobs());
    }

    /** Prefill: the first token's log probability and the prompt's, as the decode gets them; empty when none were asked for. */
    Optional<Logprobs> prefillLogprobs()
    {
        if (outputLogprobs == null) {
            return Optional.empty();
        }
        return Optional.of(new Logprobs(inputFrom, Arrays.asList(inputLogprobs), List.of(outputLogprobs[0])));
    }

    /** Decode: takes the log probabilities the prefill computed, in place of computing them here; false when they do not fit. */
    boolean receivedLogprobs(Optional<Logprobs> received)
    {
        if (received.isEmpty() || outputLogprobs == null) {
            return received.isEmpty() == (outputLogprobs == null);
        }
        Logprobs logprobs = received.get();
        if (logprobs.inputFrom() != inputFrom || logprobs.input().size() != inputLogprobs.length || logprobs.output().size() != 1) {
            return false;
        }
        logprobs.input().toArray(inputLogprobs);
        outputLogprobs[0] = logprobs.output().getFirst();
        return true;
    }

    /** The prompt's log probabilities alone (no output entries): all of them once computed (or received), none before. */
    Logprobs promptLogprobs()
    {
        List<TokenLogprob> input = Arrays.asList(inputLogprobs).contains(null) ? List.of() : Arrays.asList(inputLogprobs);
        return new Logprobs(inputFrom, input, List.of());
    }

    /** What the result reports: every produced output's, and the prompt's once all of them are computed (or received). */
    private Logprobs logprobs()
    {
        if (outputLogprobs == null) {
            return Logprobs.NONE;
        }
        List<TokenLogprob> output = new ArrayList<>();
        for (int k = 0; k < producedOutputs && outputLogprobs[k] != null; k++) {
            output.add(outputLogprobs[k]);
        }
        return new Logprobs(inputFrom, promptLogprobs().input(), output);
    }
}
