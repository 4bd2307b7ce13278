package io.handoff.core.model.gguf;

import io.handoff.core.kv.PagedKvCache;
import io.handoff.core.model.ByteTokenizer;
import io.handoff.core.model.ForwardBatch;
import io.handoff.core.model.ModelConfig;
import io.handoff.core.model.RopeScaling;
import io.handoff.core.model.SyntheticWeights;
import io.handoff.core.model.Transformer;
import io.handoff.core.model.WeightMatrix;
import io.handoff.core.model.WeightSource;
import io.handoff.spi.attention.KvDtype;
import io.handoff.testkit.model.ReferenceAttention;
import io.handoff.testkit.model.SeededCheckpoint;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;
import org.junit.jupiter.params.provider.ValueSource;

import java.lang.foreign.Arena;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.function.UnaryOperator;
import java.util.stream.IntStream;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.within;

class GgufWeightsTest
{
    private static final ModelConfig TINY_GQA = ModelConfig.byName("tiny-gqa");
    private static final Map<String, int[]> SHAPES = hfShapes(TINY_GQA);

    @TempDir
    Path dir;

    /** The Hugging Face tensors of a GQA model with their shapes, and llama.cpp's name for each, written out by hand. */
    static Map<String, int[]> hfShapes(ModelConfig c)
    {
        int hidden = c.hiddenSize();
        int q = c.heads() * c.headDim();
        int kv = c.kvHeads() * c.headDim();
        int ffn = c.intermediateSize();
        Map<String, int[]> shapes = new LinkedHashMap<>();
        shapes.put("model.embed_tokens.weight", new int[] {c.vocabSize(), hidden});
        for (int l = 0; l < c.layers(); l++) {
            String p = "model.layers." + l + ".";
            shapes.put(p + "input_layernorm.weight", new int[] {hidden});
            shapes.put(p + "self_attn.q_proj.weight", new int[] {q, hidden});
            shapes.put(p + "self_attn.k_proj.weight", new int[] {kv, hidden});
            shapes.put(p + "self_attn.v_proj.weight", new int[] {kv, hidden});
            shapes.put(p + "self_attn.o_proj.weight", new int[] {hidden, q});
            shapes.put(p + "post_attention_layernorm.weight", new int[] {hidden});
            shapes.put(p + "mlp.gate_proj.weight", new int[] {ffn, hidden});
            shapes.put(p + "mlp.up_proj.weight", new int[] {ffn, hidden});
            shapes.put(p + "mlp.down_proj.weight", new int[] {hidden, ffn});
        }
        shapes.put("model.norm.weight", new int[] {hidden});
        shapes.put("lm_head.weight", new int[] {c.vocabSize(), hidden});
        return shapes;
    }

    static String expectedGgufName(String hf)
    {
        return switch (hf) {
            case "model.embed_tokens.weight" -> "token_embd.weight";
            case "model.norm.weight" -> "output_norm.weight";
            case "lm_head.weight" -> "output.weight";
            default -> hf.replace("model.layers.", "blk.")
                    .replace("input_layernorm", "attn_norm").replace("post_attention_layernorm", "ffn_norm")
                    .replace("self_attn.q_proj", "attn_q").replace("self_attn.k_proj", "attn_k")
                    .replace("self_attn.v_proj", "attn_v").replace("self_attn.o_proj", "attn_output")
                    .replace("self_attn.q_norm", "attn_q_norm").replace("self_attn.k_norm", "attn_k_norm")
                    .replace("mlp.gate_proj", "ffn_gate").replace("mlp.up_proj", "ffn_up").replace("mlp.down_proj", "ffn_down");
        };
    }

    /** The seeded model as llama.cpp would write it: GGUF names, reversed dims, Llama's q/k rows permuted. */
    private Path writeSeeded(String arch, GgufTensorType type, boolean permute, UnaryOperator<Map<String, int[]>> select)
    {
        SyntheticWeights seeded = new SyntheticWeights(TINY_GQA.weightsSeed());
        GgufWriter writer = new GgufWriter().model(TINY_GQA, arch);
        select.apply(new LinkedHashMap<>(SHAPES)).forEach((name, shape) -> {
            float[] values = seeded.floats(name, shape);
            if (permute && name.endsWith("q_proj.weight")) {
                values = GgufWriter.llamaPermute(values, shape[0], shape[1], TINY_GQA.heads());
            }
            if (permute && name.endsWith("k_proj.weight")) {
                values = GgufWriter.llamaPermute(values, shape[0], shape[1], TINY_GQA.kvHeads());
            }
            writer.tensor(expectedGgufName(name), type, GgufWriter.dims(shape), values);
        });
        return writer.write(dir.resolve("model-" + type + ".gguf"));
    }

