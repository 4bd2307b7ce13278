package io.handoff.core.model;

import io.handoff.spi.attention.AttentionGeometry;
import io.handoff.spi.attention.KvLayout;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class ModelConfigTest
{
    @Test
    void presetsAreFoundByName()
    {
        assertThat(ModelConfig.byName("tiny-mla").architecture()).isEqualTo(Architecture.MLA);
        assertThat(ModelConfig.byName("tiny-gqa").architecture()).isEqualTo(Architecture.GQA);
        assertThat(ModelConfig.byName("tiny-mla").vocabSize()).isEqualTo(ByteTokenizer.VOCAB_SIZE);
    }

    @Test
    void unknownNameIsRejectedWithTheKnownNames()
    {
        assertThatThrownBy(() -> ModelConfig.byName("llama-70b"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("unknown model 'llama-70b'; known models: tiny-gqa, tiny-mla");
    }

    @Test
    void biasesQkNormsAndRopeScalingArePartOfTheCompatibilityHash()
    {
        ModelConfig plain = ModelConfig.byName("tiny-gqa");
        assertThat(gqa(false, false, RopeScaling.NONE)).isEqualTo(plain);
        assertThat(java.util.stream.Stream.of(plain, gqa(true, false, RopeScaling.NONE), gqa(false, true, RopeScaling.NONE),
                        gqa(false, false, new RopeScaling.Llama3(8f, 1f, 4f, 64)), gqa(false, false, new RopeScaling.Llama3(8f, 1f, 4f, 128)))
                .map(ModelConfig::compatibilityHash).distinct()).hasSize(5);
        assertThat(gqa(true, true, RopeScaling.NONE).withWeightsSeed(1).attentionBias()).isTrue();
    }

    @Test
    void gqaFeaturesAreRefusedForMlaAndABadLlama3ScalingNamesItsFields()
    {
        ModelConfig m = ModelConfig.byName("tiny-mla");
        assertThatThrownBy(() -> new ModelConfig(m.name(), m.architecture(), m.vocabSize(), m.hiddenSize(), m.layers(), m.heads(), m.kvHeads(),
                m.headDim(), m.qLoraRank(), m.kvLoraRank(), m.qkNopeHeadDim(), m.qkRopeHeadDim(), m.vHeadDim(), m.intermediateSize(), m.ropeTheta(),
                m.rmsEps(), m.maxContext(), m.weightsSeed(), false, "", true, false, RopeScaling.NONE))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("MLA runs none of them");
        assertThatThrownBy(() -> new RopeScaling.Llama3(8f, 4f, 1f, 8192))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("low_freq_factor 4.0, high_freq_factor 1.0");
    }

    @Test
    void aMixtureOfExpertsIsPartOfTheHashAndItsDenseLayersMustFitTheModel()
    {
        ModelConfig m = ModelConfig.byName("tiny-mla");
        MoeConfig moe = new MoeConfig(8, 2, 1, 64, MoeConfig.Scoring.SOFTMAX, false, 1, 1, MoeConfig.GroupScoring.MAX, false, 1f);
        ModelConfig withMoe = mla(m, moe, 1);
        assertThat(withMoe.isMoeLayer(0)).isFalse();
        assertThat(withMoe.isMoeLayer(1)).isTrue();
        assertThat(m.isMoeLayer(1)).isFalse();
        assertThat(java.util.stream.Stream.of(m, withMoe, mla(m, moe, 2), mla(m, new MoeConfig(8, 3, 1, 64, MoeConfig.Scoring.SOFTMAX,
                false, 1, 1, MoeConfig.GroupScoring.MAX, false, 1f), 1)).map(ModelConfig::compatibilityHash).distinct()).hasSize(4);
        assertThat(withMoe.withWeightsSeed(9).moe()).isEqualTo(moe);
        assertThat(withMoe.withServing(100, "w").moe()).isEqualTo(moe);
        assertThat(withMoe.withServing(100, "w").maxContext()).isEqualTo(100);
        assertThatThrownBy(() -> mla(m, moe, 5)).hasMessageContaining("firstDenseLayers 5 must lie from 0 to the 4 layers");
        assertThatThrownBy(() -> mla(m, null, 1)).hasMessageContaining("be 0 without one");
    }

    private static ModelConfig mla(ModelConfig m, MoeConfig moe, int firstDense)
    {
        return new ModelConfig(m.name(), m.architecture(), m.vocabSize(), m.hiddenSize(), m.layers(), m.heads(), m.kvHeads(), m.headDim(),
                m.qLoraRank(), m.kvLoraRank(), m.qkNopeHeadDim(), m.qkRopeHeadDim(), m.vHeadDim(), m.intermediateSize(), m.ropeTheta(), m.rmsEps(),
                m.maxContext(), m.weightsSeed(), false, "", false, false, RopeScaling.NONE, moe, firstDense);
    }

    private static ModelConfig gqa(boolean bias, boolean qkNorm, RopeScaling scaling)
    {
        ModelConfig c = ModelConfig.byName("tiny-gqa");
        return new ModelConfig(c.name(), c.architecture(), c.vocabSize(), c.hiddenSize(), c.layers(), c.heads(), c.kvHeads(), c.headDim(),
                0, 0, 0, 0, 0, c.intermediateSize(), c.ropeTheta(), c.rmsEps(), c.maxContext(), c.weightsSeed(), false, "", bias, qkNorm, scaling);
    }

    @Test
    void mlaAttendsInLatentSpaceWithOneSharedRow()
    {
        ModelConfig config = ModelConfig.byName("tiny-mla");
        AttentionGeometry geometry = config.attentionGeometry();
        assertThat(geometry.layout()).isEqualTo(KvLayout.MLA);
        assertThat(geometry.numQHeads()).isEqualTo(config.heads());
        assertThat(geometry.numKvHeads()).isEqualTo(1);
        assertThat(geometry.qkDim()).isEqualTo(config.kvLoraRank() + config.qkRopeHeadDim());
        assertThat(geometry.vDim()).isEqualTo(config.kvLoraRank());
        assertThat(geometry.scale()).isEqualTo((float) (1.0 / Math.sqrt(config.qkNopeHeadDim() + config.qkRopeHeadDim())));
        assertThat(config.kvKeyRowElements()).isEqualTo(160);
        assertThat(config.kvValueRowElements()).isEqualTo(128);
        assertThat(config.kvValuesInKeyRow()).isTrue();
    }

    @Test
    void gqaHasSeparateKeyAndValueRowsPerKvHead()
    {
        ModelConfig config = ModelConfig.byName("tiny-gqa");
        AttentionGeometry geometry = config.attentionGeometry();
        assertThat(geometry.layout()).isEqualTo(KvLayout.GQA);
        assertThat(geometry.numKvHeads()).isEqualTo(config.kvHeads());
        assertThat(geometry.groupSize()).isEqualTo(config.heads() / config.kvHeads());
        assertThat(config.kvKeyRowElements()).isEqualTo(config.kvHeads() * config.headDim());
        assertThat(config.kvValueRowElements()).isEqualTo(config.kvHeads() * config.headDim());
        assertThat(config.kvValuesInKeyRow()).isFalse();
    }

    @Test
    void compatibilityHashIsStableAndChangesWithSeedOrShape()
    {
        ModelConfig config = ModelConfig.byName("tiny-mla");
        assertThat(config.compatibilityHash()).isEqualTo(ModelConfig.byName("tiny-mla").compatibilityHash());
        assertThat(config.compatibilityHash()).startsWith("tiny-mla@").hasSize("tiny-mla@".length() + 16);
        assertThat(config.withWeightsSeed(1).compatibilityHash()).isNotEqualTo(config.compatibilityHash());
        assertThat(ModelConfig.byName("tiny-gqa").compatibilityHash()).isNotEqualTo(config.compatibilityHash());
    }

    @Test
    void inconsistentDimsAreRejectedWithTheField()
    {
        assertThatThrownBy(() -> new ModelConfig("bad", Architecture.GQA, 259, 256, 4, 8, 3, 32, 0, 0, 0, 0, 0, 512, 1e4f, 1e-5f, 128, 1))
                .hasMessageContaining("heads 8 must be a multiple of kvHeads 3");
        assertThatThrownBy(() -> new ModelConfig("bad", Architecture.MLA, 259, 256, 4, 8, 8, 64, 128, 0, 32, 32, 32, 512, 1e4f, 1e-6f, 128, 1))
                .hasMessageContaining("kvLoraRank must be positive, was 0");
        assertThatThrownBy(() -> new ModelConfig("bad", Architecture.GQA, 259, 256, 4, 8, 2, 32, 0, 128, 0, 0, 0, 512, 1e4f, 1e-5f, 128, 1))
                .hasMessageContaining("GQA has no MLA dims");
    }
}
