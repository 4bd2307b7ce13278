package io.handoff.core.model.gguf;

import io.handoff.core.model.DeepseekConfig;
import io.handoff.core.model.MoeConfig;
import io.handoff.core.model.RopeScaling;
import io.handoff.testkit.model.SeededDeepseekCheckpoint;
import io.handoff.testkit.model.SeededDeepseekCheckpoint.Tensor;

import java.nio.file.Path;
import java.util.SequencedMap;

import static java.util.Objects.requireNonNull;

/**
 * The weights of a {@link SeededDeepseekCheckpoint} as a {@code deepseek2} GGUF file, laid out as llama.cpp's converter
 * writes one: the {@code *_mla} head widths, stacked {@code ffn_*_exps}, {@code ffn_*_shexp}, {@code exp_probs_b.bias}, an
 * explicit {@code attention.q_lora_rank} even when 0 (without it llama.cpp guesses a "lite" model from the layer count),
 * and {@code kv_b_proj} either split per head into {@code attn_k_b} (transposed) and {@code attn_v_b}, as today, or as the
 * single {@code attn_kv_b} of older files. Norms, biases and the router stay F32, as the converter keeps them; the other
 * matrices are F32, F16, BF16 or Q8_0. RoPE needs no row permutation: llama.cpp's deepseek2 turns adjacent pairs, as the
 * original checkpoints' interleaved rope does.
 */
public final class SeededDeepseekGguf
{
    /** How {@code kv_b_proj} is stored. */
    public enum KvLayout
    {
        /** {@code attn_k_b [heads, kv_lora_rank, nope]} and {@code attn_v_b [heads, v, kv_lora_rank]}, as converted today. */
        SPLIT,
        /** One {@code attn_kv_b [heads * (nope + v), kv_lora_rank]}, as converted before the MLA split. */
        LEGACY
    }

    private static final String A = DeepseekGgufConfig.ARCHITECTURE + ".";

    private SeededDeepseekGguf() {}

    /**
     * Writes {@code config}'s tensors (from {@link SeededDeepseekCheckpoint#tensors}) with {@code vocabulary} into
     * {@code file}.
     *
     * @param type F32, F16, BF16 or Q8_0: every matrix but the router
     */
    public static Path write(Path file, DeepseekConfig config, SequencedMap<String, Tensor> tensors, GgufVocabulary vocabulary, KvLayout layout,
            GgufTensorType type)
    {
        return write(file, config, tensors, vocabulary, layout, type, type);
    }

    /**
     * The file {@link #write} writes with {@code type} matrices, its matrices written as F32 after rounding them through
     * {@code type}: a reader of this file computes with exactly the weights a reader of the other decodes.
     */
    public static Path writeDecodedAsF32(Path file, DeepseekConfig config, SequencedMap<String, Tensor> tensors, GgufVocabulary vocabulary,
            KvLayout layout, GgufTensorType type)
    {
        return write(file, config, tensors, vocabulary, layout, type, GgufTensorType.F32);
    }