    @Test
    void aLlamaF32FileWithPermutedQkReturnsExactlyTheSeededFloatsOfEveryTensor()
    {
        SyntheticWeights seeded = new SyntheticWeights(TINY_GQA.weightsSeed());
        try (GgufWeights weights = GgufWeights.open(writeSeeded("llama", GgufTensorType.F32, true, UnaryOperator.identity()))) {
            assertThat(weights.names()).containsExactlyInAnyOrderElementsOf(SHAPES.keySet());
            SHAPES.forEach((name, shape) -> assertThat(weights.floats(name, shape)).as(name).isEqualTo(seeded.floats(name, shape)));
            assertThat(weights.model().tiedEmbeddings()).isFalse();
            assertThat(weights.description()).startsWith("GGUF llama model ");
        }
    }

    @Test
    void aTransformerBuiltFromTheFilesConfigAndWeightsGivesBitIdenticalLogitsToSeededWeights()
    {
        int[] prompt = new ByteTokenizer().encode("weights from a gguf file", true);
        float[][] fromSeed = logits(TINY_GQA, new SyntheticWeights(TINY_GQA.weightsSeed()), prompt);
        float[][] fromFile;
        try (GgufWeights weights = GgufWeights.open(writeSeeded("llama", GgufTensorType.F32, true, UnaryOperator.identity()))) {
            fromFile = logits(weights.model().config(), weights, prompt);
        }
        assertThat(fromFile).isDeepEqualTo(fromSeed);
        assertThat(fromFile[0]).isNotEqualTo(fromFile[1]);
    }

    /**
     * F16, BF16 and Q8_0 files run in their own type, over the mapping: the logits are bit-identical to those of the same
     * values expanded to F32 (each element converts exactly, every product keeps the F32 order), on one thread or three,
     * with the inputs of quantized matrices multiplied exactly (quantized-activations = off).
     * (How far Q8_0 is from the unquantized weights is a property of the quantization: WeightMatrixTest bounds it per
     * product. On this deliberately sharp-attention model it reaches whole logits: 1.1 for Q8_0, 0.5 for BF16, 0.07 for F16.)
     */
    @ParameterizedTest
    @EnumSource(value = GgufTensorType.class, names = {"F16", "BF16", "Q8_0"})
    void aTypedFileGivesTheLogitsOfItsF32Expansion(GgufTensorType type)
    {
        int[] prompt = new ByteTokenizer().encode("weights in their own type", true);
        try (GgufWeights weights = GgufWeights.open(writeSeeded("llama", type, true, UnaryOperator.identity()), false)) {
            ModelConfig config = weights.model().config();
            float[][] expanded = logits(config, f32Expansion(weights), prompt, 1);
            assertThat(logits(config, weights, prompt, 1)).isDeepEqualTo(expanded);
            assertThat(logits(config, weights, prompt, 3)).isDeepEqualTo(expanded);
        }
    }

    /** A quantized file rounds its matrices' inputs as llama.cpp does unless told not to; a file of F32 or F16 matrices never does. */
    @Test
    void roundsActivationsWhenItHasQuantizedMatricesAndMayDoSo()
    {
        Path q8 = writeSeeded("llama", GgufTensorType.Q8_0, true, UnaryOperator.identity());
        try (GgufWeights weights = GgufWeights.open(q8)) {
            assertThat(weights.roundsActivations()).isTrue();
        }
        try (GgufWeights weights = GgufWeights.open(q8, false)) {
            assertThat(weights.roundsActivations()).isFalse();
        }
        try (GgufWeights weights = GgufWeights.open(writeSeeded("llama", GgufTensorType.F16, true, UnaryOperator.identity()))) {
            assertThat(weights.roundsActivations()).isFalse();
        }
    }

