package io.handoff.core.model.parallel;

import java.util.Arrays;

/**
 * Which ranges of an array each rank computes in a {@link Collective}: per rank, {@code (offset, length)} pairs in array
 * order. Every rank builds the same pieces from the same step, so what a rank sends needs no addresses on the wire: its
 * values, in its pieces' order.
 */
public final class Pieces
{
    private final int[][] ranges;
    private final int[] floats;

    private Pieces(int[][] ranges)
    {
        this.ranges = ranges;
        this.floats = new int[ranges.length];
        for (int r = 0; r < ranges.length; r++) {
            for (int i = 1; i < ranges[r].length; i += 2) {
                floats[r] += ranges[r][i];
            }
        }
    }

    /**
     * Rows {@code 0 .. rows} of {@code stride} values from {@code offset}: rank {@code r} owns columns
     * {@code [bounds[r], bounds[r + 1])} of each.
     */
    public static Pieces columns(int rows, int stride, int offset, int[] bounds)
    {
        int ranks = bounds.length - 1;
        int[][] ranges = new int[ranks][];
        for (int r = 0; r < ranks; r++) {
            int width = bounds[r + 1] - bounds[r];
            int[] mine = new int[width == 0 ? 0 : 2 * rows];
            for (int row = 0; width > 0 && row < rows; row++) {
                mine[2 * row] = offset + row * stride + bounds[r];
                mine[2 * row + 1] = width;
            }
            ranges[r] = mine;
        }
        return new Pieces(ranges);
    }

    /** Slots of {@code length} values, slot {@code s} at {@code s * length}, owned by rank {@code owners[s]}. */
    public static Pieces slots(int length, int[] owners, int ranks)
    {
        int[] counts = new int[ranks];
        for (int owner : owners) {
            counts[owner]++;
        }
        int[][] ranges = new int[ranks][];
        for (int r = 0; r < ranks; r++) {
            ranges[r] = new int[2 * counts[r]];
        }
        Arrays.fill(counts, 0);
        for (int s = 0; s < owners.length; s++) {
            int r = owners[s];
            ranges[r][2 * counts[r]] = s * length;
            ranges[r][2 * counts[r] + 1] = length;
            counts[r]++;
        }
        return new Pieces(ranges);
    }

    public int ranks()
    {
        return ranges.length;
    }

    /** Rank {@code rank}'s {@code (offset, length)} pairs, in array order. */
    public int[] ranges(int rank)
    {
        return ranges[rank].clone();
    }

    /** How many values rank {@code rank} owns. */
    public int floats(int rank)
    {
        return floats[rank];
    }

    /** Rank {@code rank}'s values of {@code buf}, in order, into {@code out[from ..]}; returns the index after them. */
    public int copyOut(int rank, float[] buf, float[] out, int from)
    {
        int[] mine = ranges[rank];
        for (int i = 0; i < mine.length; i += 2) {
            System.arraycopy(buf, mine[i], out, from, mine[i + 1]);
            from += mine[i + 1];
        }
        return from;
    }

    /** The inverse of {@link #copyOut}: values from {@code in[from ..]} into rank {@code rank}'s places in {@code buf}. */
    public int copyIn(int rank, float[] in, int from, float[] buf)
    {
        int[] mine = ranges[rank];
        for (int i = 0; i < mine.length; i += 2) {
            System.arraycopy(in, from, buf, mine[i], mine[i + 1]);
            from += mine[i + 1];
        }
        return from;
    }
}
