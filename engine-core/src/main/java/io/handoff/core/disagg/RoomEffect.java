package io.handoff.core.disagg;

import io.handoff.core.kv.ReleaseProof;
import io.handoff.spi.transfer.RoomKey;
import io.handoff.spi.transfer.TransferPlan;

import java.util.Arrays;

import static java.util.Objects.requireNonNull;

/**
 * What a room's transition asks its caller to do, in list order, before the room's next event: the rooms
 * hold no I/O, so every side effect is one of these. Page effects name destination pages of the decode's
 * {@code PagePool}.
 */
public sealed interface RoomEffect
{
    /** Send a control message to the room's peer (best effort: a lost channel is reported as {@link RoomEvent.PeerLost}). */
    record Send(ControlMessage message)
            implements RoomEffect
    {
        public Send
        {
            requireNonNull(message, "message is null");
        }
    }

    /** Prefill: post the plan on the peer's {@code TransferPeer}, with a listener that feeds the outcome back. */
    record Post(TransferPlan plan)
            implements RoomEffect
    {
        public Post
        {
            requireNonNull(plan, "plan is null");
        }
    }

    /** Prefill: call {@code TransferPeer.drain(room)} and feed {@link RoomEvent.Drained} back when it completes. */
    record Drain(RoomKey room)
            implements RoomEffect
    {
        public Drain
        {
            requireNonNull(room, "room is null");
        }
    }

    /** Prefill: no transfer reads the room's source pages any more; the request may free them. */
    record ReleaseSources()
            implements RoomEffect {}

    /** Decode: {@code PagePool.markReceiving}: the pages are about to be advertised to the writer. */
    record MarkReceiving(int[] pages)
            implements RoomEffect
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
            implements RoomEffect
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
            implements RoomEffect
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
            implements RoomEffect
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
            implements RoomEffect
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

    /** The room succeeded. Decode: join the request to decoding with this first token, without recomputing the prompt. */
    record Complete(int firstToken)
            implements RoomEffect {}

    /** The room failed: fail the request with this reason. Emitted exactly once per room. */
    record Fail(String reason)
            implements RoomEffect
    {
        public Fail
        {
            requireNonNull(reason, "reason is null");
        }
    }

    /** An event that changed nothing (duplicate, stale generation, after the end); count it. */
    record Ignored(String why)
            implements RoomEffect
    {
        public Ignored
        {
            requireNonNull(why, "why is null");
        }
    }
}
