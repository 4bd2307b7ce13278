package io.handoff.core.model.parallel;

import io.handoff.spi.attention.AttentionGeometry;
import io.handoff.spi.attention.KvLayout;

/**
 * Which part of a model one rank of a tensor-parallel group computes: rank {@code rank} of {@code size}. Every split is
 * of a matrix's output rows (attention heads, hidden or FFN columns, experts, vocabulary), never of a dot product's
 * length, so a rank computes each value it owns exactly as a single rank would: the group's result is the same bits
 * for every size.
 */
public record TensorShard(int rank, int size)
{
    public static final int MAX_SIZE = 8;
    /** The single rank: everything. */
    public static final TensorShard WHOLE = new TensorShard(0, 1);

    public TensorShard
    {
        if (size < 1 || size > MAX_SIZE || rank < 0 || rank >= size) {
            throw new IllegalArgumentException("rank " + rank + " of a tensor-parallel group of " + size + " (sizes 1.." + MAX_SIZE + ")");
        }
    }

    public boolean whole()
    {
        return size == 1;
    }

    /**
     * Where each rank's share of {@code total} items starts, {@code size + 1} bounds: as even as whole multiples of
     * {@code unit} allow, the remainder on the last rank.
     */
    public int[] bounds(int total, int unit)
    {
        int units = total / unit;
        int[] bounds = new int[size + 1];
        for (int r = 0; r < size; r++) {
            bounds[r] = unit * (int) ((long) units * r / size);
        }
        bounds[size] = total;
        return bounds;
    }

    /** The query heads this rank computes, {@code [first, first + count)}. */
    public int firstHead(int heads)
    {
        return rank * headsPerRank(heads);
    }

    public int headsPerRank(int heads)
    {
        return heads / size;
    }

    /**
     * The first KV head this rank holds: its query heads' group. With more ranks than KV heads each KV head is held by
     * {@code size / kvHeads} ranks (replicated), as its query heads are spread over them.
     */
    public int firstKvHead(int kvHeads)
    {
        return kvHeads >= size ? rank * (kvHeads / size) : rank / (size / kvHeads);
    }

    public int kvHeadsPerRank(int kvHeads)
    {
        return Math.max(1, kvHeads / size);
    }

    /**
     * Refuses a size the model's heads cannot be split into: query heads must divide evenly, and KV heads divide evenly or
     * divide the size (each then replicated); MLA's one latent row is held whole by every rank.
     */
    public static void check(int size, String model, int heads, int kvHeads, KvLayout layout)
    {
        new TensorShard(0, size);
        if (heads % size != 0) {
            throw new IllegalArgumentException("tensor-parallel size " + size + " does not divide model '" + model + "''s " + heads
                    + " attention heads; choose a size that does (1.." + MAX_SIZE + ")");
        }
        if (layout == KvLayout.GQA && kvHeads % size != 0 && size % kvHeads != 0) {
            throw new IllegalArgumentException("tensor-parallel size " + size + " neither divides nor is a multiple of model '" + model
                    + "''s " + kvHeads + " KV heads; choose a size that is either");
        }
    }

    /** The attention this rank runs: its query heads and the KV heads they read, the head dims unchanged. */
    public AttentionGeometry attention(AttentionGeometry whole)
    {
        if (size == 1) {
            return whole;
        }
        int kv = whole.layout() == KvLayout.MLA ? 1 : kvHeadsPerRank(whole.numKvHeads());
        return new AttentionGeometry(whole.layout(), headsPerRank(whole.numQHeads()), kv, whole.qkDim(), whole.vDim(), whole.scale(),
                whole.arithmetic());
    }
}
