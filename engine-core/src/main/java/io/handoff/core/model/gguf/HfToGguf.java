package io.handoff.core.model.gguf;

import io.handoff.core.model.hf.SafetensorsWeights;
import io.handoff.core.model.hf.HfModelConfig;
import io.handoff.core.model.hf.DeepseekHfConfig;
import io.handoff.core.json.JsonFile;
import io.handoff.core.model.WeightMatrix;
import io.handoff.core.model.tokenizer.TokenizerJson;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Writes a Hugging Face checkpoint of a Llama-style decoder (Llama, Mistral, Qwen2, Qwen3) as an F32 GGUF file laid out as
 * llama.cpp's converter lays one out: its hyperparameters under the architecture's keys, the byte-level BPE tokenizer
 * ({@code tokenizer.ggml.*}, the pre-tokenizer named by its split), the chat template, and the tensors under llama.cpp's
 * names, a Llama's (and Mistral's) query and key rows in llama.cpp's rotary order. What {@link GgufQuantizer}
 * quantizes.
 */
public final class HfToGguf
{
    private static final int MAX_TOKENIZER_BYTES = 128 * 1024 * 1024;

    private HfToGguf() {}

    public static void convert(Path directory, Path out)
            throws IOException
    {
        Map<String, Object> json = JsonFile.readObject(directory.resolve(HfModelConfig.FILE), HfModelConfig.MAX_CONFIG_BYTES);
        if (DeepseekHfConfig.isDeepseek(json)) {
            throw new IllegalArgumentException(directory + ": converting DeepSeek checkpoints is not supported; convert it with llama.cpp's "
                    + "convert_hf_to_gguf.py, then quantize the GGUF file");
        }
        HfModelConfig config = HfModelConfig.parse(json, directory.resolve(HfModelConfig.FILE).toString());
        if (!config.ropeScaling().isEmpty()) {
            throw new IllegalArgumentException(directory + ": rope_scaling " + config.ropeScaling() + " is not converted yet; convert it with "
                    + "llama.cpp's convert_hf_to_gguf.py, then quantize the GGUF file");
        }
        String arch = switch (config.architecture()) {
            case LLAMA, MISTRAL -> "llama";
            case QWEN2 -> "qwen2";
            case QWEN3 -> "qwen3";
        };
        boolean permuteQk = arch.equals("llama");
        Map<String, GgufValue> metadata = new LinkedHashMap<>();
        metadata.put(GgufArchitecture.KEY, string(arch));
        Path name = directory.toAbsolutePath().normalize().getFileName();
        metadata.put("general.name", string(json.get("_name_or_path") instanceof String n && !n.isBlank() ? n : name == null ? "model" : name.toString()));
        metadata.put("general.file_type", u32(0));
        metadata.put(arch + ".context_length", u32(config.maxPositionEmbeddings()));
        metadata.put(arch + ".embedding_length", u32(config.hiddenSize()));
        metadata.put(arch + ".block_count", u32(config.layers()));
        metadata.put(arch + ".feed_forward_length", u32(config.intermediateSize()));
        metadata.put(arch + ".attention.head_count", u32(config.heads()));
        metadata.put(arch + ".attention.head_count_kv", u32(config.kvHeads()));
        metadata.put(arch + ".attention.key_length", u32(config.headDim()));
        metadata.put(arch + ".attention.value_length", u32(config.headDim()));
        metadata.put(arch + ".rope.dimension_count", u32(config.headDim()));
        metadata.put(arch + ".rope.freq_base", new GgufValue(GgufValueType.FLOAT32, (float) config.ropeTheta()));
        metadata.put(arch + ".attention.layer_norm_rms_epsilon", new GgufValue(GgufValueType.FLOAT32, (float) config.rmsNormEps()));
        metadata.put(arch + ".vocab_size", u32(config.vocabSize()));
        tokenizer(directory, json, config.vocabSize(), metadata);

        try (SafetensorsWeights weights = SafetensorsWeights.open(directory, json)) {
            List<GgufOutput.Tensor> tensors = new ArrayList<>();
            int q = config.heads() * config.headDim();
            int kv = config.kvHeads() * config.headDim();
            int hidden = config.hiddenSize();
            matrix(tensors, weights, "model.embed_tokens.weight", config.vocabSize(), hidden, 0);
            for (int l = 0; l < config.layers(); l++) {
                String p = "model.layers." + l + ".";
                vector(tensors, weights, p + "input_layernorm.weight", hidden, 0);
                matrix(tensors, weights, p + "self_attn.q_proj.weight", q, hidden, permuteQk ? config.heads() : 0);
                matrix(tensors, weights, p + "self_attn.k_proj.weight", kv, hidden, permuteQk ? config.kvHeads() : 0);
                matrix(tensors, weights, p + "self_attn.v_proj.weight", kv, hidden, 0);
                if (config.attentionBias()) {
                    vector(tensors, weights, p + "self_attn.q_proj.bias", q, permuteQk ? config.heads() : 0);
                    vector(tensors, weights, p + "self_attn.k_proj.bias", kv, permuteQk ? config.kvHeads() : 0);
                    vector(tensors, weights, p + "self_attn.v_proj.bias", kv, 0);
                }
                if (config.qkNorm()) {
                    vector(tensors, weights, p + "self_attn.q_norm.weight", config.headDim(), 0);
                    vector(tensors, weights, p + "self_attn.k_norm.weight", config.headDim(), 0);
                }
                matrix(tensors, weights, p + "self_attn.o_proj.weight", hidden, q, 0);
                vector(tensors, weights, p + "post_attention_layernorm.weight", hidden, 0);
                matrix(tensors, weights, p + "mlp.gate_proj.weight", config.intermediateSize(), hidden, 0);
                matrix(tensors, weights, p + "mlp.up_proj.weight", config.intermediateSize(), hidden, 0);
                matrix(tensors, weights, p + "mlp.down_proj.weight", hidden, config.intermediateSize(), 0);
            }
            vector(tensors, weights, "model.norm.weight", hidden, 0);
            if (!config.tieWordEmbeddings()) {
                matrix(tensors, weights, "lm_head.weight", config.vocabSize(), hidden, 0);
            }
            GgufOutput.write(out, metadata, tensors);
        }
    }

