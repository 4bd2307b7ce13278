package io.handoff.core.model;

import io.handoff.spi.attention.AttentionGeometry;
import io.handoff.spi.attention.KvLayout;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;
import java.util.Map;
import java.util.TreeMap;

import static java.util.Objects.requireNonNull;

/**
 * The shape of one model. Fields that do not apply to the architecture are 0: the MLA dims for
 * {@link Architecture#GQA}; for {@link Architecture#MLA}, {@code kvHeads} equals {@code heads} and
 * {@code headDim} is {@code qkNopeHeadDim + qkRopeHeadDim} (as in DeepSeek's HF config), and a
 * {@code qLoraRank} of 0 means queries are projected directly (no low-rank query path).
 *
 * @param weightsSeed seed of {@link SyntheticWeights}; part of {@link #compatibilityHash()} because two nodes
 *         with the same shapes but different weights must not exchange KV
 * @param tieWordEmbeddings the output projection is the embedding matrix (no {@code lm_head.weight})
 * @param weightsIdentity what identifies a checkpoint's weights (a digest of its files' headers), empty for seeded
 *         weights; part of {@link #compatibilityHash()} for the same reason as the seed
 * @param attentionBias GQA's q, k and v projections add a bias ({@code q_proj.bias}, …), as Qwen2's do
 * @param qkNorm GQA's queries and keys are RMS-normalised per head after projection, before RoPE
 *         ({@code q_norm.weight}, {@code k_norm.weight} of {@code headDim}), as Qwen3's are
 * @param ropeScaling how RoPE's frequencies are remapped, {@link RopeScaling#NONE} for none; for MLA none or
 *         {@link RopeScaling.Yarn}, whose mscale also scales the softmax (DeepSeek's YaRN)
 * @param moe the mixture-of-experts layers' shape, {@code null} for a dense model (every layer a SwiGLU of
 *         {@code intermediateSize})
 * @param firstDenseLayers with {@code moe}: the leading layers that stay dense ({@code first_k_dense_replace}); 0 without
 */
