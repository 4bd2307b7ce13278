package io.handoff.core.model.gguf;

import io.handoff.core.model.WeightMatrix;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

import java.nio.file.Path;
import java.util.SplittableRandom;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * The tensors of a {@code deepseek2} file that have no one-to-one Hugging Face name: a routed expert's matrix is a slice
 * of llama.cpp's stacked {@code ffn_*_exps}, and {@code kv_b_proj} is joined from the split {@code attn_k_b} /
 * {@code attn_v_b} when the file has no {@code attn_kv_b}. The file holds only the tensors under test; the shape is
 * {@link DeepseekGgufConfigTest#v3Metadata()}'s (4 heads, kv_lora_rank 64, nope 32, v 32, 16 experts of 64 over 256).
 */
class GgufDeepseekWeightsTest
{
    private static final int HEADS = 4;
    private static final int RANK = 64;
    private static final int NOPE = 32;
    private static final int V = 32;
    private static final int EXPERTS = 16;
    private static final int WIDTH = 64;
    private static final int HIDDEN = 256;

    @TempDir
    Path dir;

    @ParameterizedTest
    @EnumSource(value = GgufTensorType.class, names = {"F32", "F16", "Q8_0"})
    void aRoutedExpertIsItsSliceOfTheStackedTensorInTheFilesType(GgufTensorType type)
    {
        float[] stack = random(EXPERTS * WIDTH * HIDDEN, 1);
        GgufWriter writer = deepseek().tensor("blk.1.ffn_gate_exps.weight", type, new long[] {HIDDEN, WIDTH, EXPERTS}, stack);
        // the same values as one expert's own matrix: what the slice must equal row for row
        float[] expert = java.util.Arrays.copyOfRange(stack, 5 * WIDTH * HIDDEN, 6 * WIDTH * HIDDEN);
        writer.tensor("blk.1.ffn_gate_shexp.weight", type, new long[] {HIDDEN, WIDTH}, expert);
        try (GgufWeights weights = GgufWeights.open(writer.write(dir.resolve("experts.gguf")))) {
            WeightMatrix slice = weights.matrix("model.layers.1.mlp.experts.5.gate_proj.weight", WIDTH, HIDDEN);
            WeightMatrix whole = weights.matrix("model.layers.1.mlp.shared_experts.gate_proj.weight", WIDTH, HIDDEN);
            assertThat(slice.elementType()).isEqualTo(type.name());
            assertThat(slice.byteSize()).isEqualTo(whole.byteSize());
            float[] a = new float[HIDDEN];
            float[] b = new float[HIDDEN];
            for (int r = 0; r < WIDTH; r++) {
                slice.readRow(r, a, 0);
                whole.readRow(r, b, 0);
                assertThat(a).as("row %d", r).containsExactly(b);
            }
            assertThatThrownBy(() -> weights.matrix("model.layers.1.mlp.experts.16.gate_proj.weight", WIDTH, HIDDEN))
                    .hasMessageContaining("stacks 16, there is no [16]");
            assertThatThrownBy(() -> weights.matrix("model.layers.1.mlp.experts.0.gate_proj.weight", WIDTH, HIDDEN / 2))
                    .hasMessageContaining("'blk.1.ffn_gate_exps.weight' has shape [16, 64, 256], the model expects [16, 64, 128]");
            assertThatThrownBy(() -> weights.matrix("model.layers.2.mlp.experts.0.up_proj.weight", WIDTH, HIDDEN))
                    .hasMessageContaining("(GGUF 'blk.2.ffn_up_exps.weight' [0]) is not in the file");
        }
    }

    @Test
    void kvBProjIsJoinedFromTheSplitPairAsTheSingleTensorHoldsIt()
    {
        // kv_b_proj [heads * (nope + v), rank]: per head its key rows, then its value rows
        float[] kvB = random(HEADS * (NOPE + V) * RANK, 2);
        float[] kB = new float[HEADS * RANK * NOPE];
        float[] vB = new float[HEADS * V * RANK];
        for (int h = 0; h < HEADS; h++) {
            for (int i = 0; i < NOPE; i++) {
                for (int j = 0; j < RANK; j++) {
                    kB[(h * RANK + j) * NOPE + i] = kvB[(h * (NOPE + V) + i) * RANK + j];
                }
            }
            for (int i = 0; i < V; i++) {
                System.arraycopy(kvB, (h * (NOPE + V) + NOPE + i) * RANK, vB, (h * V + i) * RANK, RANK);
            }
        }
        GgufWriter writer = deepseek()
                .tensor("blk.0.attn_kv_b.weight", GgufTensorType.F32, new long[] {RANK, HEADS * (NOPE + V)}, kvB)
                .tensor("blk.1.attn_k_b.weight", GgufTensorType.F32, new long[] {NOPE, RANK, HEADS}, kB)
                .tensor("blk.1.attn_v_b.weight", GgufTensorType.F32, new long[] {RANK, V, HEADS}, vB)
                .tensor("blk.2.attn_k_b.weight", GgufTensorType.F32, new long[] {NOPE, RANK, HEADS}, kB)
                .tensor("blk.2.attn_v_b.weight", GgufTensorType.F32, new long[] {V, RANK, HEADS}, vB);
        Path path = writer.write(dir.resolve("kvb.gguf"));
        try (GgufWeights weights = GgufWeights.open(path)) {
            int rows = HEADS * (NOPE + V);
            assertThat(weights.floats("model.layers.0.self_attn.kv_b_proj.weight", rows, RANK)).containsExactly(kvB);
            assertThat(weights.floats("model.layers.1.self_attn.kv_b_proj.weight", rows, RANK)).containsExactly(kvB);
            assertThatThrownBy(() -> weights.floats("model.layers.2.self_attn.kv_b_proj.weight", rows, RANK))
                    .hasMessage(path + ": tensor 'blk.2.attn_v_b.weight' (for 'model.layers.2.self_attn.kv_b_proj.weight') has shape "
                            + "[4, 64, 32], the model expects [4, 32, 64]; the file's metadata does not match its tensors");
            assertThatThrownBy(() -> weights.floats("model.layers.3.self_attn.kv_b_proj.weight", rows, RANK))
                    .hasMessage(path + ": neither 'blk.3.attn_kv_b.weight' nor 'blk.3.attn_k_b.weight' (for "
                            + "'model.layers.3.self_attn.kv_b_proj.weight') is in the file; the file does not match the model's architecture");
        }
    }

    @Test
    void theFileReadsAsAnMlaModelWithItsMixtureOfExperts()
    {
        try (GgufWeights weights = GgufWeights.open(deepseek().write(dir.resolve("shape.gguf")))) {
            assertThat(weights.model().architecture()).isEqualTo(GgufArchitecture.DEEPSEEK2);
            assertThat(weights.model().config().moe().experts()).isEqualTo(EXPERTS);
            assertThat(weights.model().config().isMoeLayer(0)).isFalse();
            assertThat(weights.model().config().isMoeLayer(1)).isTrue();
            assertThat(weights.model().config().attentionGeometry().keyRowElements()).isEqualTo(RANK + 16);
        }
    }

    private static GgufWriter deepseek()
    {
        GgufWriter writer = new GgufWriter();
        DeepseekGgufConfigTest.v3Metadata().forEach((key, value) -> writer.put(key, value.type(), value.value()));
        return writer;
    }

    /** {@code n} distinct values in [-1, 1), a sequence per seed. */
    private static float[] random(int n, long seed)
    {
        double[] draws = new SplittableRandom(seed).doubles(n, -1, 1).toArray();
        float[] values = new float[n];
        for (int i = 0; i < n; i++) {
            values[i] = (float) draws[i];
        }
        return values;
    }
}
