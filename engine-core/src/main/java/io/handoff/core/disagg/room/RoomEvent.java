package io.handoff.core.disagg.room;

import io.handoff.core.disagg.control.ControlMessage.RoomMessage;
import io.handoff.core.scheduler.Logprobs;
import io.handoff.spi.transfer.ProducerFence;
import io.handoff.spi.transfer.TransferPlan;
import io.handoff.trace.FailureCause;

import java.util.Optional;

import static java.util.Objects.requireNonNull;

/**
 * What happens to a room, as input to {@link SenderRoom#on} or {@link ReceiverRoom#on}. Events that only
 * make sense on one side implement only that side's interface, so feeding the wrong room does not compile.
 */
public sealed interface RoomEvent
{
    /** An event a prefill's {@link SenderRoom} handles. */
    sealed interface ForSender
            extends RoomEvent {}

    /** An event a decode's {@link ReceiverRoom} handles. */
    sealed interface ForReceiver
            extends RoomEvent {}

    /** A control message from the peer about this room (the room checks that its room and generation match). */
    record Received(RoomMessage message)
            implements ForSender, ForReceiver
    {
        public Received
        {
            requireNonNull(message, "message is null");
        }
    }

    /** Time passed: fails the room if its phase's deadline is due. Call at or after {@code deadlineNanos()}. */
    record Tick()
            implements ForSender, ForReceiver {}

    /** This side gave up on the request (client abort, shutdown, scheduler failure), for {@code cause}. */
    record Abort(FailureCause cause, String reason)
            implements ForSender, ForReceiver
    {
        public Abort
        {
            requireNonNull(cause, "cause is null");
            requireNonNull(reason, "reason is null");
        }

        /** The client aborted the request. */
        public Abort(String reason)
        {
            this(FailureCause.CLIENT_ABORT, reason);
        }
    }

    /**
     * The control channel to the peer was lost (heartbeat silence, closed socket) or never came up: it cannot hear or
     * ack anything. {@code cause} says which: {@link FailureCause#PEER_LOST}, {@link FailureCause#HANDSHAKE_REFUSED}, or
     * {@link FailureCause#DRAIN_DEADLINE} when this side fenced a suspect peer.
     */
    record PeerLost(FailureCause cause, String reason)
            implements ForSender, ForReceiver
    {
        public PeerLost
        {
            requireNonNull(cause, "cause is null");
            requireNonNull(reason, "reason is null");
        }

        /** The peer went away. */
        public PeerLost(String reason)
        {
            this(FailureCause.PEER_LOST, reason);
        }
    }

    /**
     * Prefill: a chunk's forward wrote room-relative pages {@code firstPageIndex ..}, held in
     * {@code sourcePages}; a non-last chunk covers whole pages only, and chunks come in order.
     * {@code firstToken} (sampled on prefill) and {@code logprobs} (the first token's and the prompt's, when the request
     * asked for them) are read only for the last chunk. The {@code fence} travels
     * in every plan (invariant I1): deliver this event before the fence is done only when the peer's
     * backend honours fences ({@code FORWARD_SYNC} or {@code STAGING}); otherwise deliver it after.
     */
    record ChunkForwarded(int chunk, int firstPageIndex, int[] sourcePages, ProducerFence fence, boolean last, int firstToken,
            Optional<Logprobs> logprobs)
            implements ForSender
    {
        public ChunkForwarded
        {
            requireNonNull(sourcePages, "sourcePages is null");
            requireNonNull(fence, "fence is null");
            requireNonNull(logprobs, "logprobs is null");
        }

        public ChunkForwarded(int chunk, int firstPageIndex, int[] sourcePages, ProducerFence fence, boolean last, int firstToken)
        {
            this(chunk, firstPageIndex, sourcePages, fence, last, firstToken, Optional.empty());
        }

        public static ChunkForwarded middle(int chunk, int firstPageIndex, int[] sourcePages, ProducerFence fence)
        {
            return new ChunkForwarded(chunk, firstPageIndex, sourcePages, fence, false, -1);
        }

        public static ChunkForwarded last(int chunk, int firstPageIndex, int[] sourcePages, ProducerFence fence, int firstToken)
        {
            return last(chunk, firstPageIndex, sourcePages, fence, firstToken, Optional.empty());
        }

        public static ChunkForwarded last(int chunk, int firstPageIndex, int[] sourcePages, ProducerFence fence, int firstToken,
                Optional<Logprobs> logprobs)
        {
            return new ChunkForwarded(chunk, firstPageIndex, sourcePages, fence, true, firstToken, logprobs);
        }
    }

    /** Prefill: the backend reported a posted plan complete ({@code TransferListener.completed}). */
    record PlanCompleted(TransferPlan plan)
            implements ForSender
    {
        public PlanCompleted
        {
            requireNonNull(plan, "plan is null");
        }
    }

    /** Prefill: the backend reported a posted plan failed ({@code TransferListener.failed}). */
    record PlanFailed(TransferPlan plan, String reason)
            implements ForSender
    {
        public PlanFailed
        {
            requireNonNull(plan, "plan is null");
            requireNonNull(reason, "reason is null");
        }
    }

    /** Prefill: {@code TransferLink.drain(room)} completed, as a {@link RoomEffect.Drain} asked. */
    record Drained()
            implements ForSender {}

    /**
     * Decode: the connection to the prefill is up (handshake accepted, regions registered); the room may
     * send its pages. {@code releasePolicy} comes from the capabilities the prefill reported for this
     * connection ({@link ReleasePolicy#from}).
     */
    record PeerReady(ReleasePolicy releasePolicy)
            implements ForReceiver
    {
        public PeerReady
        {
            requireNonNull(releasePolicy, "releasePolicy is null");
        }
    }

    /**
     * Decode: the prefill can no longer write into this memory (its connection torn down, its registration
     * revoked, its process gone); proof enough to release quarantined pages.
     */
    record PeerFenced(String how)
            implements ForReceiver
    {
        public PeerFenced
        {
            requireNonNull(how, "how is null");
        }
    }

    /**
     * Decode: the last write the guard admitted for this retired room has landed (its permit closed), so no
     * receiver-validated write can land any more.
     */
    record WritesSettled()
            implements ForReceiver {}
}