    /** A matrix as F32 under its GGUF name, with {@code heads > 0} its rows in llama.cpp's rotary order (pairs interleaved per head). */
    private static void matrix(List<GgufOutput.Tensor> tensors, SafetensorsWeights weights, String hfName, int rows, int cols, int heads)
    {
        WeightMatrix matrix = weights.matrix(hfName, rows, cols);
        String ggufName = GgufTensorNames.toGguf(hfName).orElseThrow();
        tensors.add(new GgufOutput.Tensor(ggufName, GgufTensorType.F32, new long[] {cols, rows}, 4L * rows * cols, out -> {
            float[] row = new float[cols];
            ByteBuffer bytes = ByteBuffer.allocate(4 * cols).order(ByteOrder.LITTLE_ENDIAN);
            for (int r = 0; r < rows; r++) {
                matrix.readRow(heads > 0 ? hfRow(r, rows, heads) : r, row, 0);
                bytes.clear();
                bytes.asFloatBuffer().put(row);
                out.write(bytes.array());
            }
        }));
    }

    private static void vector(List<GgufOutput.Tensor> tensors, SafetensorsWeights weights, String hfName, int n, int heads)
    {
        float[] values = weights.floats(hfName, n);
        String ggufName = GgufTensorNames.toGguf(hfName).orElseThrow();
        tensors.add(new GgufOutput.Tensor(ggufName, GgufTensorType.F32, new long[] {n}, 4L * n, out -> {
            ByteBuffer bytes = ByteBuffer.allocate(4 * n).order(ByteOrder.LITTLE_ENDIAN);
            for (int r = 0; r < n; r++) {
                bytes.putFloat(values[heads > 0 ? hfRow(r, n, heads) : r]);
            }
            out.write(bytes.array());
        }));
    }

    /**
     * The Hugging Face row that llama.cpp's converter puts at GGUF row {@code r}: within each head of {@code rows / heads} rows,
     * GGUF interleaves the halves (row {@code 2i} is HF's {@code i}, row {@code 2i + 1} is HF's {@code i + half}).
     */
    static int hfRow(int r, int rows, int heads)
    {
        int headDim = rows / heads;
        int head = r / headDim;
        int within = r % headDim;
        int half = headDim / 2;
        return head * headDim + (within % 2 == 0 ? within / 2 : half + within / 2);
    }

    /** The byte-level BPE tokenizer as llama.cpp's converter writes it. */
    private static void tokenizer(Path directory, Map<String, Object> config, int vocabSize, Map<String, GgufValue> metadata)
    {
        Map<String, Object> json = JsonFile.readObject(directory.resolve(TokenizerJson.FILE), MAX_TOKENIZER_BYTES);
        Path configFile = directory.resolve(TokenizerJson.CONFIG_FILE);
        Map<String, Object> tokenizerConfig = Files.isRegularFile(configFile) ? JsonFile.readObject(configFile, MAX_TOKENIZER_BYTES) : Map.of();
        HfVocabulary vocabulary = HfVocabulary.read(json, tokenizerConfig, config.get("bos_token_id"), directory.resolve(TokenizerJson.FILE).toString(), vocabSize);
        metadata.put("tokenizer.ggml.model", string("gpt2"));
        metadata.put("tokenizer.ggml.pre", string(vocabulary.pre()));
        metadata.put("tokenizer.ggml.tokens", array(GgufValueType.STRING, vocabulary.tokens().stream().map(HfToGguf::string).toList()));
        metadata.put("tokenizer.ggml.token_type", array(GgufValueType.INT32, vocabulary.types().stream()
                .map(t -> new GgufValue(GgufValueType.INT32, t)).toList()));
        metadata.put("tokenizer.ggml.merges", array(GgufValueType.STRING, vocabulary.merges().stream().map(HfToGguf::string).toList()));
        int bos = vocabulary.id(config.get("bos_token_id"), tokenizerConfig.get("bos_token"));
        int eos = vocabulary.id(config.get("eos_token_id"), tokenizerConfig.get("eos_token"));
        if (bos >= 0) {
            metadata.put("tokenizer.ggml.bos_token_id", u32(bos));
        }
        if (eos >= 0) {
            metadata.put("tokenizer.ggml.eos_token_id", u32(eos));
        }
        metadata.put("tokenizer.ggml.add_bos_token", new GgufValue(GgufValueType.BOOL, vocabulary.addBos()));
        if (tokenizerConfig.get("chat_template") instanceof String template) {
            metadata.put("tokenizer.chat_template", string(template));
        }
    }

    private static GgufValue string(String s)
    {
        return new GgufValue(GgufValueType.STRING, s);
    }

    private static GgufValue u32(long v)
    {
        return new GgufValue(GgufValueType.UINT32, v);
    }

    private static GgufValue array(GgufValueType type, List<GgufValue> values)
    {
        return new GgufValue(GgufValueType.ARRAY, new GgufValue.GgufArray(type, values));
    }
}
