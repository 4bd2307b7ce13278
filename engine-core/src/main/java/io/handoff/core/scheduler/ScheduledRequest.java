package io.handoff.core.scheduler;

import io.handoff.core.prefix.PrefixNode;

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
 * fence has completed.
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
    final int[] outputs;
    final List<float[]> logits;
    /** The ids that end it: its stop token ids, and the model's EOS ids unless it ignores EOS. */
    final Set<Integer> endIds;

    Phase phase = Phase.WAITING;
    long admittedNanos;
    long firstTokenNanos;
    int row = -1;
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
    ScheduledRequest(GenerateRequest request, TokenListener listener, long submittedNanos, Set<Integer> eosTokenIds)
    {
        this.request = request;
        this.listener = listener;
        this.submittedNanos = submittedNanos;
        this.outputs = new int[request.maxNewTokens()];
        this.logits = request.returnLogits() ? new ArrayList<>() : List.of();
        this.endIds = endIds(request, eosTokenIds);
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
        return new HandoffRequest(request.rid(), request.ticket(), request.promptIds(), pages.clone(), pageSize);
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
                Optional.ofNullable(cause));
    }
}