    /** Matrices rounded through {@code values}' type, then written as {@code type}. */
    private static Path write(Path file, DeepseekConfig config, SequencedMap<String, Tensor> tensors, GgufVocabulary vocabulary, KvLayout layout,
            GgufTensorType values, GgufTensorType type)
    {
        requireNonNull(config, "config is null");
        requireNonNull(tensors, "tensors is null");
        requireNonNull(vocabulary, "vocabulary is null");
        requireNonNull(layout, "layout is null");
        if (vocabulary.tokens().size() != config.vocabSize()) {
            throw new IllegalArgumentException("the vocabulary has " + vocabulary.tokens().size() + " tokens, the model " + config.vocabSize()
                    + ": pad it with GgufVocabulary.padded");
        }
        GgufWriter writer = new GgufWriter().alignment(32);
        metadata(writer, config, layout, type, file.getFileName().toString());
        vocabulary.writeTo(writer);
        Tensors t = new Tensors(writer, tensors, values == type ? GgufTensorType.F32 : values, type);
        t.matrix("token_embd.weight", "model.embed_tokens.weight");
        int heads = config.heads();
        int nope = config.qkNopeHeadDim();
        int v = config.vHeadDim();
        int rank = config.kvLoraRank();
        for (int l = 0; l < config.layers(); l++) {
            String p = "model.layers." + l + ".";
            String b = "blk." + l + ".";
            t.f32(b + "attn_norm.weight", p + "input_layernorm.weight");
            if (config.qLoraRank() > 0) {
                t.f32(b + "attn_q_a_norm.weight", p + "self_attn.q_a_layernorm.weight");
                t.matrix(b + "attn_q_a.weight", p + "self_attn.q_a_proj.weight");
                t.matrix(b + "attn_q_b.weight", p + "self_attn.q_b_proj.weight");
            }
            else {
                t.matrix(b + "attn_q.weight", p + "self_attn.q_proj.weight");
            }
            t.f32(b + "attn_kv_a_norm.weight", p + "self_attn.kv_a_layernorm.weight");
            t.matrix(b + "attn_kv_a_mqa.weight", p + "self_attn.kv_a_proj_with_mqa.weight");
            float[] kvB = tensors.get(p + "self_attn.kv_b_proj.weight").values();
            switch (layout) {
                case SPLIT -> {
                    // per head: the key rows transposed to [rank, nope], the value rows as they are [v, rank]
                    float[] kB = new float[heads * rank * nope];
                    float[] vB = new float[heads * v * rank];
                    for (int h = 0; h < heads; h++) {
                        int base = h * (nope + v) * rank;
                        for (int i = 0; i < nope; i++) {
                            for (int j = 0; j < rank; j++) {
                                kB[(h * rank + j) * nope + i] = kvB[base + i * rank + j];
                            }
                        }
                        System.arraycopy(kvB, base + nope * rank, vB, h * v * rank, v * rank);
                    }
                    t.matrix(b + "attn_k_b.weight", new int[] {heads, rank, nope}, kB);
                    t.matrix(b + "attn_v_b.weight", new int[] {heads, v, rank}, vB);
                }
                case LEGACY -> t.matrix(b + "attn_kv_b.weight", p + "self_attn.kv_b_proj.weight");
            }
            t.matrix(b + "attn_output.weight", p + "self_attn.o_proj.weight");
            t.f32(b + "ffn_norm.weight", p + "post_attention_layernorm.weight");
            if (!config.isMoeLayer(l)) {
                for (String x : new String[] {"gate", "up", "down"}) {
                    t.matrix(b + "ffn_" + x + ".weight", p + "mlp." + x + "_proj.weight");
                }
                continue;
            }
            t.f32(b + "ffn_gate_inp.weight", p + "mlp.gate.weight");
            if (config.moe().correctionBias()) {
                t.f32(b + "exp_probs_b.bias", p + "mlp.gate.e_score_correction_bias");
            }
            for (String x : new String[] {"gate", "up", "down"}) {
                t.experts(b + "ffn_" + x + "_exps.weight", p + "mlp.experts.", "." + x + "_proj.weight", config.moe().experts());
            }
            for (String x : new String[] {"gate", "up", "down"}) {
                t.matrix(b + "ffn_" + x + "_shexp.weight", p + "mlp.shared_experts." + x + "_proj.weight");
            }
        }
        t.f32("output_norm.weight", "model.norm.weight");
        if (!config.tieWordEmbeddings()) {
            t.matrix("output.weight", "lm_head.weight");
        }
        return writer.write(file);
    }