    /** A matrix is a view of the mapping, not a copy: once the file is closed, reading it is refused rather than reading freed memory. */
    @Test
    void aMatrixIsAViewOfTheMappingThatFailsCleanlyOnceTheFileIsClosed()
    {
        int[] shape = SHAPES.get("model.layers.0.self_attn.q_proj.weight");
        float[] row = new float[shape[1]];
        WeightMatrix q;
        try (GgufWeights weights = GgufWeights.open(writeSeeded("llama", GgufTensorType.Q8_0, true, UnaryOperator.identity()))) {
            q = weights.matrix("model.layers.0.self_attn.q_proj.weight", shape[0], shape[1]);
            assertThat(q.elementType()).isEqualTo("Q8_0");
            assertThat(q.byteSize()).isEqualTo((long) shape[0] * shape[1] / 32 * 34);
            float[] expected = weights.floats("model.layers.0.self_attn.q_proj.weight", shape);
            for (int r = 0; r < shape[0]; r++) {
                q.readRow(r, row, 0);
                assertThat(row).as("row %d, back in Transformers' order", r).isEqualTo(Arrays.copyOfRange(expected, r * shape[1], (r + 1) * shape[1]));
            }
        }
        assertThatThrownBy(() -> q.readRow(0, row, 0)).isInstanceOf(IllegalStateException.class);
    }

    /** The same tensors dequantized to F32 arrays: the default {@link WeightSource#matrix} copies {@link WeightSource#floats}. */
    private static WeightSource f32Expansion(GgufWeights weights)
    {
        return new WeightSource()
        {
            @Override
            public float[] floats(String name, int... shape)
            {
                return weights.floats(name, shape);
            }

            @Override
            public String description()
            {
                return "F32 expansion of " + weights.description();
            }
        };
    }

    private static float[][] logits(ModelConfig config, WeightSource weights, int[] prompt)
    {
        return logits(config, weights, prompt, 1);
    }

    private static float[][] logits(ModelConfig config, WeightSource weights, int[] prompt, int threads)
    {
        try (Transformer model = new Transformer(config, weights, threads); Arena arena = Arena.ofConfined()) {
            PagedKvCache kv = PagedKvCache.allocate(arena, config.layers(), 4, 16, KvDtype.F32,
                    config.kvKeyRowElements(), config.kvValueRowElements(), config.kvValuesInKeyRow());
            ReferenceAttention attention = new ReferenceAttention(config.attentionGeometry(), kv);
            int[] slots = IntStream.range(0, prompt.length).toArray();
            ForwardBatch batch = ForwardBatch.builder().extend(prompt, 0, slots).build(attention::numKvSplits);
            return model.forwardAllPositions(batch, kv, attention, Transformer.LayerHook.NONE);
        }
    }

    /**
     * Qwen2's biases and Qwen3's q/k norms come through a GGUF file to the transformer: logits bit-identical to the seeded
     * weights of the same config. Llama with biases has its q/k biases permuted like the rows they add to.
     */
    @ParameterizedTest
    @ValueSource(strings = {"qwen2", "qwen3", "llama"})
    void biasesAndQkNormsFromAFileGiveTheSeededLogits(String arch)
    {
        ModelConfig c = TINY_GQA;
        boolean norms = arch.equals("qwen3");
        ModelConfig variant = new ModelConfig(c.name(), c.architecture(), c.vocabSize(), c.hiddenSize(), c.layers(), c.heads(), c.kvHeads(),
                c.headDim(), 0, 0, 0, 0, 0, c.intermediateSize(), c.ropeTheta(), c.rmsEps(), c.maxContext(), c.weightsSeed(), false, "", !norms,
                norms, RopeScaling.NONE);
        SyntheticWeights seeded = new SyntheticWeights(c.weightsSeed());
        GgufWriter writer = new GgufWriter().model(c, arch);
        boolean permute = arch.equals("llama");
        SeededCheckpoint.tensorShapes(variant).forEach((name, shape) -> {
            float[] values = seeded.floats(name, shape);
            int rows = shape[0];
            int cols = shape.length == 2 ? shape[1] : 1;
            if (permute && (name.endsWith("q_proj.weight") || name.endsWith("q_proj.bias"))) {
                values = GgufWriter.llamaPermute(values, rows, cols, c.heads());
            }
            if (permute && (name.endsWith("k_proj.weight") || name.endsWith("k_proj.bias"))) {
                values = GgufWriter.llamaPermute(values, rows, cols, c.kvHeads());
            }
            writer.tensor(expectedGgufName(name), GgufTensorType.F32, GgufWriter.dims(shape), values);
        });
        int[] prompt = new ByteTokenizer().encode("biases and norms from a gguf file", true);
        float[][] fromFile;
        try (GgufWeights weights = GgufWeights.open(writer.write(dir.resolve(arch + "-variant.gguf")))) {
            assertThat(weights.model().config().attentionBias()).isEqualTo(!norms);
            assertThat(weights.model().config().qkNorm()).isEqualTo(norms);
            fromFile = logits(weights.model().config(), weights, prompt);
        }
        assertThat(fromFile).isDeepEqualTo(logits(variant, seeded, prompt));
        assertThat(fromFile[prompt.length - 1]).as("the feature is not ignored").isNotEqualTo(logits(c, seeded, prompt)[prompt.length - 1]);
    }

