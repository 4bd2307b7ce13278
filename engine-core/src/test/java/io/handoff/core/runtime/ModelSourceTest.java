package io.handoff.core.runtime;

import io.handoff.core.kv.PagedKvCache;
import io.handoff.core.model.ForwardBatch;
import io.handoff.core.model.ModelConfig;
import io.handoff.core.model.RopeScaling;
import io.handoff.core.model.SyntheticWeights;
import io.handoff.core.model.Transformer;
import io.handoff.core.model.WeightSource;
import io.handoff.core.model.gguf.GgufTensorType;
import io.handoff.core.model.gguf.GgufVocabulary;
import io.handoff.core.model.gguf.SeededLlamaGguf;
import io.handoff.core.model.hf.HfModelConfig.HfArchitecture;
import io.handoff.core.model.tokenizer.SentencePieceTokenizer;
import io.handoff.spi.attention.KvDtype;
import io.handoff.testkit.model.ReferenceAttention;
import io.handoff.testkit.model.SeededCheckpoint;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.stream.IntStream;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class ModelSourceTest
{
    @TempDir
    Path dir;

    @Test
    void aCheckpointDirectoryGivesItsShapeTokenizerAndWeights()
    {
        Path model = dir.resolve("tiny-llama");
        SeededCheckpoint.write(model, 7L, false);
        try (ModelSource source = ModelSource.open(model, 1024)) {
            ModelConfig config = source.config();
            assertThat(config.name()).isEqualTo("tiny-llama");
            assertThat(config.vocabSize()).isEqualTo(SeededCheckpoint.VOCAB_SIZE);
            assertThat(config.maxContext()).as("capped by handoff.model.max-context").isEqualTo(1024);
            assertThat(config.weightsIdentity()).hasSize(16);
            assertThat(source.tokenizer().encodePrompt("the thin"))
                    .as("<|begin_of_text|>, then Llama 3's split into 'the' (t, he) and ' thin' (' t', h, in)")
                    .containsExactly(SeededCheckpoint.BOS, 't', 257, 256, 'h', 259);
            assertThat(source.tokenizer().eosTokenIds()).containsExactly(SeededCheckpoint.EOS);
        }
        try (ModelSource source = ModelSource.open(model, 1 << 20)) {
            assertThat(source.config().maxContext()).as("capped by max_position_embeddings").isEqualTo(2048);
        }
    }

    @Test
    void aSlidingWindowBoundsTheContext()
            throws IOException
    {
        Path model = dir.resolve("windowed");
        SeededCheckpoint.write(model, 3L, false);
        Path config = model.resolve("config.json");
        Files.writeString(config, Files.readString(config).replace("\"rope_scaling\": null", "\"rope_scaling\": null, \"sliding_window\": 512"));
        try (ModelSource source = ModelSource.open(model, 4096)) {
            assertThat(source.config().maxContext()).isEqualTo(512);
        }
    }

    @Test
    void checkpointLogitsEqualTheSameSeededWeightsInMemoryWithOrWithoutTiedEmbeddings()
    {
        for (boolean tied : new boolean[] {false, true}) {
            Path model = dir.resolve("tied-" + tied);
            SeededCheckpoint.write(model, 11L, tied);
            try (ModelSource source = ModelSource.open(model, 2048)) {
                int[] prompt = source.tokenizer().encodePrompt("the theory in a thin tin");
                float[][] fromFile = logits(source.config(), source.weights(), prompt);
                WeightSource seeded = new SyntheticWeights(11L);
                float[][] fromSeed = logits(source.config(), seeded, prompt);
                assertThat(fromFile).as("tied " + tied).isDeepEqualTo(fromSeed);
                if (tied) {
                    float[] embedding = seeded.floats("model.embed_tokens.weight", SeededCheckpoint.VOCAB_SIZE, 64);
                    float[][] untied = logits(source.config().withWeightsSeed(11L), name -> name.equals("lm_head.weight") ? embedding : null,
                            prompt, seeded);
                    assertThat(fromFile).as("tied logits are those of an lm_head equal to the embedding").isDeepEqualTo(untied);
                }
            }
        }
    }

    @Test
    void qwen2Qwen3AndLlama3ScaledCheckpointsLoadTheirFeaturesAndGiveTheSeededLogits()
    {
        RopeScaling llama3 = new RopeScaling.Llama3(8f, 1f, 4f, 64);
        record Variant(String name, HfArchitecture architecture, RopeScaling scaling) {}
        for (Variant v : List.of(new Variant("qwen2", HfArchitecture.QWEN2, RopeScaling.NONE), new Variant("qwen3", HfArchitecture.QWEN3, RopeScaling.NONE),
                new Variant("llama31", HfArchitecture.LLAMA, llama3))) {
            Path model = dir.resolve(v.name());
            ModelConfig written = SeededCheckpoint.write(model, 13L, v.architecture() == HfArchitecture.QWEN2, v.architecture(), v.scaling());
            try (ModelSource source = ModelSource.open(model, 2048)) {
                ModelConfig config = source.config();
                assertThat(config.attentionBias()).as(v.name()).isEqualTo(v.architecture() == HfArchitecture.QWEN2);
                assertThat(config.qkNorm()).as(v.name()).isEqualTo(v.architecture() == HfArchitecture.QWEN3);
                assertThat(config.ropeScaling()).as(v.name()).isEqualTo(v.scaling());
                assertThat(config.withWeightsSeed(13L)).as(v.name()).isEqualTo(new ModelConfig(written.name(), written.architecture(),
                        written.vocabSize(), written.hiddenSize(), written.layers(), written.heads(), written.kvHeads(), written.headDim(), 0, 0, 0, 0, 0,
                        written.intermediateSize(), written.ropeTheta(), written.rmsEps(), written.maxContext(), 13L, written.tieWordEmbeddings(),
                        config.weightsIdentity(), written.attentionBias(), written.qkNorm(), written.ropeScaling()));
                int[] prompt = IntStream.range(0, 60).map(i -> (i * 37) % SeededCheckpoint.VOCAB_SIZE).toArray();
                float[][] fromFile = logits(config, source.weights(), prompt);
                assertThat(fromFile).as(v.name()).isDeepEqualTo(logits(config, new SyntheticWeights(13L), prompt));
                ModelConfig plain = SeededCheckpoint.config(v.name(), 13L, written.tieWordEmbeddings());
                assertThat(fromFile[59]).as(v.name() + ": the feature is not ignored").isNotEqualTo(logits(plain, new SyntheticWeights(13L), prompt)[59]);
            }
        }
    }

    @Test
    void twoCheckpointsOfTheSameShapeHaveDifferentCompatibilityHashes()
            throws IOException
    {
        SeededCheckpoint.write(dir.resolve("a"), 1L, false);
        SeededCheckpoint.write(dir.resolve("b"), 1L, false);
        Path config = dir.resolve("b").resolve("config.json");
        Files.writeString(config, Files.readString(config).replace("\"torch_dtype\": \"float32\"", "\"torch_dtype\": \"float32\", \"x\": 1"));
        try (ModelSource a = ModelSource.open(dir.resolve("a"), 2048); ModelSource b = ModelSource.open(dir.resolve("b"), 2048)) {
            assertThat(a.config().name()).isNotEqualTo(b.config().name());
            assertThat(a.config().withWeightsSeed(0).compatibilityHash().split("@")[1])
                    .isNotEqualTo(b.config().withWeightsSeed(0).compatibilityHash().split("@")[1]);
        }
    }

    @Test
    void aGgufWithASentencePieceVocabularyServesItWithItsBosAndEos()
    {
        // <unk> <s> </s>, the 256 byte tokens, then pieces scored by merge order
        List<String> tokens = new java.util.ArrayList<>(List.of("<unk>", "<s>", "</s>"));
        List<Integer> types = new java.util.ArrayList<>(List.of(2, 3, 3));
        for (int b = 0; b < 256; b++) {
            tokens.add(String.format("<0x%02X>", b));
            types.add(6);
        }
        for (String piece : List.of("\u2581", "h", "i", "hi", "\u2581hi")) {
            tokens.add(piece);
            types.add(1);
        }
        List<Float> scores = IntStream.range(0, tokens.size()).mapToObj(id -> types.get(id) == 1 ? (float) -id : 0f).toList();
        Path gguf = SeededLlamaGguf.write(dir.resolve("spm.gguf"), new GgufVocabulary("llama", "default", tokens, scores, types, List.of(), 1, 2, true),
                GgufTensorType.F32, 5L);
        try (ModelSource source = ModelSource.open(gguf, 1024)) {
            assertThat(source.tokenizer()).isInstanceOf(SentencePieceTokenizer.class);
            int spaceHi = tokens.indexOf("\u2581hi");
            assertThat(source.tokenizer().encodePrompt("hi hi")).containsExactly(1, spaceHi, spaceHi);
            assertThat(source.tokenizer().encodePrompt("hi\u00e9")).as("é as its two byte tokens")
                    .containsExactly(1, spaceHi, 3 + 0xC3, 3 + 0xA9);
            assertThat(source.tokenizer().eosTokenIds()).containsExactly(2);
            assertThat(source.tokenizer().decode(new int[] {1, spaceHi, 3 + 0xC3, 3 + 0xA9, 2})).isEqualTo(" hi\u00e9");
            assertThat(source.config().vocabSize()).isEqualTo(tokens.size());
        }
        List<String> twice = new java.util.ArrayList<>(tokens);
        twice.set(twice.size() - 1, "hi");
        Path duplicate = SeededLlamaGguf.write(dir.resolve("duplicate.gguf"), new GgufVocabulary("llama", "default", twice, scores, types, List.of(),
                1, 2, true), GgufTensorType.F32, 5L);
        assertThatThrownBy(() -> ModelSource.open(duplicate, 1024)).hasMessageStartingWith(duplicate + ": GGUF tokenizer: tokens ")
                .hasMessageContaining("are both 'hi'");
    }

    @Test
    void whatIsNotSupportedIsRefusedNamingThePath()
            throws IOException
    {
        Path gguf = Files.writeString(dir.resolve("model.gguf"), "GGUF");
        assertThatThrownBy(() -> ModelSource.open(gguf, 2048)).hasMessageContaining(gguf.toString()).hasMessageContaining("the file is truncated or not GGUF");
        Path qwen = dir.resolve("qwen");
        SeededCheckpoint.write(qwen, 1L, false);
        Path config = qwen.resolve("config.json");
        Files.writeString(config, Files.readString(config).replace("\"rope_scaling\": null",
                "\"rope_scaling\": {\"rope_type\": \"yarn\", \"factor\": 4.0, \"original_max_position_embeddings\": 512}"));
        assertThatThrownBy(() -> ModelSource.open(qwen, 2048)).hasMessageContaining(qwen.toString())
                .hasMessageContaining("rope scaling yarn (supported: llama3)");
        assertThatThrownBy(() -> ModelSource.open(dir.resolve("missing"), 2048)).hasMessageContaining("is not a directory");
    }

    private static float[][] logits(ModelConfig config, WeightSource weights, int[] prompt)
    {
        try (Transformer model = new Transformer(config, weights, 1); Arena arena = Arena.ofConfined()) {
            PagedKvCache kv = PagedKvCache.allocate(arena, config.layers(), 4, 16, KvDtype.F32,
                    config.kvKeyRowElements(), config.kvValueRowElements(), config.kvValuesInKeyRow());
            ReferenceAttention attention = new ReferenceAttention(config.attentionGeometry(), kv);
            ForwardBatch batch = ForwardBatch.builder().extend(prompt, 0, IntStream.range(0, prompt.length).toArray())
                    .build(attention::numKvSplits);
            return model.forwardAllPositions(batch, kv, attention, Transformer.LayerHook.NONE);
        }
    }

    /** An untied model whose lm_head comes from {@code override} and every other tensor from {@code rest}. */
    private static float[][] logits(ModelConfig tied, java.util.function.Function<String, float[]> override, int[] prompt, WeightSource rest)
    {
        ModelConfig untied = new ModelConfig(tied.name(), tied.architecture(), tied.vocabSize(), tied.hiddenSize(), tied.layers(), tied.heads(),
                tied.kvHeads(), tied.headDim(), 0, 0, 0, 0, 0, tied.intermediateSize(), tied.ropeTheta(), tied.rmsEps(), tied.maxContext(),
                tied.weightsSeed());
        WeightSource weights = new WeightSource()
        {
            @Override
            public float[] floats(String name, int... shape)
            {
                float[] values = override.apply(name);
                return values != null ? values : rest.floats(name, shape);
            }

            @Override
            public String description()
            {
                return "seeded, lm_head = embedding";
            }
        };
        return logits(untied, weights, prompt);
    }
}
