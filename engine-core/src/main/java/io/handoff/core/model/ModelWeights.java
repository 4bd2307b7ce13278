package io.handoff.core.model;

import java.util.ArrayList;
import java.util.List;

import static java.util.Objects.requireNonNull;

/**
 * All of a model's tensors, loaded once from a {@link WeightSource} by their Hugging Face names. Linear
 * layers stay {@code [out, in]} row-major, which is what a per-row dot-product matmul wants, and in the
 * element type the source stores them ({@link WeightMatrix}); the embedding table is such a matrix too, read a
 * row per token. Norm weights and biases are small and F32. MLA's {@code kv_b_proj} is split into F32 arrays: its key
 * half is stored transposed per head, so absorbing a query into latent space is also a per-row matmul. A
 * mixture-of-experts layer (DeepSeek's {@code mlp.gate}, {@code mlp.experts.E.*}, {@code mlp.shared_experts.*}) becomes a
 * {@link MoeFeedForward}.
 */
record ModelWeights(ModelConfig config, WeightMatrix embedding, List<Layer> layers, float[] finalNorm, WeightMatrix lmHead)
{
    ModelWeights
    {
        requireNonNull(config, "config is null");
        layers = List.copyOf(layers);
    }

    record Layer(float[] inputNorm, Attention attention, float[] postAttentionNorm, FeedForward feedForward) {}

    sealed interface FeedForward
            permits Dense, Moe {}

    /** One SwiGLU: {@code gate}, {@code up [intermediateSize, hidden]}, {@code down [hidden, intermediateSize]}. */
    record Dense(MoeFeedForward.Expert swiglu)
            implements FeedForward {}

    /** A mixture-of-experts layer. */
    record Moe(MoeFeedForward layer)
            implements FeedForward {}

    sealed interface Attention
            permits Gqa, Mla {}

    /**
     * {@code q [heads*headDim, hidden]}, {@code k}, {@code v [kvHeads*headDim, hidden]}, {@code o [hidden, heads*headDim]};
     * the biases ({@code [rows]}) are null without {@link ModelConfig#attentionBias()}, the per-head norms ({@code [headDim]})
     * null without {@link ModelConfig#qkNorm()}.
     */
    record Gqa(WeightMatrix q, WeightMatrix k, WeightMatrix v, WeightMatrix o, float[] qBias, float[] kBias, float[] vBias, float[] qNorm, float[] kNorm)
            implements Attention {}

    /**
     * @param qA {@code [qLoraRank, hidden]}, or null when queries are projected directly by {@code qB [heads*(nope+rope), hidden]}
     * @param qB {@code [heads*(nope+rope), qLoraRank]} after {@code qA}, else the direct query projection
     * @param kvA {@code [kvLoraRank + rope, hidden]}: the latent and the shared rope key
     * @param ukT per head {@code [kvLoraRank, nope]}: W_UK transposed, maps q_nope into latent space
     * @param uv per head {@code [vHeadDim, kvLoraRank]}: W_UV, maps the latent attention output to values
     * @param o {@code [hidden, heads*vHeadDim]}
     */
    record Mla(WeightMatrix qA, float[] qANorm, WeightMatrix qB, WeightMatrix kvA, float[] kvANorm, float[] ukT, float[] uv, WeightMatrix o)
            implements Attention {}

    static ModelWeights load(ModelConfig config, WeightSource source)
    {
        int hidden = config.hiddenSize();
        List<Layer> layers = new ArrayList<>();
        for (int l = 0; l < config.layers(); l++) {
            String p = "model.layers." + l + ".";
            Attention attention = switch (config.architecture()) {
                case GQA -> gqa(config, source, p + "self_attn.");
                case MLA -> mla(config, source, p + "self_attn.");
            };
            FeedForward feedForward = config.isMoeLayer(l)
                    ? new Moe(moe(config, source, p + "mlp."))
                    : new Dense(swiglu(source, p + "mlp.", config.intermediateSize(), hidden));
            layers.add(new Layer(
                    source.floats(p + "input_layernorm.weight", hidden),
                    attention,
                    source.floats(p + "post_attention_layernorm.weight", hidden),
                    feedForward));
        }
        WeightMatrix embedding = source.matrix("model.embed_tokens.weight", config.vocabSize(), hidden);
        // tied: the output projection is the embedding's matrix, which neither path writes to
        return new ModelWeights(config, embedding, layers,
                source.floats("model.norm.weight", hidden),
                config.tieWordEmbeddings() ? embedding : source.matrix("lm_head.weight", config.vocabSize(), hidden));
    }