    /** llama.cpp writes Llama 3.1's llama3 scaling as rope_freqs.weight: run, it gives the logits of the same scaling configured. */
    @Test
    void ropeFreqsWeightRunsAsLlama3Scaling()
    {
        ModelConfig c = TINY_GQA;
        RopeScaling.Llama3 llama3 = new RopeScaling.Llama3(8f, 1f, 4f, 64);
        float[] divisors = new float[c.headDim() / 2];
        for (int i = 0; i < divisors.length; i++) {
            double inv = 1.0 / Math.pow(c.ropeTheta(), 2.0 * i / c.headDim());
            divisors[i] = (float) (inv / llama3.remap(inv));
        }
        Path path = writeSeeded("llama", GgufTensorType.F32, true, UnaryOperator.identity());
        Path scaled = dir.resolve("scaled.gguf");
        GgufWriter writer = new GgufWriter().model(c, "llama").tensor("rope_freqs.weight", GgufTensorType.F32, new long[] {divisors.length}, divisors);
        SyntheticWeights seeded = new SyntheticWeights(c.weightsSeed());
        SHAPES.forEach((name, shape) -> {
            float[] values = seeded.floats(name, shape);
            if (name.endsWith("q_proj.weight")) {
                values = GgufWriter.llamaPermute(values, shape[0], shape[1], c.heads());
            }
            if (name.endsWith("k_proj.weight")) {
                values = GgufWriter.llamaPermute(values, shape[0], shape[1], c.kvHeads());
            }
            writer.tensor(expectedGgufName(name), GgufTensorType.F32, GgufWriter.dims(shape), values);
        });
        writer.write(scaled);
        int[] prompt = IntStream.range(0, 60).map(i -> (i * 31) % 256).toArray();
        ModelConfig configured = new ModelConfig(c.name(), c.architecture(), c.vocabSize(), c.hiddenSize(), c.layers(), c.heads(), c.kvHeads(),
                c.headDim(), 0, 0, 0, 0, 0, c.intermediateSize(), c.ropeTheta(), c.rmsEps(), c.maxContext(), c.weightsSeed(), false, "", false,
                false, llama3);
        float[][] expected = logits(configured, seeded, prompt);
        float[][] plain = logits(c, seeded, prompt);
        try (GgufWeights weights = GgufWeights.open(scaled); GgufWeights unscaled = GgufWeights.open(path)) {
            assertThat(unscaled.model().config().ropeScaling()).isEqualTo(RopeScaling.NONE);
            ModelConfig config = weights.model().config();
            assertThat(config.ropeScaling()).isInstanceOf(RopeScaling.FrequencyDivisors.class);
            float[][] fromFile = logits(config, weights, prompt);
            for (int v = 0; v < c.vocabSize(); v++) {
                assertThat((double) fromFile[59][v]).as("token %s", v).isCloseTo(expected[59][v], within(1e-3));
            }
            assertThat(fromFile[59]).as("the divisors are not ignored").isNotEqualTo(plain[59]);
        }
    }

    @Test
    void aQwen2FileIsReadUnpermuted()
    {
        SyntheticWeights seeded = new SyntheticWeights(TINY_GQA.weightsSeed());
        try (GgufWeights weights = GgufWeights.open(writeSeeded("qwen2", GgufTensorType.F32, false, UnaryOperator.identity()))) {
            SHAPES.forEach((name, shape) -> assertThat(weights.floats(name, shape)).as(name).isEqualTo(seeded.floats(name, shape)));
        }
    }

