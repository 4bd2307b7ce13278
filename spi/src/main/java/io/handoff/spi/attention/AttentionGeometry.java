package io.handoff.spi.attention;

import static java.util.Objects.requireNonNull;

/**
 * The shape of one model's attention as kernels see it. Queries are laid out {@code [token][qHead][qkDim]},
 * outputs {@code [token][qHead][vDim]}. With {@link KvLayout#MLA} (absorbed decode) there is one KV head,
 * {@code qkDim = kv_lora_rank + rope_dim}, {@code vDim = kv_lora_rank}, and V is the latent prefix of the
 * key row. With {@link KvLayout#GQA} (or MHA, where the head counts are equal) query head {@code h} reads
 * KV head {@code h / (numQHeads / numKvHeads)}. {@code arithmetic} says how scores and sums round.
 */
public record AttentionGeometry(KvLayout layout, int numQHeads, int numKvHeads, int qkDim, int vDim, float scale, AttentionArithmetic arithmetic)
{
    public AttentionGeometry
    {
        requireNonNull(layout, "layout is null");
        requireNonNull(arithmetic, "arithmetic is null");
        if (numQHeads < 1 || numKvHeads < 1 || numQHeads % numKvHeads != 0) {
            throw new IllegalArgumentException("query heads " + numQHeads + " must be a positive multiple of KV heads " + numKvHeads);
        }
        if (qkDim < 1 || vDim < 1) {
            throw new IllegalArgumentException("bad head dims qk=" + qkDim + " v=" + vDim);
        }
        if (layout == KvLayout.MLA && (numKvHeads != 1 || vDim > qkDim)) {
            throw new IllegalArgumentException("MLA has one latent KV head and vDim <= qkDim");
        }
    }

    /** The shape with {@link AttentionArithmetic#F32}. */
    public AttentionGeometry(KvLayout layout, int numQHeads, int numKvHeads, int qkDim, int vDim, float scale)
    {
        this(layout, numQHeads, numKvHeads, qkDim, vDim, scale, AttentionArithmetic.F32);
    }

    public AttentionGeometry withArithmetic(AttentionArithmetic arithmetic)
    {
        return new AttentionGeometry(layout, numQHeads, numKvHeads, qkDim, vDim, scale, arithmetic);
    }

    public int groupSize()
    {
        return numQHeads / numKvHeads;
    }

    /** Elements of one token's key row in the pool. */
    public int keyRowElements()
    {
        return numKvHeads * qkDim;
    }

    /** Elements of one token's value row (for MLA: the latent prefix of the key row). */
    public int valueRowElements()
    {
        return numKvHeads * vDim;
    }
}