    /** {@code <p>gate_proj}, {@code <p>up_proj} and {@code <p>down_proj} of {@code width}. */
    private static MoeFeedForward.Expert swiglu(WeightSource source, String p, int width, int hidden)
    {
        return new MoeFeedForward.Expert(
                source.matrix(p + "gate_proj.weight", width, hidden),
                source.matrix(p + "up_proj.weight", width, hidden),
                source.matrix(p + "down_proj.weight", hidden, width));
    }

    /** DeepSeek's names: the router {@code gate.weight} (and its {@code e_score_correction_bias}), routed and shared experts. */
    private static MoeFeedForward moe(ModelConfig c, WeightSource source, String p)
    {
        MoeConfig moe = c.moe();
        int hidden = c.hiddenSize();
        MoeRouter router = new MoeRouter(moe, source.matrix(p + "gate.weight", moe.experts(), hidden),
                moe.correctionBias() ? source.floats(p + "gate.e_score_correction_bias", moe.experts()) : null);
        List<MoeFeedForward.Expert> experts = new ArrayList<>();
        for (int e = 0; e < moe.experts(); e++) {
            experts.add(swiglu(source, p + "experts." + e + ".", moe.intermediateSize(), hidden));
        }
        MoeFeedForward.Expert shared = moe.sharedExperts() == 0 ? null : swiglu(source, p + "shared_experts.", moe.sharedIntermediateSize(), hidden);
        return new MoeFeedForward(moe, router, experts, shared);
    }

    private static Gqa gqa(ModelConfig c, WeightSource source, String p)
    {
        int hidden = c.hiddenSize();
        int qRows = c.heads() * c.headDim();
        int kvRows = c.kvHeads() * c.headDim();
        boolean bias = c.attentionBias();
        boolean norm = c.qkNorm();
        return new Gqa(
                source.matrix(p + "q_proj.weight", qRows, hidden),
                source.matrix(p + "k_proj.weight", kvRows, hidden),
                source.matrix(p + "v_proj.weight", kvRows, hidden),
                source.matrix(p + "o_proj.weight", hidden, qRows),
                bias ? source.floats(p + "q_proj.bias", qRows) : null,
                bias ? source.floats(p + "k_proj.bias", kvRows) : null,
                bias ? source.floats(p + "v_proj.bias", kvRows) : null,
                norm ? source.floats(p + "q_norm.weight", c.headDim()) : null,
                norm ? source.floats(p + "k_norm.weight", c.headDim()) : null);
    }

    private static Mla mla(ModelConfig c, WeightSource source, String p)
    {
        int hidden = c.hiddenSize();
        int heads = c.heads();
        int nope = c.qkNopeHeadDim();
        int qHead = nope + c.qkRopeHeadDim();
        int rank = c.kvLoraRank();
        int v = c.vHeadDim();
        WeightMatrix qA = null;
        float[] qANorm = null;
        WeightMatrix qB;
        if (c.qLoraRank() > 0) {
            qA = source.matrix(p + "q_a_proj.weight", c.qLoraRank(), hidden);
            qANorm = source.floats(p + "q_a_layernorm.weight", c.qLoraRank());
            qB = source.matrix(p + "q_b_proj.weight", heads * qHead, c.qLoraRank());
        }
        else {
            qB = source.matrix(p + "q_proj.weight", heads * qHead, hidden);
        }
        // kv_b_proj is [heads, nope + v, rank]: per head the W_UK rows, then the W_UV rows
        float[] kvB = source.floats(p + "kv_b_proj.weight", heads * (nope + v), rank);
        float[] ukT = new float[heads * rank * nope];
        float[] uv = new float[heads * v * rank];
        for (int h = 0; h < heads; h++) {
            int base = h * (nope + v) * rank;
            for (int i = 0; i < nope; i++) {
                for (int j = 0; j < rank; j++) {
                    ukT[(h * rank + j) * nope + i] = kvB[base + i * rank + j];
                }
            }
            System.arraycopy(kvB, base + nope * rank, uv, h * v * rank, v * rank);
        }
        return new Mla(qA, qANorm, qB,
                source.matrix(p + "kv_a_proj_with_mqa.weight", rank + c.qkRopeHeadDim(), hidden),
                source.floats(p + "kv_a_layernorm.weight", rank),
                ukT, uv,
                source.matrix(p + "o_proj.weight", hidden, heads * v));
    }
}
