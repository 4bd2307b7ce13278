package io.handoff.core.model;

import java.util.ArrayList;
import java.util.List;

import static java.util.Objects.requireNonNull;

/**
 * All of a model's tensors, loaded once from a {@link WeightSource} by their Hugging Face names. Linear
 * layers stay {@code [out, in]} row-major, which is what a per-row dot-product matmul wants, and in the
 * element type the source stores them ({@link WeightMatrix}); the embedding table is such a matrix too, read a
 * row per token. Norm weights and biases are small and F32. MLA's attention weights are F32 arrays: the key
 * half of {@code kv_b_proj} is stored transposed per head, so absorbing a query into latent space is also a
 * per-row matmul.
 */
record ModelWeights(ModelConfig config, WeightMatrix embedding, List<Layer> layers, float[] finalNorm, WeightMatrix lmHead)
{
    ModelWeights
    {
        requireNonNull(config, "config is null");
        layers = List.copyOf(layers);
    }

    record Layer(float[] inputNorm, Attention attention, float[] postAttentionNorm, WeightMatrix gate, WeightMatrix up, WeightMatrix down) {}

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
     * @param kvA {@code [kvLoraRank + rope, hidden]}: the latent and the shared rope key
     * @param ukT per head {@code [kvLoraRank, nope]}: W_UK transposed, maps q_nope into latent space
     * @param uv per head {@code [vHeadDim, kvLoraRank]}: W_UV, maps the latent attention output to values
     * @param o {@code [hidden, heads*vHeadDim]}
     */
    record Mla(float[] qA, float[] qANorm, float[] qB, float[] kvA, float[] kvANorm, float[] ukT, float[] uv, float[] o)
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
            layers.add(new Layer(
                    source.floats(p + "input_layernorm.weight", hidden),
                    attention,
                    source.floats(p + "post_attention_layernorm.weight", hidden),
                    source.matrix(p + "mlp.gate_proj.weight", config.intermediateSize(), hidden),
                    source.matrix(p + "mlp.up_proj.weight", config.intermediateSize(), hidden),
                    source.matrix(p + "mlp.down_proj.weight", hidden, config.intermediateSize())));
        }
        WeightMatrix embedding = source.matrix("model.embed_tokens.weight", config.vocabSize(), hidden);
        // tied: the output projection is the embedding's matrix, which neither path writes to
        return new ModelWeights(config, embedding, layers,
                source.floats("model.norm.weight", hidden),
                config.tieWordEmbeddings() ? embedding : source.matrix("lm_head.weight", config.vocabSize(), hidden));
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
        float[] qA = null;
        float[] qANorm = null;
        float[] qB;
        if (c.qLoraRank() > 0) {
            qA = source.floats(p + "q_a_proj.weight", c.qLoraRank(), hidden);
            qANorm = source.floats(p + "q_a_layernorm.weight", c.qLoraRank());
            qB = source.floats(p + "q_b_proj.weight", heads * qHead, c.qLoraRank());
        }
        else {
            qB = source.floats(p + "q_proj.weight", heads * qHead, hidden);
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
                source.floats(p + "kv_a_proj_with_mqa.weight", rank + c.qkRopeHeadDim(), hidden),
                source.floats(p + "kv_a_layernorm.weight", rank),
                ukT, uv,
                source.floats(p + "o_proj.weight", hidden, heads * v));
    }
}
