package io.handoff.core.model;

import static java.util.Objects.requireNonNull;

/**
 * The shape of a DeepSeek-V2/V3 checkpoint: multi-head latent attention (MLA) and mixture-of-experts layers after
 * {@code firstDenseLayers} dense ones. Read from config.json or GGUF metadata; {@link #toModelConfig} is the shape
 * {@code Transformer} runs.
 *
 * @param qLoraRank the low-rank query's width ({@code q_lora_rank}); 0 means a plain {@code q_proj}
 * @param kvLoraRank the compressed latent's width ({@code kv_lora_rank}), what the MLA KV cache holds with the rope key
 * @param firstDenseLayers the leading layers with a dense SwiGLU ({@code first_k_dense_replace})
 * @param intermediateSize the dense layers' SwiGLU width ({@code intermediate_size})
 * @param ropeScaling {@link RopeScaling#NONE} or {@link RopeScaling.Yarn}
 */
public record DeepseekConfig(
        int vocabSize,
        int hiddenSize,
        int layers,
        int heads,
        int qLoraRank,
        int kvLoraRank,
        int qkNopeHeadDim,
        int qkRopeHeadDim,
        int vHeadDim,
        int firstDenseLayers,
        int intermediateSize,
        MoeConfig moe,
        float rmsNormEps,
        float ropeTheta,
        RopeScaling ropeScaling,
        int maxPositionEmbeddings,
        boolean tieWordEmbeddings)
{
    public DeepseekConfig
    {
        requireNonNull(moe, "moe is null");
        requireNonNull(ropeScaling, "ropeScaling is null");
        positive("vocab_size", vocabSize);
        positive("hidden_size", hiddenSize);
        positive("num_hidden_layers", layers);
        positive("num_attention_heads", heads);
        positive("kv_lora_rank", kvLoraRank);
        positive("qk_nope_head_dim", qkNopeHeadDim);
        positive("qk_rope_head_dim", qkRopeHeadDim);
        positive("v_head_dim", vHeadDim);
        positive("intermediate_size", intermediateSize);
        positive("max_position_embeddings", maxPositionEmbeddings);
        if (qLoraRank < 0) {
            throw new IllegalArgumentException("q_lora_rank must be 0 (a plain q_proj) or positive, was " + qLoraRank);
        }
        if (qkRopeHeadDim % 2 != 0) {
            throw new IllegalArgumentException("qk_rope_head_dim must be even (RoPE turns pairs), was " + qkRopeHeadDim);
        }
        if (firstDenseLayers < 0 || firstDenseLayers > layers) {
            throw new IllegalArgumentException("first_k_dense_replace is " + firstDenseLayers + "; it must lie from 0 to the "
                    + layers + " layers (num_hidden_layers)");
        }
        if (!(rmsNormEps > 0) || !Float.isFinite(rmsNormEps)) {
            throw new IllegalArgumentException("rms_norm_eps must be positive and finite, was " + rmsNormEps);
        }
        if (!(ropeTheta > 0) || !Float.isFinite(ropeTheta)) {
            throw new IllegalArgumentException("rope_theta must be positive and finite, was " + ropeTheta);
        }
        if (!(ropeScaling instanceof RopeScaling.None || ropeScaling instanceof RopeScaling.Yarn)) {
            throw new IllegalArgumentException("rope_scaling must be none or yarn for DeepSeek, was " + ropeScaling.canonical());
        }
    }

    /** A query or key head's width: the no-RoPE part and the RoPE part. */
    public int qkHeadDim()
    {
        return qkNopeHeadDim + qkRopeHeadDim;
    }

    /**
     * The engine's shape for this checkpoint: {@link Architecture#MLA} with every head its own key and value
     * ({@code kvHeads == heads}, as in the config), the MoE layers after the dense ones.
     *
     * @param maxContext the context served, at most {@code max_position_embeddings}
     * @param weightsIdentity what identifies the checkpoint's weights, see {@link ModelConfig#weightsIdentity()}
     */
    public ModelConfig toModelConfig(String name, int maxContext, String weightsIdentity)
    {
        return new ModelConfig(name, Architecture.MLA, vocabSize, hiddenSize, layers, heads, heads, qkHeadDim(), qLoraRank, kvLoraRank,
                qkNopeHeadDim, qkRopeHeadDim, vHeadDim, intermediateSize, ropeTheta, rmsNormEps, Math.min(maxContext, maxPositionEmbeddings),
                0L, tieWordEmbeddings, weightsIdentity, false, false, ropeScaling, moe, firstDenseLayers);
    }

    /** Whether layer {@code layer} is a mixture-of-experts one (the rest are dense). */
    public boolean isMoeLayer(int layer)
    {
        return layer >= firstDenseLayers;
    }

    /** MLA's softmax scale: {@code 1/sqrt(qk_nope + qk_rope)}, times YaRN's {@code mscale(factor, mscale_all_dim)^2}. */
    public double softmaxScale()
    {
        double multiplier = ropeScaling instanceof RopeScaling.Yarn yarn ? yarn.softmaxScaleMultiplier() : 1;
        return multiplier / Math.sqrt(qkHeadDim());
    }

    private static void positive(String key, int value)
    {
        if (value < 1) {
            throw new IllegalArgumentException(key + " must be at least 1, was " + value);
        }
    }
}
