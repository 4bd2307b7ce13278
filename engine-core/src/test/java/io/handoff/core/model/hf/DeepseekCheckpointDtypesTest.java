package io.handoff.core.model.hf;

import io.handoff.core.kv.PagedKvCache;
import io.handoff.core.model.DeepseekConfig;
import io.handoff.core.model.ForwardBatch;
import io.handoff.core.model.ModelConfig;
import io.handoff.core.model.Transformer;
import io.handoff.core.runtime.ModelSource;
import io.handoff.spi.attention.KvDtype;
import io.handoff.testkit.model.ReferenceAttention;
import io.handoff.testkit.model.SafetensorsEncoder;
import io.handoff.testkit.model.SeededDeepseekCheckpoint;
import io.handoff.testkit.model.SeededDeepseekCheckpoint.Options;
import io.handoff.testkit.model.SeededDeepseekCheckpoint.Tensor;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

import java.lang.foreign.Arena;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.SequencedMap;
import java.util.stream.IntStream;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * DeepSeek checkpoints in the types they ship in (BF16, F16, and V3's FP8 with 128 x 128 block scales) run in those types
 * over the mapping, and their logits are bit-identical to those of the same checkpoint written with the values they stand
 * for in F32, whether a prompt runs as one extend (the products' two-row tiles) or a token at a time (the one-row products),
 * on one thread or three.
 */
class DeepseekCheckpointDtypesTest
{
    private static final int[] PROMPT = {256, 72, 101, 108, 108, 111, 44, 32, 77, 76, 65, 33, 10, 3, 200, 17, 99};

    @TempDir
    Path temp;

    @Test
    void anFp8V3CheckpointGivesTheLogitsOfItsF32Expansion()
    {
        assertFp8MatchesExpansion(Options.v3(41));
    }

    @Test
    void anFp8CheckpointWithAPlainQueryProjectionAndSoftmaxRoutingGivesTheLogitsOfItsF32Expansion()
    {
        assertFp8MatchesExpansion(Options.v2(42).withYarn(true));
    }

    private void assertFp8MatchesExpansion(Options options)
    {
        Path fp8 = temp.resolve("fp8");
        Path expansion = temp.resolve("f32");
        Fp8DeepseekCheckpoint.write(fp8, expansion, options);
        try (SafetensorsWeights weights = SafetensorsWeights.open(fp8)) {
            assertThat(weights.names()).contains("model.layers.1.mlp.experts.3.down_proj.weight_scale_inv",
                    "model.layers.0.self_attn.kv_b_proj.weight_scale_inv");
        }
        assertThat(weightTypes(fp8)).as("linear layers run in FP8 over the mapping, the embeddings in BF16")
                .startsWith("BF16 ").contains("F8_E4M3 ").doesNotContain("F32");
        float[][] expected = logits(expansion, 1, PROMPT.length);
        assertThat(logits(fp8, 1, PROMPT.length)).isDeepEqualTo(expected);
        assertThat(logits(fp8, 3, PROMPT.length)).isDeepEqualTo(expected);
        assertThat(logits(fp8, 3, 1)).isDeepEqualTo(logits(expansion, 3, 1));
        Path original = temp.resolve("original");
        SeededDeepseekCheckpoint.write(original, options);
        assertThat(logits(original, 1, PROMPT.length)).as("quantization changed the model").isNotEqualTo(expected);
    }

    @ParameterizedTest
    @EnumSource(value = TensorDtype.class, names = {"F16", "BF16"})
    void aHalfPrecisionCheckpointGivesTheLogitsOfItsF32Expansion(TensorDtype dtype)
    {
        Options options = Options.v3(43).withDtype(dtype);
        Path half = temp.resolve("half");
        DeepseekConfig config = SeededDeepseekCheckpoint.write(half, options);
        Path expansion = temp.resolve("f32");
        SeededDeepseekCheckpoint.write(expansion, options.withDtype(TensorDtype.F32));
        SequencedMap<String, Tensor> tensors = SeededDeepseekCheckpoint.tensors(config, options.seed());
        SequencedMap<String, int[]> shapes = new LinkedHashMap<>();
        tensors.forEach((name, t) -> shapes.put(name, t.shape()));
        SafetensorsWriter.writeBytes(expansion.resolve(SafetensorsWeights.SINGLE_FILE), SafetensorsEncoder.encode(shapes, (name, shape) -> {
            float[] values = tensors.get(name).values().clone();
            for (int i = 0; i < values.length; i++) {
                values[i] = SafetensorsEncoder.rounded(dtype, values[i]);
            }
            return values;
        }, TensorDtype.F32));

        assertThat(weightTypes(half)).isEqualTo(dtype + " 0 MiB");
        float[][] expected = logits(expansion, 1, PROMPT.length);
        assertThat(logits(half, 1, PROMPT.length)).isDeepEqualTo(expected);
        assertThat(logits(half, 3, PROMPT.length)).isDeepEqualTo(expected);
        assertThat(logits(half, 3, 1)).isDeepEqualTo(logits(expansion, 3, 1));
        Path original = temp.resolve("original");
        SeededDeepseekCheckpoint.write(original, options.withDtype(TensorDtype.F32));
        assertThat(logits(original, 1, PROMPT.length)).as("rounding changed the model").isNotEqualTo(expected);
    }

    /** The bytes of the model's matrices by their stored type, as the engine logs them. */
    private static String weightTypes(Path checkpoint)
    {
        try (ModelSource source = ModelSource.open(checkpoint, 4096); Transformer model = new Transformer(source.config(), source.weights(), 1)) {
            return model.weightsDescription();
        }
    }

    /** Every position's logits of {@link #PROMPT}, prefilled in chunks of {@code chunk} tokens into an F32 KV cache. */
    private static float[][] logits(Path checkpoint, int threads, int chunk)
    {
        try (ModelSource source = ModelSource.open(checkpoint, 4096);
                Transformer model = new Transformer(source.config(), source.weights(), threads);
                Arena arena = Arena.ofConfined()) {
            ModelConfig c = source.config();
            PagedKvCache kv = PagedKvCache.allocate(arena, c.layers(), 2, 16, KvDtype.F32, c.kvKeyRowElements(), c.kvValueRowElements(),
                    c.kvValuesInKeyRow());
            ReferenceAttention attention = new ReferenceAttention(c.attentionGeometry(), kv);
            int[] slots = IntStream.range(0, PROMPT.length).toArray();
            List<float[]> logits = new ArrayList<>();
            for (int start = 0; start < PROMPT.length; start += chunk) {
                int[] part = Arrays.copyOfRange(PROMPT, start, Math.min(PROMPT.length, start + chunk));
                ForwardBatch batch = ForwardBatch.builder().extend(part, start, slots).build(attention::numKvSplits);
                logits.addAll(List.of(model.forwardAllPositions(batch, kv, attention, Transformer.LayerHook.NONE)));
            }
            return logits.toArray(float[][]::new);
        }
    }
}
