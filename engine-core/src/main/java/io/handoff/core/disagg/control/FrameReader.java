package io.handoff.core.disagg.control;

import io.handoff.core.disagg.control.ControlCodec.MalformedFrameException;
import io.handoff.core.security.AuthenticationException;
import io.handoff.core.security.ClusterHandshake;
import io.handoff.core.security.FrameMac;

import java.io.DataInputStream;
import java.io.EOFException;
import java.io.IOException;

import static java.util.Objects.requireNonNull;

/**
 * Reads the frames of one control connection: an int length, the message bytes (type first), then, in an
 * authenticated session, the frame's tag. Nothing is allocated from what a length announces: the type's own bound
 * ({@link ControlCodec#maxFrameBytes}) is checked first, and the buffer starts small and doubles only as bytes
 * arrive, each step reserved from the process-wide {@link FrameBudget}. A peer that announces 16 MiB and sends
 * nothing costs this reader nothing but the 5-byte header.
 */
public final class FrameReader
{
    public static final int FIRST_BUFFER_BYTES = 4096;

    /** The peer opened a cluster handshake on a connection of a node without a secret. */
    static final class PeerAuthenticates
            extends IOException
    {
        PeerAuthenticates()
        {
            super("the peer opened cluster authentication, but this node has no cluster secret: set the same "
                    + "handoff.security.cluster-secret-file on every node of the cluster");
        }
    }

    /** Taking more would exceed the process's budget for frames in flight. */
    static final class BudgetExhausted
            extends IOException
    {
        BudgetExhausted(long limit, int frame)
        {
            super("the control frames being received hold the whole frame budget of " + limit + " bytes, so a frame of " + frame
                    + " bytes is not buffered; raise handoff.security.frame-bytes-in-flight if legitimate peers need more");
        }
    }

    private final DataInputStream in;
    private final FrameBudget budget;
    private final FrameMac mac;
    private final byte[] tag;
    private long frames;
    private long reserved;

    /** @param mac the session's receiving tags, or null on an unauthenticated connection */
    FrameReader(DataInputStream in, FrameBudget budget, FrameMac mac)
    {
        this.in = requireNonNull(in, "in is null");
        this.budget = requireNonNull(budget, "budget is null");
        this.mac = mac;
        this.tag = mac == null ? null : new byte[FrameMac.TAG_BYTES];
    }

    /** The next frame's message bytes, exactly as long as its length says; EOF at a clean end between frames. */
    byte[] next()
            throws IOException
    {
        int length = in.readInt();
        if (frames == 0 && mac == null && ClusterHandshake.isOpening(length)) {
            throw new PeerAuthenticates();
        }
        if (length < 1 || length > ControlCodec.MAX_FRAME_BYTES) {
            throw new MalformedFrameException("length " + length + " is outside 1.." + ControlCodec.MAX_FRAME_BYTES);
        }
        byte type = in.readByte();
        int limit = ControlCodec.maxFrameBytes(type);
        if (limit == 0) {
            throw new MalformedFrameException("unknown message type " + type + " in a frame of " + length + " bytes");
        }
        if (length > limit) {
            throw new MalformedFrameException("a frame of message type " + type + " announces " + length + " bytes; that type takes at most "
                    + limit);
        }
        byte[] frame;
        try {
            frame = grow(new byte[0], Math.min(length, FIRST_BUFFER_BYTES));
            frame[0] = type;
            int filled = 1;
            while (filled < length) {
                if (filled == frame.length) {
                    frame = grow(frame, (int) Math.min(length, 2L * frame.length));
                }
                int got = in.read(frame, filled, frame.length - filled);
                if (got < 0) {
                    throw new EOFException("the peer closed the connection inside a frame of " + length + " bytes");
                }
                filled += got;
            }
        }
        finally {
            // a frame cut short gives back what it held too; a whole one is decoded at once and dropped
            releaseAll();
        }
        if (mac != null) {
            in.readFully(tag);
            if (!mac.verify(frame, length, tag)) {
                throw new AuthenticationException(AuthenticationException.Failure.FORGED_FRAME, "frame " + frames + " (message type " + type
                        + ", " + length + " bytes) failed its authentication tag: it was injected, replayed, reordered or corrupted");
            }
        }
        frames++;
        return frame;
    }

    // a larger buffer with the old one's bytes; the budget covers both while the copy is made
    private byte[] grow(byte[] old, int size)
            throws BudgetExhausted
    {
        if (!budget.reserve(size)) {
            throw new BudgetExhausted(budget.limit(), size);
        }
        reserved += size;
        byte[] larger = new byte[size];
        System.arraycopy(old, 0, larger, 0, old.length);
        budget.release(old.length);
        reserved -= old.length;
        return larger;
    }

    private void releaseAll()
    {
        if (reserved > 0) {
            budget.release(reserved);
            reserved = 0;
        }
    }
}
