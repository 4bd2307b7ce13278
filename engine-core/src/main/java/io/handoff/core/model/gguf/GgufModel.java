package io.handoff.core.model.gguf;

import io.handoff.core.model.Architecture;
import io.handoff.core.model.DeepseekConfig;
import io.handoff.core.model.ModelConfig;
import io.handoff.core.model.RopeScaling;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Optional;

import static java.util.Objects.requireNonNull;

/**
 * What a GGUF file says about its model: the {@link ModelConfig} the transformer runs, with what the tensors
 * show (q/k/v biases as in Qwen2, per-head q/k norms as in Qwen3, an lm_head tied to the embeddings). Llama
 * 3.1's RoPE scaling comes as a {@code rope_freqs.weight} of per-frequency divisors and is run; a
 * {@code rope.scaling.type} other than {@code none} (linear, YaRN) is refused.
 * The config's {@code weightsSeed} is 0: the weights are the file's, not seeded, and
 * {@link ModelConfig#compatibilityHash()} then differs from any seeded model's only by name and shape,
 * so the name is the file's {@code general.name} (or its file name) to keep two different files apart.
 */
public record GgufModel(GgufArchitecture architecture, ModelConfig config, boolean tiedEmbeddings, boolean attentionBias, boolean qkNorm)
{
    public static final String TOKENS_KEY = "tokenizer.ggml.tokens";
    static final double DEFAULT_ROPE_FREQ_BASE = 10000;

    public GgufModel
    {
        requireNonNull(architecture, "architecture is null");
        requireNonNull(config, "config is null");
    }

    public static GgufModel read(GgufFile file)
    {
        GgufArchitecture arch = GgufArchitecture.of(file);
        if (arch == GgufArchitecture.DEEPSEEK2) {
            return deepseek(file);
        }
        GgufMetadata m = file.metadata();
        int max = Integer.MAX_VALUE;
        int hidden = m.intValue(arch.key("embedding_length"), 1, max);
        int heads = m.intValue(arch.key("attention.head_count"), 1, max);
        int kvHeads = m.optionalInt(arch.key("attention.head_count_kv"), 1, max).orElse(heads);
        int headDim = m.optionalInt(arch.key("attention.key_length"), 1, max).orElse(hidden / heads);
        int valueLength = m.optionalInt(arch.key("attention.value_length"), 1, max).orElse(headDim);
        int ropeDim = m.optionalInt(arch.key("rope.dimension_count"), 1, max).orElse(headDim);
        if (valueLength != headDim || ropeDim != headDim) {
            throw new IllegalArgumentException(file.path() + ": " + arch.key("attention.value_length") + " " + valueLength + " and "
                    + arch.key("rope.dimension_count") + " " + ropeDim + " must equal the head dim " + headDim
                    + "; the engine runs neither partial RoPE nor value heads of another width");
        }
        RopeScaling ropeScaling = ropeScaling(file, arch, headDim);
        boolean attentionBias = file.tensor("blk.0.attn_q.bias").isPresent();
        boolean qkNorm = file.tensor("blk.0.attn_q_norm.weight").isPresent();
        if (file.tensor("blk.0.attn_output.bias").isPresent()) {
            throw new IllegalArgumentException(file.path() + ": the attention output projection has a bias (blk.0.attn_output.bias), which the "
                    + "engine does not add; only q/k/v biases are run");
        }
        if (qkNorm && arch.permutedQk()) {
            throw new IllegalArgumentException(file.path() + ": a " + arch.ggufName() + " file with q/k norms (blk.0.attn_q_norm.weight) "
                    + "has its q/k rows permuted by llama.cpp's converter but not its norms; the engine cannot tell their order");
        }
        String name = name(file);
        try {
            ModelConfig config = new ModelConfig(name, Architecture.GQA, vocabSize(file, arch), hidden,
                    m.intValue(arch.key("block_count"), 1, max), heads, kvHeads, headDim, 0, 0, 0, 0, 0,
                    m.intValue(arch.key("feed_forward_length"), 1, max),
                    (float) (double) m.optionalNumber(arch.key("rope.freq_base")).orElse(DEFAULT_ROPE_FREQ_BASE),
                    (float) (double) m.optionalNumber(arch.key("attention.layer_norm_rms_epsilon")).orElseThrow(() -> new IllegalArgumentException(
                            file.path() + ": metadata key '" + arch.key("attention.layer_norm_rms_epsilon") + "' is missing; "
                                    + "convert the model with a llama.cpp convert_hf_to_gguf.py that writes it")),
                    m.intValue(arch.key("context_length"), 1, max), 0L, false, "", attentionBias, qkNorm, ropeScaling);
            return new GgufModel(arch, config, file.tensor("output.weight").isEmpty(), attentionBias, qkNorm);
        }
        catch (IllegalArgumentException e) {
            if (e.getMessage() != null && e.getMessage().startsWith(file.path().toString())) {
                throw e;
            }
            throw new IllegalArgumentException(file.path() + ": " + e.getMessage(), e);
        }
    }

