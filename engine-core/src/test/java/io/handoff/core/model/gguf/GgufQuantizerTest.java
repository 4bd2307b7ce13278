package io.handoff.core.model.gguf;

import io.handoff.core.model.BlockFormat;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.data.Offset.offset;

/** {@link GgufQuantizer}: llama.cpp's per-tensor recipe, values that read back within the type's step, metadata carried over. */
class GgufQuantizerTest
{
    private static final int LAYERS = 16;
    private static final int WIDTH = 256;

    @TempDir
    Path dir;

    /** A 16-layer file of narrow matrices: layer names and widths are what the recipe reads. */
    private Path source()
    {
        SplittableRandom random = new SplittableRandom(9);
        GgufWriter writer = new GgufWriter()
                .put(GgufArchitecture.KEY, GgufValueType.STRING, "llama")
                .put("general.file_type", GgufValueType.UINT32, 0L)
                .put("tokenizer.ggml.model", GgufValueType.STRING, "gpt2")
                .put("tokenizer.chat_template", GgufValueType.STRING, "{{ messages }}")
                .put("tokenizer.ggml.tokens", GgufValueType.ARRAY, new GgufWriter.Array(GgufValueType.STRING, List.of("a", "b")));
        writer.tensor("token_embd.weight", GgufTensorType.F32, GgufWriter.dims(8, WIDTH), gaussian(random, 8 * WIDTH));
        for (int l = 0; l < LAYERS; l++) {
            writer.tensor("blk." + l + ".attn_norm.weight", GgufTensorType.F32, GgufWriter.dims(WIDTH), gaussian(random, WIDTH));
            writer.tensor("blk." + l + ".attn_v.weight", GgufTensorType.F16, GgufWriter.dims(4, WIDTH), gaussian(random, 4 * WIDTH));
            writer.tensor("blk." + l + ".ffn_down.weight", GgufTensorType.F32, GgufWriter.dims(4, WIDTH), gaussian(random, 4 * WIDTH));
            writer.tensor("blk." + l + ".ffn_up.weight", GgufTensorType.F32, GgufWriter.dims(4, WIDTH), gaussian(random, 4 * WIDTH));
        }
        // rows of 96 are not whole super-blocks: llama.cpp's fallback
        writer.tensor("blk.0.attn_q.weight", GgufTensorType.F32, GgufWriter.dims(4, 96), gaussian(random, 4 * 96));
        writer.tensor("output.weight", GgufTensorType.F32, GgufWriter.dims(8, WIDTH), gaussian(random, 8 * WIDTH));
        return writer.write(dir.resolve("source.gguf"));
    }

    @Test
    void q4_k_mFollowsLlamaCppsRecipe()
    {
        try (GgufFile file = GgufFile.open(source())) {
            Map<String, GgufTensorType> plan = GgufQuantizer.plan(file, GgufQuantizer.Target.Q4_K_M);
            assertThat(plan.get("output.weight")).isEqualTo(GgufTensorType.Q6_K);
            assertThat(plan.get("token_embd.weight")).isEqualTo(GgufTensorType.Q4_K);
            assertThat(plan.get("blk.3.attn_norm.weight")).as("vectors stay as they are").isEqualTo(GgufTensorType.F32);
            assertThat(plan.get("blk.0.attn_q.weight")).as("96 columns: Q5_0 in place of Q4_K").isEqualTo(GgufTensorType.Q5_0);
            assertThat(plan.get("blk.5.ffn_up.weight")).isEqualTo(GgufTensorType.Q4_K);
            // use_more_bits for 16 layers: 0, 1 (first eighth), 14, 15 (last), and 4, 7, 10, 13 (every third from 2)
            List<Integer> more = new ArrayList<>();
            for (int l = 0; l < LAYERS; l++) {
                GgufTensorType down = plan.get("blk." + l + ".ffn_down.weight");
                assertThat(plan.get("blk." + l + ".attn_v.weight")).as("attn_v of layer %d", l).isEqualTo(down);
                if (down == GgufTensorType.Q6_K) {
                    more.add(l);
                }
                else {
                    assertThat(down).isEqualTo(GgufTensorType.Q4_K);
                }
            }
            assertThat(more).containsExactly(0, 1, 4, 7, 10, 13, 14, 15);

            Map<String, GgufTensorType> small = GgufQuantizer.plan(file, GgufQuantizer.Target.Q4_K_S);
            assertThat(small.get("blk.0.ffn_down.weight")).isEqualTo(GgufTensorType.Q5_K);
            assertThat(small.get("blk.2.ffn_down.weight")).isEqualTo(GgufTensorType.Q4_K);
            assertThat(small.get("blk.3.attn_v.weight")).isEqualTo(GgufTensorType.Q5_K);
            assertThat(small.get("blk.4.attn_v.weight")).isEqualTo(GgufTensorType.Q4_K);

            assertThat(GgufQuantizer.plan(file, GgufQuantizer.Target.Q8_0).get("output.weight")).isEqualTo(GgufTensorType.Q8_0);
            assertThat(GgufQuantizer.plan(file, GgufQuantizer.Target.Q4_0).get("output.weight")).isEqualTo(GgufTensorType.Q6_K);
        }
    }