public record ModelConfig(
        String name,
        Architecture architecture,
        int vocabSize,
        int hiddenSize,
        int layers,
        int heads,
        int kvHeads,
        int headDim,
        int qLoraRank,
        int kvLoraRank,
        int qkNopeHeadDim,
        int qkRopeHeadDim,
        int vHeadDim,
        int intermediateSize,
        float ropeTheta,
        float rmsEps,
        int maxContext,
        long weightsSeed,
        boolean tieWordEmbeddings,
        String weightsIdentity,
        boolean attentionBias,
        boolean qkNorm,
        RopeScaling ropeScaling,
        MoeConfig moe,
        int firstDenseLayers)
{
    private static final Map<String, ModelConfig> PRESETS = Map.of(
            "tiny-mla", new ModelConfig("tiny-mla", Architecture.MLA, 259, 256, 4, 8, 8, 64,
                    128, 128, 32, 32, 32, 512, 10000f, 1e-6f, 4096, 20240501L),
            "tiny-gqa", new ModelConfig("tiny-gqa", Architecture.GQA, 259, 256, 4, 8, 2, 32,
                    0, 0, 0, 0, 0, 512, 10000f, 1e-5f, 4096, 20240502L));

    /** A model with its own lm_head and no checkpoint: the seeded presets' shape. */
    public ModelConfig(String name, Architecture architecture, int vocabSize, int hiddenSize, int layers, int heads, int kvHeads, int headDim,
            int qLoraRank, int kvLoraRank, int qkNopeHeadDim, int qkRopeHeadDim, int vHeadDim, int intermediateSize, float ropeTheta,
            float rmsEps, int maxContext, long weightsSeed)
    {
        this(name, architecture, vocabSize, hiddenSize, layers, heads, kvHeads, headDim, qLoraRank, kvLoraRank, qkNopeHeadDim, qkRopeHeadDim,
                vHeadDim, intermediateSize, ropeTheta, rmsEps, maxContext, weightsSeed, false, "");
    }

    /** A plain Llama-style attention: no q/k/v biases, no q/k norms, no RoPE scaling. */
    public ModelConfig(String name, Architecture architecture, int vocabSize, int hiddenSize, int layers, int heads, int kvHeads, int headDim,
            int qLoraRank, int kvLoraRank, int qkNopeHeadDim, int qkRopeHeadDim, int vHeadDim, int intermediateSize, float ropeTheta,
            float rmsEps, int maxContext, long weightsSeed, boolean tieWordEmbeddings, String weightsIdentity)
    {
        this(name, architecture, vocabSize, hiddenSize, layers, heads, kvHeads, headDim, qLoraRank, kvLoraRank, qkNopeHeadDim, qkRopeHeadDim,
                vHeadDim, intermediateSize, ropeTheta, rmsEps, maxContext, weightsSeed, tieWordEmbeddings, weightsIdentity, false, false,
                RopeScaling.NONE);
    }

    /** A dense model: every layer's feed-forward is one SwiGLU of {@code intermediateSize}. */
    public ModelConfig(String name, Architecture architecture, int vocabSize, int hiddenSize, int layers, int heads, int kvHeads, int headDim,
            int qLoraRank, int kvLoraRank, int qkNopeHeadDim, int qkRopeHeadDim, int vHeadDim, int intermediateSize, float ropeTheta,
            float rmsEps, int maxContext, long weightsSeed, boolean tieWordEmbeddings, String weightsIdentity, boolean attentionBias,
            boolean qkNorm, RopeScaling ropeScaling)
    {
        this(name, architecture, vocabSize, hiddenSize, layers, heads, kvHeads, headDim, qLoraRank, kvLoraRank, qkNopeHeadDim, qkRopeHeadDim,
                vHeadDim, intermediateSize, ropeTheta, rmsEps, maxContext, weightsSeed, tieWordEmbeddings, weightsIdentity, attentionBias, qkNorm,
                ropeScaling, null, 0);
    }

    public ModelConfig
    {
        requireNonNull(name, "name is null");
        requireNonNull(weightsIdentity, "weightsIdentity is null");
        requireNonNull(architecture, "architecture is null");
        requireNonNull(ropeScaling, "ropeScaling is null");
        positive(name, "vocabSize", vocabSize);
        positive(name, "hiddenSize", hiddenSize);
        positive(name, "layers", layers);
        positive(name, "heads", heads);
        positive(name, "intermediateSize", intermediateSize);
        positive(name, "maxContext", maxContext);
        if (!(ropeTheta > 0) || !(rmsEps > 0)) {
            throw new IllegalArgumentException("model '" + name + "': ropeTheta " + ropeTheta + " and rmsEps " + rmsEps + " must be positive");
        }
        if (moe == null ? firstDenseLayers != 0 : firstDenseLayers < 0 || firstDenseLayers > layers) {
            throw new IllegalArgumentException("model '" + name + "': firstDenseLayers " + firstDenseLayers + " must lie from 0 to the "
                    + layers + " layers with a mixture of experts, and be 0 without one");
        }
        switch (architecture) {
            case GQA -> {
                positive(name, "kvHeads", kvHeads);
                positive(name, "headDim", headDim);
                if (heads % kvHeads != 0 || headDim % 2 != 0) {
                    throw new IllegalArgumentException("model '" + name + "': heads " + heads + " must be a multiple of kvHeads "
                            + kvHeads + " and headDim " + headDim + " even (RoPE rotates pairs)");
                }
                if (qLoraRank != 0 || kvLoraRank != 0 || qkNopeHeadDim != 0 || qkRopeHeadDim != 0 || vHeadDim != 0) {
                    throw new IllegalArgumentException("model '" + name + "': GQA has no MLA dims; set them to 0");
                }
                if (ropeScaling instanceof RopeScaling.FrequencyDivisors f && f.divisors().size() != headDim / 2) {
                    throw new IllegalArgumentException("model '" + name + "': " + f.divisors().size() + " RoPE frequency divisors for headDim "
                            + headDim + "; there must be one per rotated pair, " + headDim / 2);
                }
            }
            case MLA -> {
                if (attentionBias || qkNorm || !(ropeScaling instanceof RopeScaling.None || ropeScaling instanceof RopeScaling.Yarn)) {
                    throw new IllegalArgumentException("model '" + name + "': q/k/v biases, q/k norms and RoPE scalings other than YaRN are "
                            + "GQA features; MLA runs none of them");
                }
                positive(name, "kvLoraRank", kvLoraRank);
                positive(name, "qkNopeHeadDim", qkNopeHeadDim);
                positive(name, "qkRopeHeadDim", qkRopeHeadDim);
                positive(name, "vHeadDim", vHeadDim);
                if (qLoraRank < 0 || qkRopeHeadDim % 2 != 0) {
                    throw new IllegalArgumentException("model '" + name + "': qLoraRank " + qLoraRank
                            + " must be >= 0 and qkRopeHeadDim " + qkRopeHeadDim + " even");
                }
                if (kvHeads != heads || headDim != qkNopeHeadDim + qkRopeHeadDim) {
                    throw new IllegalArgumentException("model '" + name + "': MLA needs kvHeads == heads (" + heads
                            + ") and headDim == qkNopeHeadDim + qkRopeHeadDim (" + (qkNopeHeadDim + qkRopeHeadDim) + ")");
                }
            }
        }
    }

    /**
     * The built-in presets. {@code tiny-mla} and {@code tiny-gqa} are sized so a 512-token prompt
     * prefills in well under a second on two CPU cores.
     */
    public static Map<String, ModelConfig> presets()
    {
        return PRESETS;
    }

    public static ModelConfig byName(String name)
    {
        requireNonNull(name, "name is null");
        ModelConfig config = PRESETS.get(name);
        if (config == null) {
            throw new IllegalArgumentException("unknown model '" + name + "'; known models: "
                    + String.join(", ", new TreeMap<>(PRESETS).keySet()));
        }
        return config;
    }

    /** This model served under another name (handoff.model.served-name): what clients send and /v1/models lists. */
    public ModelConfig withName(String servedName)
    {
        return new ModelConfig(servedName, architecture, vocabSize, hiddenSize, layers, heads, kvHeads, headDim, qLoraRank, kvLoraRank,
                qkNopeHeadDim, qkRopeHeadDim, vHeadDim, intermediateSize, ropeTheta, rmsEps, maxContext, weightsSeed, tieWordEmbeddings,
                weightsIdentity, attentionBias, qkNorm, ropeScaling, moe, firstDenseLayers);
    }

    public ModelConfig withWeightsSeed(long seed)
    {
        return new ModelConfig(name, architecture, vocabSize, hiddenSize, layers, heads, kvHeads, headDim, qLoraRank, kvLoraRank,
                qkNopeHeadDim, qkRopeHeadDim, vHeadDim, intermediateSize, ropeTheta, rmsEps, maxContext, seed, tieWordEmbeddings, weightsIdentity,
                attentionBias, qkNorm, ropeScaling, moe, firstDenseLayers);
    }

    /** This shape serving at most {@code maxContext} tokens (never more than it has) with the weights {@code identity} names. */
    public ModelConfig withServing(int maxContext, String identity)
    {
        return new ModelConfig(name, architecture, vocabSize, hiddenSize, layers, heads, kvHeads, headDim, qLoraRank, kvLoraRank,
                qkNopeHeadDim, qkRopeHeadDim, vHeadDim, intermediateSize, ropeTheta, rmsEps, Math.min(maxContext, this.maxContext), weightsSeed,
                tieWordEmbeddings, identity, attentionBias, qkNorm, ropeScaling, moe, firstDenseLayers);
    }

    /** Whether layer {@code layer}'s feed-forward is a mixture of experts (else a dense SwiGLU). */
    public boolean isMoeLayer(int layer)
    {
        return moe != null && layer >= firstDenseLayers;
    }

    /** How attention kernels see this model: MLA attends in latent space with one shared KV row per token. */
    public AttentionGeometry attentionGeometry()
    {
        return switch (architecture) {
            case MLA -> new AttentionGeometry(KvLayout.MLA, heads, 1, kvLoraRank + qkRopeHeadDim, kvLoraRank,
                    (float) (softmaxScaleMultiplier() / Math.sqrt(qkNopeHeadDim + qkRopeHeadDim)));
            case GQA -> new AttentionGeometry(KvLayout.GQA, heads, kvHeads, headDim, headDim, (float) (1.0 / Math.sqrt(headDim)));
        };
    }

    /** YaRN's {@code mscale(factor, mscale_all_dim)^2} on MLA's softmax scale (DeepSeek's rule), 1 without YaRN. */
    private double softmaxScaleMultiplier()
    {
        return ropeScaling instanceof RopeScaling.Yarn yarn ? yarn.softmaxScaleMultiplier() : 1;
    }

    /** Elements of one token's key row in one layer of the KV pool ({@code [c | k_rope]} for MLA). */
    public int kvKeyRowElements()
    {
        return attentionGeometry().keyRowElements();
    }

    /** Elements of one token's value row (for MLA: the latent prefix of the key row). */
    public int kvValueRowElements()
    {
        return attentionGeometry().valueRowElements();
    }

    /** Whether V is stored inside the key row, so the pool needs no separate value region. */
    public boolean kvValuesInKeyRow()
    {
        return architecture == Architecture.MLA;
    }

    /** Rotary dims per head: all of {@code headDim} for GQA, the decoupled rope part for MLA. */
    public int ropeDim()
    {
        return architecture == Architecture.MLA ? qkRopeHeadDim : headDim;
    }

    /**
     * A short string equal on two nodes iff they run the same model with the same weights and KV row
     * shapes: the name followed by a SHA-256 prefix of every field. The disaggregation handshake compares it.
     */
    public String compatibilityHash()
    {
        String canonical = String.join(";", name, architecture.name(), "vocab=" + vocabSize, "hidden=" + hiddenSize,
                "layers=" + layers, "heads=" + heads, "kvHeads=" + kvHeads, "headDim=" + headDim, "qLora=" + qLoraRank,
                "kvLora=" + kvLoraRank, "nope=" + qkNopeHeadDim, "rope=" + qkRopeHeadDim, "v=" + vHeadDim,
                "ffn=" + intermediateSize, "theta=" + Float.floatToIntBits(ropeTheta), "eps=" + Float.floatToIntBits(rmsEps),
                "ctx=" + maxContext, "seed=" + weightsSeed, "tied=" + tieWordEmbeddings, "weights=" + weightsIdentity,
                "bias=" + attentionBias, "qkNorm=" + qkNorm, "ropeScaling=" + ropeScaling.canonical())
                // a dense model's hash is what it was before MoE existed
                + (moe == null ? "" : ";moe=" + moe + ";firstDense=" + firstDenseLayers);
        try {
            byte[] digest = MessageDigest.getInstance("SHA-256").digest(canonical.getBytes(StandardCharsets.UTF_8));
            return name + "@" + HexFormat.of().formatHex(digest, 0, 8);
        }
        catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("SHA-256 is required of every Java platform", e);
        }
    }

    private static void positive(String model, String field, int value)
    {
        if (value < 1) {
            throw new IllegalArgumentException("model '" + model + "': " + field + " must be positive, was " + value);
        }
    }
}