    private static void metadata(GgufWriter w, DeepseekConfig c, KvLayout layout, GgufTensorType type, String name)
    {
        MoeConfig moe = c.moe();
        w.put(GgufArchitecture.KEY, GgufValueType.STRING, DeepseekGgufConfig.ARCHITECTURE)
                .put("general.name", GgufValueType.STRING, name)
                .put("general.file_type", GgufValueType.UINT32, (long) switch (type) {
                    case F32 -> 0;
                    case F16 -> 1;
                    case Q8_0 -> 7;
                    case BF16 -> 32;
                    default -> throw new IllegalArgumentException("the seeded DeepSeek writer does not write " + type);
                });
        u32(w, "context_length", c.maxPositionEmbeddings());
        u32(w, "embedding_length", c.hiddenSize());
        u32(w, "block_count", c.layers());
        u32(w, "feed_forward_length", c.intermediateSize());
        u32(w, "attention.head_count", c.heads());
        w.put(A + "rope.freq_base", GgufValueType.FLOAT32, c.ropeTheta());
        w.put(A + "attention.layer_norm_rms_epsilon", GgufValueType.FLOAT32, c.rmsNormEps());
        u32(w, "expert_count", moe.experts());
        u32(w, "expert_used_count", moe.expertsPerToken());
        if (moe.groups() > 1) {
            u32(w, "expert_group_count", moe.groups());
            u32(w, "expert_group_used_count", moe.groupsPerToken());
        }
        u32(w, "expert_gating_func", moe.scoring() == MoeConfig.Scoring.SIGMOID ? 2 : 1);
        u32(w, "leading_dense_block_count", c.firstDenseLayers());
        u32(w, "vocab_size", c.vocabSize());
        u32(w, "attention.q_lora_rank", c.qLoraRank());
        u32(w, "attention.kv_lora_rank", c.kvLoraRank());
        switch (layout) {
            case SPLIT -> {
                // MLA as one shared KV head: the cached latent + rope key, decompressed per head by k_b / v_b
                u32(w, "attention.head_count_kv", 1);
                u32(w, "attention.key_length", c.kvLoraRank() + c.qkRopeHeadDim());
                u32(w, "attention.value_length", c.kvLoraRank());
                u32(w, "attention.key_length_mla", c.qkHeadDim());
                u32(w, "attention.value_length_mla", c.vHeadDim());
            }
            case LEGACY -> {
                u32(w, "attention.head_count_kv", c.heads());
                u32(w, "attention.key_length", c.qkHeadDim());
                u32(w, "attention.value_length", c.vHeadDim());
            }
        }
        u32(w, "expert_feed_forward_length", moe.intermediateSize());
        u32(w, "expert_shared_count", moe.sharedExperts());
        w.put(A + "expert_weights_scale", GgufValueType.FLOAT32, moe.routedScalingFactor());
        w.put(A + "expert_weights_norm", GgufValueType.BOOL, moe.normalizeWeights());
        u32(w, "rope.dimension_count", c.qkRopeHeadDim());
        if (c.ropeScaling() instanceof RopeScaling.Yarn yarn) {
            // llama.cpp reads neither beta nor a separate mscale: it runs beta 32/1 and mscale == mscale_all_dim
            w.put(A + "rope.scaling.type", GgufValueType.STRING, "yarn")
                    .put(A + "rope.scaling.factor", GgufValueType.FLOAT32, yarn.factor())
                    .put(A + "rope.scaling.original_context_length", GgufValueType.UINT32, (long) yarn.originalMaxPositions())
                    .put(A + "rope.scaling.yarn_log_multiplier", GgufValueType.FLOAT32, 0.1f * yarn.mscaleAllDim());
        }
    }

    private static void u32(GgufWriter w, String key, int value)
    {
        w.put(A + key, GgufValueType.UINT32, (long) value);
    }

    /** Writes checkpoint tensors under GGUF names: matrices rounded through {@code rounding} in the file's type, the rest F32. */
    private record Tensors(GgufWriter writer, SequencedMap<String, Tensor> tensors, GgufTensorType rounding, GgufTensorType type)
    {
        void matrix(String name, String hfName)
        {
            Tensor t = tensor(hfName);
            matrix(name, t.shape(), t.values());
        }

        void matrix(String name, int[] shape, float[] values)
        {
            writer.tensor(name, type, GgufWriter.dims(shape), GgufWriter.decoded(rounding, values));
        }

        void f32(String name, String hfName)
        {
            Tensor t = tensor(hfName);
            writer.tensor(name, GgufTensorType.F32, GgufWriter.dims(t.shape()), t.values());
        }

        /** The experts' {@code [rows, cols]} matrices stacked as {@code [experts, rows, cols]}. */
        void experts(String name, String prefix, String suffix, int experts)
        {
            int[] shape = tensor(prefix + 0 + suffix).shape();
            int size = shape[0] * shape[1];
            float[] stacked = new float[experts * size];
            for (int e = 0; e < experts; e++) {
                System.arraycopy(tensor(prefix + e + suffix).values(), 0, stacked, e * size, size);
            }
            matrix(name, new int[] {experts, shape[0], shape[1]}, stacked);
        }

        private Tensor tensor(String hfName)
        {
            Tensor t = tensors.get(hfName);
            if (t == null) {
                throw new IllegalArgumentException("the checkpoint's tensors lack '" + hfName + "'");
            }
            return t;
        }
    }
}
