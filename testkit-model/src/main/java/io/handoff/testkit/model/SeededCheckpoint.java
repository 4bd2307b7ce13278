package io.handoff.testkit.model;

import io.handoff.core.model.Architecture;
import io.handoff.core.model.ModelConfig;
import io.handoff.core.model.RopeScaling;
import io.handoff.core.model.SyntheticWeights;
import io.handoff.core.model.hf.HfModelConfig;
import io.handoff.core.model.hf.HfModelConfig.HfArchitecture;
import io.handoff.core.model.hf.SafetensorsWeights;
import io.handoff.core.model.hf.TensorDtype;
import io.handoff.core.model.tokenizer.BpeTokenizer;
import io.handoff.core.model.tokenizer.ByteLevel;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.SequencedMap;
import java.util.stream.Collectors;

/**
 * Writes a small Llama (or Qwen2, Qwen3) checkpoint directory from {@link SyntheticWeights}, laid out as Transformers saves
 * one: {@code config.json}, an F32 {@code model.safetensors}, and a byte-level BPE tokenizer (256 byte
 * tokens, a few merges, {@code <|begin_of_text|>} prepended by a TemplateProcessing, Llama 3's split),
 * with {@code generation_config.json} naming {@code <|end_of_text|>}. Tests and demos serve it with
 * {@code --model-path} without downloading a model; it is a few hundred kilobytes.
 */
public final class SeededCheckpoint
{
    /** The merges, best first; merge {@code i} makes token {@code 256 + i}. */
    public static final List<String> MERGES = List.of("\u0120 t", "h e", "\u0120t he", "i n", "\u0120 a");
    public static final int BOS = 256 + MERGES.size();
    public static final int EOS = BOS + 1;
    public static final int VOCAB_SIZE = EOS + 1;

    private SeededCheckpoint() {}

    /** The shape written: two layers of grouped-query attention, 4 query heads sharing 2 KV heads. */
    public static ModelConfig config(String name, long seed, boolean tieWordEmbeddings)
    {
        return config(name, seed, tieWordEmbeddings, HfArchitecture.LLAMA, RopeScaling.NONE);
    }

    /**
     * The same shape as {@code architecture} writes it: Qwen2 adds q/k/v biases, Qwen3 per-head q/k norms; Llama and
     * Mistral neither. {@code ropeScaling} is {@link RopeScaling#NONE} or a {@link RopeScaling.Llama3}.
     */
    public static ModelConfig config(String name, long seed, boolean tieWordEmbeddings, HfArchitecture architecture, RopeScaling ropeScaling)
    {
        return new ModelConfig(name, Architecture.GQA, VOCAB_SIZE, 64, 2, 4, 2, 16, 0, 0, 0, 0, 0, 128, 500000f, 1e-5f, 2048, seed,
                tieWordEmbeddings, "", architecture == HfArchitecture.QWEN2, architecture == HfArchitecture.QWEN3, ropeScaling);
    }

    /** Writes a Llama checkpoint into {@code directory} (created if absent) and returns its shape. */
    public static ModelConfig write(Path directory, long seed, boolean tieWordEmbeddings)
    {
        return write(directory, seed, tieWordEmbeddings, HfArchitecture.LLAMA, RopeScaling.NONE);
    }

    /**
     * A Llama checkpoint whose every matrix row is whole 256-value super-blocks (hidden 256, 8 query heads of 32 sharing 2 KV
     * heads, FFN 512), so that quantizing it writes K-quants rather than llama.cpp's fallbacks.
     */
    public static ModelConfig writeWide(Path directory, long seed)
    {
        ModelConfig config = new ModelConfig(directory.getFileName().toString(), Architecture.GQA, VOCAB_SIZE, 256, 2, 8, 2, 32, 0, 0, 0, 0, 0, 512,
                500000f, 1e-5f, 2048, seed, false, "", false, false, RopeScaling.NONE);
        return write(directory, config, HfArchitecture.LLAMA);
    }

    /** Writes a checkpoint of {@link #config(String, long, boolean, HfArchitecture, RopeScaling)} and returns its shape. */
    public static ModelConfig write(Path directory, long seed, boolean tieWordEmbeddings, HfArchitecture architecture, RopeScaling ropeScaling)
    {
        return write(directory, config(directory.getFileName().toString(), seed, tieWordEmbeddings, architecture, ropeScaling), architecture);
    }