    @ParameterizedTest
    @EnumSource(value = GgufTensorType.class, names = {"F16", "BF16"})
    void halfPrecisionFilesReturnExactlyTheRoundedSeededFloats(GgufTensorType type)
    {
        SyntheticWeights seeded = new SyntheticWeights(TINY_GQA.weightsSeed());
        try (GgufWeights weights = GgufWeights.open(writeSeeded("llama", type, true, UnaryOperator.identity()))) {
            SHAPES.forEach((name, shape) -> {
                float[] expected = seeded.floats(name, shape);
                for (int i = 0; i < expected.length; i++) {
                    expected[i] = type == GgufTensorType.F16 ? GgufWriter.f16Rounded(expected[i]) : GgufWriter.bf16Rounded(expected[i]);
                }
                assertThat(weights.floats(name, shape)).as(name).isEqualTo(expected);
            });
        }
    }

    /**
     * Q8_0 stores each block of 32 as {@code q = round(x / d)} with {@code d} the f16-rounded amax / 127,
     * so every value comes back within {@code d / 2} of the original (the clamp at 127 errs by at most
     * 127 * (d's rounding), well inside that); the bound carries a relative 1e-6 for the float arithmetic.
     */
    @Test
    void aQ8FileReturnsEveryValueWithinHalfItsBlockScale()
    {
        SyntheticWeights seeded = new SyntheticWeights(TINY_GQA.weightsSeed());
        try (GgufWeights weights = GgufWeights.open(writeSeeded("llama", GgufTensorType.Q8_0, true, UnaryOperator.identity()))) {
            SHAPES.forEach((name, shape) -> {
                float[] original = seeded.floats(name, shape);
                float[] read = weights.floats(name, shape);
                assertThat(read).hasSameSizeAs(original);
                for (int block = 0; block < original.length / 32; block++) {
                    float amax = 0;
                    for (int j = 0; j < 32; j++) {
                        amax = Math.max(amax, Math.abs(original[block * 32 + j]));
                    }
                    float d = GgufWriter.f16Rounded(amax / 127);
                    for (int j = 0; j < 32; j++) {
                        int i = block * 32 + j;
                        assertThat(Math.abs(original[i] - read[i])).as(name + "[" + i + "]").isLessThanOrEqualTo(d / 2 * (1 + 1e-6f));
                    }
                }
            });
        }
    }

    @Test
    void aHandWrittenQ8BlockDequantizesExactly()
    {
        ByteBuffer block = ByteBuffer.allocate(34).order(ByteOrder.LITTLE_ENDIAN);
        block.putShort((short) 0x3800); // f16 0.5
        float[] expected = new float[32];
        for (int j = 0; j < 32; j++) {
            int q = j == 0 ? -127 : j == 31 ? 127 : j - 16;
            block.put((byte) q);
            expected[j] = 0.5f * q;
        }
        Path path = new GgufWriter().rawTensor("q", GgufTensorType.Q8_0.id(), new long[] {32}, block.array(), null)
                .write(dir.resolve("q8.gguf"));
        try (GgufFile file = GgufFile.open(path)) {
            float[] values = file.tensor("q").orElseThrow().toFloats();
            assertThat(values).containsExactly(expected);
            assertThat(values[0]).isEqualTo(-63.5f);
            assertThat(values[17]).isEqualTo(0.5f);
        }
    }

    @Test
    void withoutAnOutputTensorTheLmHeadIsTheEmbedding()
    {
        SyntheticWeights seeded = new SyntheticWeights(TINY_GQA.weightsSeed());
        Path path = writeSeeded("llama", GgufTensorType.F32, true, shapes -> {
            shapes.remove("lm_head.weight");
            return shapes;
        });
        try (GgufWeights weights = GgufWeights.open(path)) {
            assertThat(weights.model().tiedEmbeddings()).isTrue();
            assertThat(weights.names()).contains("lm_head.weight");
            int[] shape = SHAPES.get("lm_head.weight");
            assertThat(weights.floats("lm_head.weight", shape)).isEqualTo(seeded.floats("model.embed_tokens.weight", shape));
        }
    }

