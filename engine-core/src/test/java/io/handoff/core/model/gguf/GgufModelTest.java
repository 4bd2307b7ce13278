package io.handoff.core.model.gguf;

import io.handoff.core.model.Architecture;
import io.handoff.core.model.ModelConfig;
import io.handoff.core.model.RopeScaling;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.util.List;
import java.util.Optional;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class GgufModelTest
{
    private static final ModelConfig TINY_GQA = ModelConfig.byName("tiny-gqa");

    @TempDir
    Path dir;

    private static GgufWriter.Array strings(String... values)
    {
        return new GgufWriter.Array(GgufValueType.STRING, List.of(values));
    }

    @Test
    void theConfigIsTheFilesShapesWithSeedZero()
    {
        Path path = new GgufWriter().model(TINY_GQA, "llama").write(dir.resolve("m.gguf"));
        try (GgufFile file = GgufFile.open(path)) {
            GgufModel model = GgufModel.read(file);
            assertThat(model.architecture()).isEqualTo(GgufArchitecture.LLAMA);
            assertThat(model.config()).isEqualTo(TINY_GQA.withWeightsSeed(0));
            assertThat(model.tiedEmbeddings()).isTrue();
            assertThat(model.attentionBias()).isFalse();
            assertThat(model.qkNorm()).isFalse();
        }
    }

    @Test
    void unwrittenOptionalKeysTakeLlamaCppsDefaults()
    {
        Path path = new GgufWriter()
                .put(GgufArchitecture.KEY, GgufValueType.STRING, "qwen3")
                .put("qwen3.context_length", GgufValueType.UINT64, 2048L)
                .put("qwen3.embedding_length", GgufValueType.UINT32, 64L)
                .put("qwen3.block_count", GgufValueType.INT32, 2)
                .put("qwen3.feed_forward_length", GgufValueType.UINT32, 128L)
                .put("qwen3.attention.head_count", GgufValueType.UINT16, 4)
                .put("qwen3.attention.layer_norm_rms_epsilon", GgufValueType.FLOAT64, 1e-6)
                .put(GgufModel.TOKENS_KEY, GgufValueType.ARRAY, strings("a", "b", "c", "d", "e"))
                .rawTensor("blk.0.attn_q_norm.weight", 0, new long[] {16}, new byte[64], null)
                .rawTensor("blk.0.attn_q.bias", 0, new long[] {64}, new byte[256], null)
                .rawTensor("output.weight", 0, new long[] {64, 5}, new byte[64 * 5 * 4], null)
                .write(dir.resolve("q.gguf"));
        try (GgufFile file = GgufFile.open(path)) {
            GgufModel model = GgufModel.read(file);
            assertThat(model.config()).isEqualTo(new ModelConfig("q.gguf", Architecture.GQA, 5, 64, 2, 4, 4, 16, 0, 0, 0, 0, 0, 128,
                    10000f, 1e-6f, 2048, 0, false, "", true, true, RopeScaling.NONE));
            assertThat(model.qkNorm()).isTrue();
            assertThat(model.attentionBias()).isTrue();
            assertThat(model.tiedEmbeddings()).isFalse();
        }
    }

    @Test
    void partialRopeAMissingEpsilonAndAShapeModelConfigRefusesAreErrorsNamingTheFile()
    {
        Path partial = new GgufWriter().model(TINY_GQA, "llama").put("llama.rope.dimension_count", GgufValueType.UINT32, 16L)
                .write(dir.resolve("p.gguf"));
        assertRefusedByModel(partial, "llama.attention.value_length 32 and llama.rope.dimension_count 16 must equal the head dim 32");
        Path badHeads = new GgufWriter().model(TINY_GQA, "llama").put("llama.attention.head_count_kv", GgufValueType.UINT32, 3L)
                .write(dir.resolve("h.gguf"));
        assertRefusedByModel(badHeads, "model 'tiny-gqa': heads 8 must be a multiple of kvHeads 3");
        GgufWriter noEps = new GgufWriter().model(TINY_GQA, "llama");
        Path eps = noEps.put("llama.attention.layer_norm_rms_epsilon", GgufValueType.STRING, "x").write(dir.resolve("e.gguf"));
        assertRefusedByModel(eps, "metadata key 'llama.attention.layer_norm_rms_epsilon' is STRING, expected FLOAT32 or FLOAT64");
    }

    @Test
    void unrunnableRopeScalingAndNormsOfPermutedQkAreRefusedNamingWhat()
    {
        Path freqs = new GgufWriter().model(TINY_GQA, "llama").rawTensor("rope_freqs.weight", 0, new long[] {8}, new byte[32], null)
                .write(dir.resolve("f.gguf"));
        assertRefusedByModel(freqs, "rope_freqs.weight has shape [8]; it must hold one divisor per rotated pair, [16]");
        Path yarn = new GgufWriter().model(TINY_GQA, "llama").put("llama.rope.scaling.type", GgufValueType.STRING, "yarn")
                .write(dir.resolve("y.gguf"));
        assertRefusedByModel(yarn, "llama.rope.scaling.type is 'yarn', which the engine does not run");
        Path none = new GgufWriter().model(TINY_GQA, "llama").put("llama.rope.scaling.type", GgufValueType.STRING, "none")
                .write(dir.resolve("n.gguf"));
        try (GgufFile file = GgufFile.open(none)) {
            assertThat(GgufModel.read(file).config().ropeScaling()).isEqualTo(RopeScaling.NONE);
        }
        Path norms = new GgufWriter().model(TINY_GQA, "llama").rawTensor("blk.0.attn_q_norm.weight", 0, new long[] {32}, new byte[128], null)
                .write(dir.resolve("k.gguf"));
        assertRefusedByModel(norms, "a llama file with q/k norms");
        Path outputBias = new GgufWriter().model(TINY_GQA, "llama").rawTensor("blk.0.attn_output.bias", 0, new long[] {256}, new byte[1024], null)
                .write(dir.resolve("o.gguf"));
        assertRefusedByModel(outputBias, "the attention output projection has a bias (blk.0.attn_output.bias)");
    }

    private static void assertRefusedByModel(Path path, String message)
    {
        try (GgufFile file = GgufFile.open(path)) {
            assertThatThrownBy(() -> GgufModel.read(file)).isInstanceOf(IllegalArgumentException.class)
                    .hasMessageStartingWith(path + ": " + message);
        }
    }

    @Test
    void theTokenizerDataIsReadAsWritten()
    {
        Path path = new GgufWriter()
                .put("tokenizer.ggml.model", GgufValueType.STRING, "gpt2")
                .put("tokenizer.ggml.pre", GgufValueType.STRING, "llama-bpe")
                .put("tokenizer.ggml.tokens", GgufValueType.ARRAY, strings("h", "i", "hi", "<|end|>"))
                .put("tokenizer.ggml.merges", GgufValueType.ARRAY, strings("h i"))
                .put("tokenizer.ggml.token_type", GgufValueType.ARRAY, new GgufWriter.Array(GgufValueType.INT32, List.of(1, 1, 1, 3)))
                .put("tokenizer.ggml.bos_token_id", GgufValueType.UINT32, 2L)
                .put("tokenizer.ggml.eos_token_id", GgufValueType.UINT32, 3L)
                .put("tokenizer.ggml.add_bos_token", GgufValueType.BOOL, true)
                .put("tokenizer.chat_template", GgufValueType.STRING, "{{ messages }}")
                .write(dir.resolve("t.gguf"));
        try (GgufFile file = GgufFile.open(path)) {
            assertThat(GgufTokenizerData.read(file)).isEqualTo(new GgufTokenizerData("gpt2", "llama-bpe", List.of("h", "i", "hi", "<|end|>"),
                    List.of(), List.of("h i"), List.of(1, 1, 1, 3), 2, 3, true, false, false, Optional.of("{{ messages }}")));
        }
    }

    @Test
    void aSentencePieceTokenizersScoresAndFlagsAreReadAsWritten()
    {
        Path path = new GgufWriter()
                .put("tokenizer.ggml.model", GgufValueType.STRING, "llama")
                .put("tokenizer.ggml.tokens", GgufValueType.ARRAY, strings("<s>", "\u2581a", "a"))
                .put("tokenizer.ggml.scores", GgufValueType.ARRAY, new GgufWriter.Array(GgufValueType.FLOAT32, List.of(0f, -1.5f, -2f)))
                .put("tokenizer.ggml.add_eos_token", GgufValueType.BOOL, true)
                .put("tokenizer.ggml.add_space_prefix", GgufValueType.BOOL, false)
                .write(dir.resolve("s.gguf"));
        try (GgufFile file = GgufFile.open(path)) {
            GgufTokenizerData data = GgufTokenizerData.read(file);
            assertThat(data.scores()).containsExactly(0f, -1.5f, -2f);
            assertThat(data.addEos()).isTrue();
            assertThat(data.addSpacePrefix()).isFalse();
            assertThat(data.addBos()).as("llama's default").isTrue();
        }
        Path integers = new GgufWriter()
                .put("tokenizer.ggml.model", GgufValueType.STRING, "llama")
                .put("tokenizer.ggml.tokens", GgufValueType.ARRAY, strings("a", "b"))
                .put("tokenizer.ggml.scores", GgufValueType.ARRAY, new GgufWriter.Array(GgufValueType.INT32, List.of(3, -4)))
                .write(dir.resolve("i.gguf"));
        try (GgufFile file = GgufFile.open(integers)) {
            assertThat(GgufTokenizerData.read(file).scores()).as("integer scores, as llama.cpp reads them").containsExactly(3f, -4f);
        }
        Path tooFew = new GgufWriter()
                .put("tokenizer.ggml.model", GgufValueType.STRING, "llama")
                .put("tokenizer.ggml.tokens", GgufValueType.ARRAY, strings("a", "b"))
                .put("tokenizer.ggml.scores", GgufValueType.ARRAY, new GgufWriter.Array(GgufValueType.FLOAT32, List.of(1f)))
                .write(dir.resolve("short.gguf"));
        try (GgufFile file = GgufFile.open(tooFew)) {
            assertThatThrownBy(() -> GgufTokenizerData.read(file)).hasMessageContaining("tokenizer.ggml.scores has 1 entries for 2 tokens");
        }
    }

    @Test
    void unwrittenTokenizerKeysTakeTheirDefaults()
    {
        Path path = new GgufWriter()
                .put("tokenizer.ggml.model", GgufValueType.STRING, "llama")
                .put("tokenizer.ggml.tokens", GgufValueType.ARRAY, strings("<s>", "a"))
                .write(dir.resolve("t.gguf"));
        try (GgufFile file = GgufFile.open(path)) {
            assertThat(GgufTokenizerData.read(file)).isEqualTo(new GgufTokenizerData("llama", "default", List.of("<s>", "a"),
                    List.of(), List.of(), List.of(), -1, -1, true, false, true, Optional.empty()));
        }
    }

    @Test
    void anUnsupportedTokenizerOrAnOutOfRangeTokenIdIsRefused()
    {
        Path bert = new GgufWriter().put("tokenizer.ggml.model", GgufValueType.STRING, "bert")
                .put("tokenizer.ggml.tokens", GgufValueType.ARRAY, strings("a")).write(dir.resolve("b.gguf"));
        try (GgufFile file = GgufFile.open(bert)) {
            assertThatThrownBy(() -> GgufTokenizerData.read(file)).isInstanceOf(IllegalArgumentException.class)
                    .hasMessageStartingWith(bert + ": tokenizer.ggml.model is 'bert'; the engine reads gpt2 (BPE) and llama (SentencePiece)");
        }
        Path eos = new GgufWriter().put("tokenizer.ggml.model", GgufValueType.STRING, "gpt2")
                .put("tokenizer.ggml.tokens", GgufValueType.ARRAY, strings("a"))
                .put("tokenizer.ggml.eos_token_id", GgufValueType.UINT32, 7L).write(dir.resolve("e.gguf"));
        try (GgufFile file = GgufFile.open(eos)) {
            assertThatThrownBy(() -> GgufTokenizerData.read(file)).isInstanceOf(IllegalArgumentException.class)
                    .hasMessageStartingWith(eos + ": metadata key 'tokenizer.ggml.eos_token_id' is 7, outside 0 to 0");
        }
    }
}
