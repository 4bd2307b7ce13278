package io.handoff.core.parallel;

import io.handoff.core.model.parallel.Pieces;

import java.io.IOException;
import java.nio.ByteBuffer;

/** The float payloads of a collective: ranks' pieces in rank order, little-endian. */
final class Floats
{
    private Floats() {}

    /** Rank {@code rank}'s pieces of {@code buf} into {@code out}. */
    static void put(ByteBuffer out, Pieces pieces, int rank, float[] buf, float[] scratch)
    {
        int n = pieces.copyOut(rank, buf, scratch, 0);
        out.asFloatBuffer().put(scratch, 0, n);
        out.position(out.position() + 4 * n);
    }

    /** Rank {@code rank}'s pieces from {@code in} into their places in {@code buf}; the frame must hold exactly them. */
    static void take(ByteBuffer in, Pieces pieces, int rank, float[] buf, float[] scratch)
            throws IOException
    {
        int n = pieces.floats(rank);
        if (in.remaining() < 4 * n) {
            throw new IOException("rank " + rank + "'s pieces are " + n + " values; the frame holds " + in.remaining() / 4);
        }
        in.asFloatBuffer().get(scratch, 0, n);
        in.position(in.position() + 4 * n);
        pieces.copyIn(rank, scratch, 0, buf);
    }

    static float[] scratch(float[] current, int n)
    {
        return current.length >= n ? current : new float[Math.max(n, current.length * 2)];
    }
}
