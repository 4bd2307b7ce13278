package io.handoff.core.model.gguf;

import io.handoff.core.model.DeepseekConfig;
import io.handoff.core.model.RopeScaling;
import io.handoff.testkit.model.SeededDeepseekCheckpoint;
import io.handoff.testkit.model.SeededDeepseekCheckpoint.Options;
import io.handoff.testkit.model.SeededDeepseekCheckpoint.Tensor;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.SequencedMap;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

class SeededDeepseekGgufTest
{
    @TempDir
    Path temp;

    /** A vocabulary of {@code size} single-character tokens, BOS 0 and EOS 1, as a byte-level one is written. */
    private static GgufVocabulary vocabulary(int size)
    {
        List<String> tokens = new ArrayList<>();
        List<Integer> types = new ArrayList<>();
        for (int i = 0; i < size; i++) {
            tokens.add(Character.toString(0x100 + i));
            types.add(1);
        }
        return new GgufVocabulary("gpt2", "default", tokens, List.of(), types, List.of(), 0, 1, true);
    }

    @Test
    void theSplitFileReadsAsTheCheckpointsConfigWithKbTransposedPerHeadAndVbAsStored()
    {
        Options options = Options.v3(4).withYarn(true);
        DeepseekConfig config = SeededDeepseekCheckpoint.config(options);
        SequencedMap<String, Tensor> tensors = SeededDeepseekCheckpoint.tensors(config, 4);
        Path file = SeededDeepseekGguf.write(temp.resolve("v3.gguf"), config, tensors, vocabulary(config.vocabSize()),
                SeededDeepseekGguf.KvLayout.SPLIT, GgufTensorType.F32);

        try (GgufFile gguf = GgufFile.open(file)) {
            DeepseekConfig read = DeepseekGgufConfig.read(gguf.metadata(), false);
            assertThat(read).usingRecursiveComparison().ignoringFields("ropeScaling").isEqualTo(config);
            // GGUF keeps 0.1 * mscale_all_dim in an F32, so mscale comes back to within its rounding
            RopeScaling.Yarn yarn = (RopeScaling.Yarn) read.ropeScaling();
            RopeScaling.Yarn written = (RopeScaling.Yarn) config.ropeScaling();
            assertThat(yarn.factor()).isEqualTo(written.factor());
            assertThat(yarn.originalMaxPositions()).isEqualTo(written.originalMaxPositions());
            assertThat(yarn.mscaleAllDim()).isCloseTo(written.mscaleAllDim(), within(1e-6f));
            assertThat(read.softmaxScale()).isCloseTo(config.softmaxScale(), within(1e-6));
            int heads = config.heads();
            int nope = config.qkNopeHeadDim();
            int v = config.vHeadDim();
            int rank = config.kvLoraRank();
            float[] kvB = tensors.get("model.layers.1.self_attn.kv_b_proj.weight").values();
            GgufTensor kB = gguf.tensor("blk.1.attn_k_b.weight").orElseThrow();
            GgufTensor vB = gguf.tensor("blk.1.attn_v_b.weight").orElseThrow();
            assertThat(kB.dims()).containsExactly(nope, rank, heads);
            assertThat(vB.dims()).containsExactly(rank, v, heads);
            float[] k = kB.toFloats();
            float[] values = vB.toFloats();
            int h = 3;
            int i = 5;
            int j = 7;
            assertThat(k[(h * rank + j) * nope + i]).isEqualTo(kvB[(h * (nope + v) + i) * rank + j]);
            assertThat(values[(h * v + i) * rank + j]).isEqualTo(kvB[(h * (nope + v) + nope + i) * rank + j]);
            GgufTensor up = gguf.tensor("blk.2.ffn_up_exps.weight").orElseThrow();
            assertThat(up.dims()).containsExactly(config.hiddenSize(), config.moe().intermediateSize(), config.moe().experts());
            float[] stacked = up.toFloats();
            float[] expert6 = tensors.get("model.layers.2.mlp.experts.6.up_proj.weight").values();
            assertThat(java.util.Arrays.copyOfRange(stacked, 6 * expert6.length, 7 * expert6.length)).containsExactly(expert6);
            assertThat(gguf.tensor("blk.2.exp_probs_b.bias").orElseThrow().toFloats())
                    .containsExactly(tensors.get("model.layers.2.mlp.gate.e_score_correction_bias").values());
            assertThat(gguf.tensor("blk.0.ffn_gate.weight")).isPresent();
            assertThat(gguf.tensor("blk.0.ffn_gate_inp.weight")).isEmpty();
        }
    }

    @Test
    void theLegacyFileReadsAsTheSameConfigFromThePlainWidthsAndKeepsKvBWhole()
    {
        Options options = Options.v2(5).withFirstDenseLayers(0);
        DeepseekConfig config = SeededDeepseekCheckpoint.config(options);
        SequencedMap<String, Tensor> tensors = SeededDeepseekCheckpoint.tensors(config, 5);
        Path file = SeededDeepseekGguf.write(temp.resolve("v2.gguf"), config, tensors, vocabulary(config.vocabSize()),
                SeededDeepseekGguf.KvLayout.LEGACY, GgufTensorType.Q8_0);

        try (GgufFile gguf = GgufFile.open(file)) {
            assertThat(DeepseekGgufConfig.read(gguf.metadata(), false)).isEqualTo(config);
            assertThat(gguf.tensor("blk.0.attn_kv_b.weight").orElseThrow().type()).isEqualTo(GgufTensorType.Q8_0);
            assertThat(gguf.tensor("blk.0.attn_k_b.weight")).isEmpty();
            assertThat(gguf.tensor("blk.0.ffn_gate_inp.weight").orElseThrow().type()).isEqualTo(GgufTensorType.F32);
            assertThat(gguf.tensor("blk.0.attn_q.weight").orElseThrow().type()).isEqualTo(GgufTensorType.Q8_0);
        }
    }

    @Test
    void aPaddedVocabularyAddsUnusedPadTokensUpToTheModelsSize()
    {
        GgufVocabulary padded = vocabulary(10).padded(13);

        assertThat(padded.tokens()).hasSize(13).endsWith("[PAD10]", "[PAD11]", "[PAD12]");
        assertThat(padded.types()).endsWith(5, 5, 5);
        assertThat(padded.bos()).isZero();
    }
}