    private static ModelConfig write(Path directory, ModelConfig config, HfArchitecture architecture)
    {
        long seed = config.weightsSeed();
        SyntheticWeights weights = new SyntheticWeights(seed);
        try {
            Files.createDirectories(directory);
            Files.writeString(directory.resolve(HfModelConfig.FILE), configJson(config, architecture));
            Files.write(directory.resolve(SafetensorsWeights.SINGLE_FILE),
                    SafetensorsEncoder.encode(tensorShapes(config), weights::floats, TensorDtype.F32));
            writeByteTokenizer(directory);
            Files.writeString(directory.resolve("generation_config.json"), "{\"bos_token_id\": " + BOS + ", \"eos_token_id\": " + EOS + "}\n");
        }
        catch (IOException e) {
            throw new UncheckedIOException("cannot write a checkpoint to " + directory + ": " + e.getMessage(), e);
        }
        return config;
    }

    /**
     * The tensors the transformer reads for a GQA model, by name and shape in load order (no lm_head when tied; biases and
     * q/k norms when the config has them).
     */
    public static SequencedMap<String, int[]> tensorShapes(ModelConfig c)
    {
        int hidden = c.hiddenSize();
        int ffn = c.intermediateSize();
        SequencedMap<String, int[]> shapes = new LinkedHashMap<>();
        for (int l = 0; l < c.layers(); l++) {
            String p = "model.layers." + l + ".";
            shapes.put(p + "input_layernorm.weight", new int[] {hidden});
            shapes.put(p + "self_attn.q_proj.weight", new int[] {c.heads() * c.headDim(), hidden});
            shapes.put(p + "self_attn.k_proj.weight", new int[] {c.kvHeads() * c.headDim(), hidden});
            shapes.put(p + "self_attn.v_proj.weight", new int[] {c.kvHeads() * c.headDim(), hidden});
            shapes.put(p + "self_attn.o_proj.weight", new int[] {hidden, c.heads() * c.headDim()});
            if (c.attentionBias()) {
                shapes.put(p + "self_attn.q_proj.bias", new int[] {c.heads() * c.headDim()});
                shapes.put(p + "self_attn.k_proj.bias", new int[] {c.kvHeads() * c.headDim()});
                shapes.put(p + "self_attn.v_proj.bias", new int[] {c.kvHeads() * c.headDim()});
            }
            if (c.qkNorm()) {
                shapes.put(p + "self_attn.q_norm.weight", new int[] {c.headDim()});
                shapes.put(p + "self_attn.k_norm.weight", new int[] {c.headDim()});
            }
            shapes.put(p + "post_attention_layernorm.weight", new int[] {hidden});
            shapes.put(p + "mlp.gate_proj.weight", new int[] {ffn, hidden});
            shapes.put(p + "mlp.up_proj.weight", new int[] {ffn, hidden});
            shapes.put(p + "mlp.down_proj.weight", new int[] {hidden, ffn});
        }
        shapes.put("model.embed_tokens.weight", new int[] {c.vocabSize(), hidden});
        shapes.put("model.norm.weight", new int[] {hidden});
        if (!c.tieWordEmbeddings()) {
            shapes.put("lm_head.weight", new int[] {c.vocabSize(), hidden});
        }
        return shapes;
    }

