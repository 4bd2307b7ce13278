package io.handoff.core.scheduler;

import io.handoff.core.kv.ReleaseProof;
import io.handoff.trace.FailureCause;
import io.handoff.trace.FinishReason;

import java.util.Optional;
import java.util.concurrent.CompletableFuture;

import static java.util.Objects.requireNonNull;

/**
 * How a scheduler hands KV to another process (prefill) or takes it from one (decode); {@link #NONE} for a
 * colocated engine. The scheduler calls these on its own thread and never blocks on what they start;
 * the disaggregation layer calls back through {@link Scheduler#promptKvArrived} and
 * {@link Scheduler#promptKvFailed}.
 */
public interface KvHandoff
{
    KvHandoff NONE = new KvHandoff() {};

    /** Decode: this request's prompt KV comes from a peer and is not computed here. */
    default boolean receivesPrompt(HandoffRequest request)
    {
        return false;
    }

    /**
     * Decode: whether a request whose prompt KV comes from a peer takes the prompt's leading pages from this engine's prefix
     * cache when it holds them, so that only the rest is received ({@link HandoffRequest#heldPages}). The last prompt page is
     * always received.
     */
    default boolean reusesCachedPrompt()
    {
        return false;
    }

    /**
     * Request {@code rid}, which has a room ({@code ticket}), was queued and waits for admission: a decode claims the room on
     * its prefill; a prefill knows the room's request came, so that a decode's claim for it waits for its admission. Called
     * on the submitting thread (not the scheduler's), at once, so that a long queue does not delay it; it must not block.
     */
    default void queued(String rid, RoomTicket ticket)
    {
    }

    /**
     * Request {@code rid}, which {@link #queued} named, ended before it was admitted (aborted while waiting, or the engine
     * shut down): its room never had pages here, so the peer must hear it ended, or it would wait for the room's page list
     * (a prefill) or its KV (a decode) until its own deadline. Called on the scheduler thread; it must not block.
     */
    default void dequeued(String rid, RoomTicket ticket, FailureCause cause, String reason)
    {
    }

    /** The request was admitted; on a decode that receives its prompt, the prompt's pages are RECEIVING. */
    default void admitted(HandoffRequest request)
    {
    }

    /**
     * Prefill: prompt positions {@code [from, to)} are scheduled in the step of {@code fence}; every earlier
     * position is written by an earlier step (whose fence may still be pending in overlap mode).
     */
    default void chunkScheduled(HandoffRequest request, int from, int to, Fence fence)
    {
    }

    /**
     * Prefill: the forward that wrote positions {@code [from, to)} completed; {@code firstToken} is set on the last chunk, else -1,
     * and so is {@code logprobs} when the request asked for log probabilities: the first token's (the only output entry) and
     * the prompt's, which travel to the decode with the KV. Empty otherwise.
     */
    default void chunkComputed(HandoffRequest request, int from, int to, Fence fence, boolean last, int firstToken, Optional<Logprobs> logprobs)
    {
    }

    /**
     * Throws {@link RequestRejectedException} when this handoff cannot carry what the request needs between the nodes (e.g. its
     * prompt's log probabilities exceed what one control frame holds). Called on the submitting thread, before it is queued.
     */
    default void checkTransferable(GenerateRequest request)
    {
    }

    /**
     * The request ended and no step touches its pages any more: when may they be reused? Called once. {@code cause} is
     * why it failed, empty when it did not (or nothing named a cause).
     */
    default Release finished(HandoffRequest request, FinishReason reason, String error, Optional<FailureCause> cause)
    {
        return Release.NOW;
    }

    /** When a finished request's pages may go back. */
    sealed interface Release
            permits Now, AfterTransfers, Quarantine
    {
        Release NOW = new Now();
    }

    /** Nothing else touches them. */
    record Now() implements Release {}

    /**
     * Prefill: transfers still read them; release when the future completes (every plan finished or drained). It
     * completes with the room's failure when the room failed for a reason of its own (not because the request ended):
     * the request's result then reports that failure, whatever its generation did, so a prefill whose KV never reached
     * a decode does not answer as if it had.
     */
    record AfterTransfers(CompletableFuture<Optional<HandoffFailure>> done) implements Release {}

    /** Why a request's KV handoff failed: its cause and the message the client is told. */
    record HandoffFailure(FailureCause cause, String message)
    {
        public HandoffFailure
        {
            requireNonNull(cause, "cause is null");
            requireNonNull(message, "message is null");
        }
    }

    /**
     * Decode: a peer may still write the prompt's pages; quarantine them and free them only on proof
     * (invariant I2). The other pages go back at once.
     */
    record Quarantine(CompletableFuture<ReleaseProof> proof) implements Release {}
}
