package io.handoff.core.model.hf;

import io.handoff.core.kv.PagedKvCache;
import io.handoff.core.model.ByteTokenizer;
import io.handoff.core.model.ForwardBatch;
import io.handoff.core.model.ModelConfig;
import io.handoff.core.model.SyntheticWeights;
import io.handoff.core.model.Transformer;
import io.handoff.core.model.WeightSource;
import io.handoff.spi.attention.KvDtype;
import io.handoff.testkit.model.ReferenceAttention;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

import java.lang.foreign.Arena;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.IntStream;

import static io.handoff.core.model.hf.SafetensorsWriter.gqaTensorShapes;
import static io.handoff.core.model.hf.SafetensorsWriter.tensors;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class SafetensorsWeightsTest
{
    private static final ModelConfig TINY_GQA = ModelConfig.byName("tiny-gqa");
    private static final Map<String, int[]> SHAPES = gqaTensorShapes(TINY_GQA);

    @TempDir
    Path dir;

    private static List<SafetensorsWriter.Tensor> seededTensors()
    {
        return tensors(SHAPES, new SyntheticWeights(TINY_GQA.weightsSeed()));
    }

    @Test
    void anF32SingleFileReturnsExactlyTheSeededFloatsOfEveryTensor()
    {
        SafetensorsWriter.write(dir.resolve(SafetensorsWeights.SINGLE_FILE), seededTensors(), TensorDtype.F32);
        SyntheticWeights seeded = new SyntheticWeights(TINY_GQA.weightsSeed());

        try (SafetensorsWeights weights = SafetensorsWeights.open(dir)) {
            assertThat(weights.names()).containsExactlyInAnyOrderElementsOf(SHAPES.keySet());
            SHAPES.forEach((name, shape) -> assertThat(weights.floats(name, shape)).as(name).isEqualTo(seeded.floats(name, shape)));
            assertThat(weights.description()).isEqualTo("safetensors checkpoint " + dir + " (1 file)");
        }
    }

    @Test
    void anF32ShardedCheckpointReturnsExactlyTheSeededFloatsOfEveryTensor()
    {
        SafetensorsWriter.writeSharded(dir, seededTensors(), TensorDtype.F32, 3);
        SyntheticWeights seeded = new SyntheticWeights(TINY_GQA.weightsSeed());

        try (SafetensorsWeights weights = SafetensorsWeights.open(dir)) {
            SHAPES.forEach((name, shape) -> assertThat(weights.floats(name, shape)).as(name).isEqualTo(seeded.floats(name, shape)));
            assertThat(weights.description()).isEqualTo("safetensors checkpoint " + dir + " (3 shards)");
        }
    }

    @Test
    void aTransformerBuiltFromAnF32CheckpointGivesBitIdenticalLogitsToSeededWeights()
    {
        SafetensorsWriter.writeSharded(dir, seededTensors(), TensorDtype.F32, 2);
        int[] prompt = new ByteTokenizer().encode("weights from a file", true);

        float[][] fromSeed = logits(new SyntheticWeights(TINY_GQA.weightsSeed()), prompt);
        float[][] fromFile;
        try (SafetensorsWeights weights = SafetensorsWeights.open(dir)) {
            fromFile = logits(weights, prompt);
        }

        assertThat(fromFile).isDeepEqualTo(fromSeed);
        assertThat(fromFile[0]).isNotEqualTo(fromFile[1]);
    }

    /**
     * An F16 or BF16 checkpoint runs in its own type over the mapping, and its logits are bit-identical to those of its values
     * expanded to F32 (the conversion is exact and every product keeps the F32 order), on one thread or three.
     */
    @ParameterizedTest
    @EnumSource(value = TensorDtype.class, names = {"F16", "BF16"})
    void aHalfPrecisionCheckpointGivesTheLogitsOfItsF32Expansion(TensorDtype dtype)
    {
        SafetensorsWriter.writeSharded(dir, seededTensors(), dtype, 2);
        int[] prompt = new ByteTokenizer().encode("sixteen bits per weight", true);
        try (SafetensorsWeights weights = SafetensorsWeights.open(dir)) {
            WeightSource expansion = new WeightSource()
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
            float[][] expanded = logits(expansion, prompt, 1);
            assertThat(logits(weights, prompt, 1)).isDeepEqualTo(expanded);
            assertThat(logits(weights, prompt, 3)).isDeepEqualTo(expanded);
            assertThat(expanded).as("rounding changed the model").isNotEqualTo(logits(new SyntheticWeights(TINY_GQA.weightsSeed()), prompt, 1));
        }
    }

    private static float[][] logits(WeightSource weights, int[] prompt)
    {
        return logits(weights, prompt, 1);
    }

    private static float[][] logits(WeightSource weights, int[] prompt, int threads)
    {
        try (Transformer model = new Transformer(TINY_GQA, weights, threads); Arena arena = Arena.ofConfined()) {
            PagedKvCache kv = PagedKvCache.allocate(arena, TINY_GQA.layers(), 4, 16, KvDtype.F32,
                    TINY_GQA.kvKeyRowElements(), TINY_GQA.kvValueRowElements(), TINY_GQA.kvValuesInKeyRow());
            ReferenceAttention attention = new ReferenceAttention(TINY_GQA.attentionGeometry(), kv);
            int[] slots = IntStream.range(0, prompt.length).toArray();
            ForwardBatch batch = ForwardBatch.builder().extend(prompt, 0, slots).build(attention::numKvSplits);
            return model.forwardAllPositions(batch, kv, attention, Transformer.LayerHook.NONE);
        }
    }

    @ParameterizedTest
    @EnumSource(value = TensorDtype.class, names = {"F16", "BF16"})
    void halfPrecisionCheckpointsReadBackTheRoundedValuesExactly(TensorDtype dtype)
    {
        List<SafetensorsWriter.Tensor> tensors = seededTensors();
        SafetensorsWriter.writeSharded(dir, tensors, dtype, 2);

        try (SafetensorsWeights weights = SafetensorsWeights.open(dir)) {
            for (SafetensorsWriter.Tensor t : tensors) {
                float[] expected = t.values().clone();
                for (int i = 0; i < expected.length; i++) {
                    expected[i] = dtype == TensorDtype.F16 ? SafetensorsWriter.f16Rounded(expected[i]) : SafetensorsWriter.bf16Rounded(expected[i]);
                }
                assertThat(weights.floats(t.name(), t.shape())).as(t.name()).isEqualTo(expected);
            }
            // rounding really happened: a half-precision file is not an F32 file in disguise
            SafetensorsWriter.Tensor q = tensors.get(1);
            assertThat(weights.floats(q.name(), q.shape())).isNotEqualTo(q.values());
        }
    }

    @Test
    void bf16RoundingIsToNearestEven()
    {
        assertThat(SafetensorsWriter.bf16Rounded(1f + 0x1p-8f)).isEqualTo(1f);
        assertThat(SafetensorsWriter.bf16Rounded(1f + 0x3p-8f)).isEqualTo(1f + 0x1p-6f);
        assertThat(SafetensorsWriter.bf16Rounded(1f + 0x1p-8f + 0x1p-20f)).isEqualTo(1f + 0x1p-7f);
    }

    @Test
    void aMissingTensorIsRefusedNamingTheTensorAndTheDirectory()
    {
        SafetensorsWriter.write(dir.resolve(SafetensorsWeights.SINGLE_FILE), seededTensors().subList(0, 3), TensorDtype.F32);

        try (SafetensorsWeights weights = SafetensorsWeights.open(dir)) {
            assertThatThrownBy(() -> new Transformer(TINY_GQA, weights, 1))
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessage("tensor 'model.layers.0.self_attn.v_proj.weight' is not in " + dir
                            + " (3 tensors); the checkpoint does not match the model's architecture or config.json");
        }
    }

    @Test
    void aTensorOfAnotherShapeIsRefusedNamingTheFileAndBothShapes()
    {
        SafetensorsWriter.write(dir.resolve(SafetensorsWeights.SINGLE_FILE),
                List.of(new SafetensorsWriter.Tensor("model.norm.weight", new int[] {2, 128}, new float[256])), TensorDtype.BF16);

        try (SafetensorsWeights weights = SafetensorsWeights.open(dir)) {
            assertThatThrownBy(() -> weights.floats("model.norm.weight", 256))
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessage("tensor 'model.norm.weight' in " + dir.resolve("model.safetensors")
                            + " has shape [2, 128], the model expects [256]; the checkpoint does not match config.json");
        }
    }

    @Test
    void aShardNameThatLeavesTheDirectoryIsRefused()
    {
        Path model = dir.resolve("model");
        model.toFile().mkdir();
        // the file exists, so the refusal is the name's and not a missing file's
        SafetensorsWriter.write(dir.resolve("outside.safetensors"), seededTensors().subList(0, 1), TensorDtype.F32);
        SafetensorsWriter.writeIndex(model, Map.of(seededTensors().getFirst().name(), "../outside.safetensors"));

        assertThatThrownBy(() -> SafetensorsWeights.open(model))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage(model.resolve(SafetensorsWeights.INDEX_FILE) + ": tensor 'model.layers.0.input_layernorm.weight' names shard"
                        + " ../outside.safetensors; a shard must be a plain file name inside the model directory (no '/', '\\' or '..')");
    }

    @Test
    void shardNamesMustBePlainFileNames()
    {
        assertThat(SafetensorsWeights.isPlainFileName("model-00001-of-00002.safetensors")).isTrue();
        for (String bad : List.of("", ".", "..", "../x", "a/b", "a\\b", "/abs", "C:x", "x\0y")) {
            assertThat(SafetensorsWeights.isPlainFileName(bad)).as(bad).isFalse();
        }
    }

    @Test
    void anIndexNamingATensorItsShardLacksIsRefused()
    {
        SafetensorsWriter.write(dir.resolve("shard.safetensors"), seededTensors().subList(0, 1), TensorDtype.F32);
        Map<String, String> weightMap = new LinkedHashMap<>();
        weightMap.put(seededTensors().getFirst().name(), "shard.safetensors");
        weightMap.put("lm_head.weight", "shard.safetensors");
        SafetensorsWriter.writeIndex(dir, weightMap);

        assertThatThrownBy(() -> SafetensorsWeights.open(dir))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage(dir.resolve(SafetensorsWeights.INDEX_FILE) + " puts tensor 'lm_head.weight' in shard.safetensors, but that shard"
                        + " does not hold it; the download is incomplete or mixed");
    }

    @Test
    void aBadShardIsRefusedNamingTheShard()
    {
        SafetensorsWriter.writeBytes(dir.resolve("shard.safetensors"), new byte[] {0});
        SafetensorsWriter.writeIndex(dir, Map.of("lm_head.weight", "shard.safetensors"));

        assertThatThrownBy(() -> SafetensorsWeights.open(dir))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageStartingWith(dir.resolve("shard.safetensors") + ": 1 bytes is too short for a safetensors file");
    }

    @Test
    void aDirectoryWithoutSafetensorsWeightsIsRefused()
    {
        assertThatThrownBy(() -> SafetensorsWeights.open(dir))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage(dir + " holds neither model.safetensors nor model.safetensors.index.json;"
                        + " download the checkpoint's safetensors weights (.bin and .pth checkpoints are not read)");
    }

    @Test
    void readingAfterCloseIsRefused()
    {
        SafetensorsWriter.write(dir.resolve(SafetensorsWeights.SINGLE_FILE), seededTensors().subList(0, 1), TensorDtype.F32);
        SafetensorsWeights weights = SafetensorsWeights.open(dir);
        weights.close();

        assertThatThrownBy(() -> weights.floats("model.layers.0.input_layernorm.weight", 256))
                .isInstanceOf(IllegalStateException.class)
                .hasMessage("safetensors checkpoint " + dir + " (1 file) is closed; its mappings are released");
    }
}