    @Test
    void aQuantizedFileReadsBackWithinItsStepWithTheMetadataCarriedOver()
    {
        Path out = dir.resolve("q4_k_m.gguf");
        List<String> reported = new ArrayList<>();
        try (GgufFile file = GgufFile.open(source())) {
            GgufQuantizer.quantize(file, GgufQuantizer.Target.Q4_K_M, out, (index, count, name, type, bytes) -> reported.add(name));
            assertThat(reported).hasSize(file.tensors().size());
            try (GgufFile quantized = GgufFile.open(out)) {
                assertThat(quantized.metadata().integer("general.file_type")).isEqualTo(15);
                assertThat(quantized.metadata().string("tokenizer.chat_template")).isEqualTo("{{ messages }}");
                assertThat(quantized.metadata().optionalStrings("tokenizer.ggml.tokens")).contains(List.of("a", "b"));
                assertThat(quantized.tensor("output.weight").orElseThrow().type()).isEqualTo(GgufTensorType.Q6_K);
                for (GgufTensor original : file.tensors().values()) {
                    GgufTensor written = quantized.tensor(original.name()).orElseThrow();
                    assertThat(written.dims()).isEqualTo(original.dims());
                    float[] before = original.toFloats();
                    float[] after = written.toFloats();
                    float amax = 0;
                    for (float v : before) {
                        amax = Math.max(amax, Math.abs(v));
                    }
                    for (int i = 0; i < before.length; i++) {
                        // the coarsest step here, Q4_K's, is at most a fifteenth of a sub-block's range
                        assertThat((double) after[i]).as("%s value %d", original.name(), i).isCloseTo(before[i], offset(amax * 2 / 15.0 * 0.6));
                    }
                }
            }
        }
        assertThat(Files.exists(dir.resolve("q4_k_m.gguf.partial"))).isFalse();
    }

    @Test
    void aQuantizedSourceIsRefusedNamingTheTensor()
    {
        Path out = dir.resolve("twice.gguf");
        try (GgufFile file = GgufFile.open(source())) {
            GgufQuantizer.quantize(file, GgufQuantizer.Target.Q8_0, out, (index, count, name, type, bytes) -> {});
        }
        try (GgufFile quantized = GgufFile.open(out)) {
            assertThatThrownBy(() -> GgufQuantizer.plan(quantized, GgufQuantizer.Target.Q4_K_M)).isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("token_embd.weight is already Q8_0").hasMessageContaining("F32, F16 or BF16");
        }
        assertThatThrownBy(() -> GgufQuantizer.Target.parse("q3_k_xl")).hasMessageContaining("unknown quantization type 'q3_k_xl'")
                .hasMessageContaining("q4_k_m");
    }

    @Test
    void everyBlockTypeIsWrittenInGgmlsLayout()
    {
        for (BlockFormat format : BlockFormat.values()) {
            GgufTensorType type = format == BlockFormat.Q8_0 ? GgufTensorType.Q8_0 : GgufTensorType.valueOf(format.name());
            assertThat(type.blockBytes()).as("%s", format).isEqualTo(format.blockBytes());
            assertThat(type.blockElements()).as("%s", format).isEqualTo(format.blockElements());
        }
    }

    private static float[] gaussian(SplittableRandom random, int n)
    {
        float[] v = new float[n];
        for (int i = 0; i < n; i++) {
            v[i] = (float) (random.nextGaussian() * 0.1);
        }
        return v;
    }
}