    private static String configJson(ModelConfig c, HfArchitecture architecture)
    {
        String ropeScaling = switch (c.ropeScaling()) {
            case RopeScaling.None none -> "null";
            case RopeScaling.Llama3 l -> "{\"rope_type\": \"llama3\", \"factor\": %s, \"low_freq_factor\": %s, \"high_freq_factor\": %s, "
                    .formatted(l.factor(), l.lowFreqFactor(), l.highFreqFactor())
                    + "\"original_max_position_embeddings\": " + l.originalMaxPositions() + "}";
            case RopeScaling.Yarn y -> ("{\"rope_type\": \"yarn\", \"factor\": %s, \"original_max_position_embeddings\": %d, \"beta_fast\": %s, "
                    + "\"beta_slow\": %s, \"mscale\": %s, \"mscale_all_dim\": %s}").formatted(y.factor(), y.originalMaxPositions(),
                    y.betaFast(), y.betaSlow(), y.mscale(), y.mscaleAllDim());
            case RopeScaling.FrequencyDivisors f -> throw new IllegalArgumentException("config.json cannot express per-frequency RoPE "
                    + "divisors (GGUF's rope_freqs.weight); write a llama3 scaling instead");
        };
        return """
                {"architectures": ["%s"], "model_type": "%s", "hidden_act": "silu",
                 "vocab_size": %d, "hidden_size": %d, "num_hidden_layers": %d, "num_attention_heads": %d,
                 "num_key_value_heads": %d, "head_dim": %d, "intermediate_size": %d, "rope_theta": 500000.0, "rms_norm_eps": 1e-05,
                 "max_position_embeddings": %d, "tie_word_embeddings": %s, "attention_bias": %s, "rope_scaling": %s,
                 "bos_token_id": %d, "eos_token_id": %d, "torch_dtype": "float32"}
                """.formatted(architecture.hfName(), architecture.name().toLowerCase(Locale.ROOT), c.vocabSize(), c.hiddenSize(),
                c.layers(), c.heads(), c.kvHeads(), c.headDim(), c.intermediateSize(), c.maxContext(), c.tieWordEmbeddings(), c.attentionBias(),
                ropeScaling, BOS, EOS);
    }

    /** The byte-level tokenizer's {@code tokenizer.json} and {@code tokenizer_config.json}, written into {@code directory}. */
    static void writeByteTokenizer(Path directory)
            throws IOException
    {
        Files.writeString(directory.resolve("tokenizer.json"), tokenizerJson());
        Files.writeString(directory.resolve("tokenizer_config.json"),
                "{\"bos_token\": \"<|begin_of_text|>\", \"eos_token\": \"<|end_of_text|>\"}\n");
    }

    private static String tokenizerJson()
    {
        StringBuilder vocab = new StringBuilder();
        for (int b = 0; b < 256; b++) {
            vocab.append(b == 0 ? "" : ", ").append(quoted(String.valueOf(ByteLevel.charOf(b)))).append(": ").append(b);
        }
        for (int i = 0; i < MERGES.size(); i++) {
            vocab.append(", ").append(quoted(MERGES.get(i).replace(" ", ""))).append(": ").append(256 + i);
        }
        String merges = MERGES.stream().map(SeededCheckpoint::quoted).collect(Collectors.joining(", "));
        return """
                {"version": "1.0", "truncation": null, "padding": null,
                 "added_tokens": [
                  {"id": %1$d, "content": "<|begin_of_text|>", "single_word": false, "lstrip": false, "rstrip": false, "normalized": false, "special": true},
                  {"id": %2$d, "content": "<|end_of_text|>", "single_word": false, "lstrip": false, "rstrip": false, "normalized": false, "special": true}],
                 "normalizer": null,
                 "pre_tokenizer": {"type": "Sequence", "pretokenizers": [
                  {"type": "Split", "pattern": {"Regex": %3$s}, "behavior": "Isolated", "invert": false},
                  {"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": true, "use_regex": false}]},
                 "post_processor": {"type": "Sequence", "processors": [
                  {"type": "ByteLevel", "add_prefix_space": true, "trim_offsets": false, "use_regex": true},
                  {"type": "TemplateProcessing",
                   "single": [{"SpecialToken": {"id": "<|begin_of_text|>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}],
                   "pair": [],
                   "special_tokens": {"<|begin_of_text|>": {"id": "<|begin_of_text|>", "ids": [%1$d], "tokens": ["<|begin_of_text|>"]}}}]},
                 "decoder": {"type": "ByteLevel", "add_prefix_space": true, "trim_offsets": true, "use_regex": true},
                 "model": {"type": "BPE", "dropout": null, "unk_token": null, "ignore_merges": true, "byte_fallback": false,
                  "vocab": {%4$s},
                  "merges": [%5$s]}}
                """.formatted(BOS, EOS, quoted(BpeTokenizer.LLAMA3_SPLIT), vocab, merges);
    }

    /** A JSON string literal with every character escaped, so the byte-level characters need no care. */
    private static String quoted(String text)
    {
        StringBuilder out = new StringBuilder("\"");
        text.chars().forEach(c -> out.append(String.format("\\u%04x", c)));
        return out.append('"').toString();
    }
}