    /** A {@code deepseek2} file: MLA and mixture-of-experts layers, as {@link DeepseekGgufConfig} reads them. */
    private static GgufModel deepseek(GgufFile file)
    {
        boolean tied = file.tensor("output.weight").isEmpty();
        try {
            DeepseekConfig deepseek = DeepseekGgufConfig.read(file.metadata(), false);
            ModelConfig config = deepseek.toModelConfig(name(file), deepseek.maxPositionEmbeddings(), "");
            return new GgufModel(GgufArchitecture.DEEPSEEK2, config, tied, false, false);
        }
        catch (IllegalArgumentException e) {
            throw new IllegalArgumentException(file.path() + ": " + e.getMessage(), e);
        }
    }

    private static String name(GgufFile file)
    {
        return file.metadata().optionalString("general.name").filter(s -> !s.isBlank()).orElse(file.path().getFileName().toString());
    }

    /** {@code rope_freqs.weight} (one divisor per rotated pair, how llama.cpp writes Llama 3.1's scaling), or none. */
    private static RopeScaling ropeScaling(GgufFile file, GgufArchitecture arch, int headDim)
    {
        String type = file.metadata().optionalString(arch.key("rope.scaling.type")).orElse("none");
        if (!type.equals("none")) {
            throw new IllegalArgumentException(file.path() + ": " + arch.key("rope.scaling.type") + " is '" + type
                    + "', which the engine does not run; from GGUF it runs unscaled RoPE and rope_freqs.weight (Llama 3.1's scaling)");
        }
        Optional<GgufTensor> freqs = file.tensor("rope_freqs.weight");
        if (freqs.isEmpty()) {
            return RopeScaling.NONE;
        }
        long[] shape = freqs.get().rowMajorShape();
        if (shape.length != 1 || shape[0] != headDim / 2) {
            throw new IllegalArgumentException(file.path() + ": rope_freqs.weight has shape " + Arrays.toString(shape) + "; it must hold one "
                    + "divisor per rotated pair, [" + headDim / 2 + "]");
        }
        List<Float> divisors = new ArrayList<>();
        for (float d : freqs.get().toFloats()) {
            divisors.add(d);
        }
        return new RopeScaling.FrequencyDivisors(divisors);
    }

    private static int vocabSize(GgufFile file, GgufArchitecture arch)
    {
        GgufMetadata m = file.metadata();
        if (m.contains(arch.key("vocab_size"))) {
            return m.intValue(arch.key("vocab_size"), 1, Integer.MAX_VALUE);
        }
        if (m.get(TOKENS_KEY).map(GgufValue::value).orElse(null) instanceof GgufValue.GgufArray tokens) {
            return tokens.elements().size();
        }
        throw new IllegalArgumentException(file.path() + ": neither '" + arch.key("vocab_size") + "' nor an array '" + TOKENS_KEY
                + "' says the vocabulary size; the file lacks its tokenizer");
    }
}