    @Test
    void aMissingTensorAWrongShapeAndAnUnmappedNameAreRefusedNamingTheFileAndTensor()
    {
        Path path = writeSeeded("llama", GgufTensorType.F32, true, shapes -> {
            shapes.remove("model.layers.1.mlp.up_proj.weight");
            return shapes;
        });
        try (GgufWeights weights = GgufWeights.open(path)) {
            assertThatThrownBy(() -> weights.floats("model.layers.1.mlp.up_proj.weight", 512, 256))
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessageStartingWith(path + ": tensor 'model.layers.1.mlp.up_proj.weight' (GGUF 'blk.1.ffn_up.weight') is not in the file");
            assertThatThrownBy(() -> weights.floats("model.layers.0.mlp.up_proj.weight", 256, 512))
                    .hasMessageStartingWith(path + ": tensor 'blk.0.ffn_up.weight' (for 'model.layers.0.mlp.up_proj.weight') has shape "
                            + "[512, 256] (GGUF dims [256, 512]), the model expects [256, 512]");
            assertThatThrownBy(() -> weights.floats("model.layers.0.self_attn.rotary_emb.inv_freq", 1, 1))
                    .hasMessageStartingWith(path + ": tensor 'model.layers.0.self_attn.rotary_emb.inv_freq' has no GGUF counterpart");
        }
    }

    @Test
    void anUnknownArchitectureIsRefusedListingTheSupportedOnes()
    {
        Path path = new GgufWriter().model(TINY_GQA, "gpt2").write(dir.resolve("gpt2.gguf"));
        assertThatThrownBy(() -> GgufWeights.open(path)).isInstanceOf(IllegalArgumentException.class)
                .hasMessage(path + ": general.architecture is 'gpt2', which the engine does not run; supported: llama, qwen2, qwen3, deepseek2");
    }

    @Test
    void unpermutingUndoesLlamaCppsRowOrder()
    {
        // one head of 4 rows: HF [r0 r1 | r2 r3] was written interleaved as [r0 r2 r1 r3]
        float[] gguf = {0, 0, 2, 2, 1, 1, 3, 3};
        assertThat(LlamaQkPermutation.unpermute(gguf, 4, 2, 1)).containsExactly(0, 0, 1, 1, 2, 2, 3, 3);
        for (int[] c : new int[][] {{8, 3, 1}, {8, 3, 2}, {8, 3, 4}, {64, 5, 8}, {64, 1, 2}}) {
            float[] hf = new float[c[0] * c[1]];
            for (int i = 0; i < hf.length; i++) {
                hf[i] = i;
            }
            float[] permuted = GgufWriter.llamaPermute(hf, c[0], c[1], c[2]);
            // a head of two rows has halves of one row: interleaving them changes nothing
            if (c[0] / c[2] == 2) {
                assertThat(permuted).as("rows %d heads %d", c[0], c[2]).isEqualTo(hf);
            }
            else {
                assertThat(permuted).as("rows %d heads %d", c[0], c[2]).isNotEqualTo(hf);
            }
            assertThat(LlamaQkPermutation.unpermute(permuted, c[0], c[1], c[2])).as("rows %d heads %d", c[0], c[2]).isEqualTo(hf);
        }
        assertThatThrownBy(() -> LlamaQkPermutation.unpermute(new float[6], 3, 2, 1)).isInstanceOf(IllegalArgumentException.class);
    }

    @Test
    void tensorNamesMapBothWays()
    {
        SHAPES.keySet().forEach(hf -> {
            assertThat(GgufTensorNames.toGguf(hf)).as(hf).contains(expectedGgufName(hf));
            assertThat(GgufTensorNames.toHf(expectedGgufName(hf))).as(hf).contains(hf);
        });
        assertThat(GgufTensorNames.toGguf("model.layers.3.self_attn.q_proj.bias")).contains("blk.3.attn_q.bias");
        assertThat(GgufTensorNames.toGguf("model.layers.12.self_attn.k_norm.weight")).contains("blk.12.attn_k_norm.weight");
        assertThat(GgufTensorNames.toHf("rope_freqs.weight")).isEmpty();
        assertThat(GgufTensorNames.toGguf("model.layers.01.mlp.up_proj.weight")).isEmpty();
    }
}
