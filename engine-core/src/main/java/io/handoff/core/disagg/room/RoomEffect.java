package io.handoff.core.disagg.room;

import io.handoff.core.disagg.control.ControlMessage;
import io.handoff.core.kv.ReleaseProof;
import io.handoff.core.scheduler.Logprobs;
import io.handoff.spi.transfer.RoomKey;
import io.handoff.spi.transfer.TransferPlan;
import io.handoff.trace.FailureCause;

import java.util.Arrays;

import java.util.Optional;

import static java.util.Objects.requireNonNull;

/**
 * What a room's transition asks its caller to do, in list order, before the room's next event: the rooms
 * hold no I/O, so every side effect is one of these. Page effects name destination pages of the decode's
 * {@code PagePool}. Like {@link RoomEvent}, effects are split by side: a {@link SenderRoom} emits only
 * {@link SenderEffect}s and a {@link ReceiverRoom} only {@link ReceiverEffect}s, so each side's executor
 * switches over its own effects exhaustively; effects both sides emit implement both.
 */
public sealed interface RoomEffect
{
    /** An effect a prefill's {@link SenderRoom} emits. */
    sealed interface SenderEffect
            extends RoomEffect {}

    /** An effect a decode's {@link ReceiverRoom} emits. */
    sealed interface ReceiverEffect
            extends RoomEffect {}

    /** Send a control message to the room's peer (best effort: a lost channel is reported as {@link RoomEvent.PeerLost}). */
    record Send(ControlMessage message)
            implements SenderEffect, ReceiverEffect
    {
        public Send
        {
            requireNonNull(message, "message is null");
        }
    }

    /** Prefill: post the plan on the peer's {@code TransferPeer}, with a listener that feeds the outcome back. */
    record Post(TransferPlan plan)
            implements SenderEffect
    {
        public Post
        {
            requireNonNull(plan, "plan is null");
        }
    }

    /** Prefill: drain the room on its connection ({@code TransferLink.drain(room)}) and feed {@link RoomEvent.Drained} back when it completes. */
    record Drain(RoomKey room)
            implements SenderEffect
    {
        public Drain
        {
            requireNonNull(room, "room is null");
        }
    }

    /** Prefill: no transfer reads the room's source pages any more; the request may free them. */
    record ReleaseSources()
            implements SenderEffect {}

    /** Decode: {@code PagePool.markReceiving}: the pages are about to be advertised to the writer. */
    record MarkReceiving(int[] pages)
            implements ReceiverEffect
    {
        public MarkReceiving
        {
            requireNonNull(pages, "pages is null");
        }

        @Override
        public boolean equals(Object o)
        {
            return o instanceof MarkReceiving other && Arrays.equals(pages, other.pages);
        }

        @Override
        public int hashCode()
        {
            return Arrays.hashCode(pages);
        }

        @Override
        public String toString()
        {
            return "MarkReceiving" + Arrays.toString(pages);
        }
    }

    /** Decode: {@code PagePool.commitReceived}: the room's data is verified and the pages belong to the request. */
    record Commit(int[] pages)
            implements ReceiverEffect
    {
        public Commit
        {
            requireNonNull(pages, "pages is null");
        }

        @Override
        public boolean equals(Object o)
        {
            return o instanceof Commit other && Arrays.equals(pages, other.pages);
        }

        @Override
        public int hashCode()
        {
            return Arrays.hashCode(pages);
        }

        @Override
        public String toString()
        {
            return "Commit" + Arrays.toString(pages);
        }
    }

    /** Decode: {@code PagePool.release}: the pages were never advertised to a writer, so nothing can land in them. */
    record Release(int[] pages)
            implements ReceiverEffect
    {
        public Release
        {
            requireNonNull(pages, "pages is null");
        }

        @Override
        public boolean equals(Object o)
        {
            return o instanceof Release other && Arrays.equals(pages, other.pages);
        }

        @Override
        public int hashCode()
        {
            return Arrays.hashCode(pages);
        }

        @Override
        public String toString()
        {
            return "Release" + Arrays.toString(pages);
        }
    }

    /** Decode: {@code PagePool.quarantine}: a write may still land in these pages. */
    record Quarantine(int[] pages)
            implements ReceiverEffect
    {
        public Quarantine
        {
            requireNonNull(pages, "pages is null");
        }

        @Override
        public boolean equals(Object o)
        {
            return o instanceof Quarantine other && Arrays.equals(pages, other.pages);
        }

        @Override
        public int hashCode()
        {
            return Arrays.hashCode(pages);
        }

        @Override
        public String toString()
        {
            return "Quarantine" + Arrays.toString(pages);
        }
    }

    /** Decode: {@code PagePool.releaseQuarantined(pages, proof)}. */
    record ReleaseQuarantined(int[] pages, ReleaseProof proof)
            implements ReceiverEffect
    {
        public ReleaseQuarantined
        {
            requireNonNull(pages, "pages is null");
            requireNonNull(proof, "proof is null");
        }

        @Override
        public boolean equals(Object o)
        {
            return o instanceof ReleaseQuarantined other && Arrays.equals(pages, other.pages) && proof.equals(other.proof);
        }

        @Override
        public int hashCode()
        {
            return 31 * Arrays.hashCode(pages) + proof.hashCode();
        }

        @Override
        public String toString()
        {
            return "ReleaseQuarantined" + Arrays.toString(pages) + " on " + proof;
        }
    }

    /**
     * The room succeeded. Decode: join the request to decoding with this first token (and the prefill's log probabilities,
     * checked against the request, when it asked for them), without recomputing the prompt.
     */
    record Complete(int firstToken, Optional<Logprobs> logprobs)
            implements SenderEffect, ReceiverEffect
    {
        public Complete
        {
            requireNonNull(logprobs, "logprobs is null");
        }

        public Complete(int firstToken)
        {
            this(firstToken, Optional.empty());
        }
    }

    /** The room failed: fail the request with this reason and cause. Emitted exactly once per room. */
    record Fail(String reason, FailureCause cause)
            implements SenderEffect, ReceiverEffect
    {
        public Fail
        {
            requireNonNull(reason, "reason is null");
            requireNonNull(cause, "cause is null");
        }

        /** A failure not (yet) given a more precise cause. */
        public Fail(String reason)
        {
            this(reason, FailureCause.ENGINE);
        }
    }

    /** An event that changed nothing (duplicate, stale generation, after the end); count it. */
    record Ignored(String why)
            implements SenderEffect, ReceiverEffect
    {
        public Ignored
        {
            requireNonNull(why, "why is null");
        }
    }
}
