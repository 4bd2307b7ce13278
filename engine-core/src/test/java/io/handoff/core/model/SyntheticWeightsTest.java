package io.handoff.core.model;

import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.within;

class SyntheticWeightsTest
{
    private static final String Q = "model.layers.0.self_attn.q_proj.weight";

    @Test
    void aTensorDependsOnlyOnSeedAndName()
    {
        SyntheticWeights weights = new SyntheticWeights(7);
        float[] first = weights.floats(Q, 64, 32);
        weights.floats("model.layers.1.self_attn.q_proj.weight", 64, 32);
        assertThat(new SyntheticWeights(7).floats(Q, 64, 32)).isEqualTo(first);
        assertThat(weights.floats("model.layers.1.self_attn.q_proj.weight", 64, 32)).isNotEqualTo(first);
        assertThat(new SyntheticWeights(8).floats(Q, 64, 32)).isNotEqualTo(first);
    }

    @Test
    void matricesHaveVarianceOneOverFanInAndNormsAreOnes()
    {
        float[] matrix = new SyntheticWeights(7).floats("model.layers.0.mlp.up_proj.weight", 256, 64);
        double sum = 0;
        double squares = 0;
        for (float value : matrix) {
            sum += value;
            squares += value * value;
        }
        assertThat(sum / matrix.length).isCloseTo(0, within(0.01));
        assertThat(squares / matrix.length).isCloseTo(1.0 / 64, within(0.1 / 64));
        assertThat(new SyntheticWeights(7).floats("model.norm.weight", 16)).containsOnly(1f);
    }

    @Test
    void attentionQueryProjectionsAreDrawnWiderForSharperAttention()
    {
        for (String name : new String[] {Q, "model.layers.1.self_attn.k_proj.weight"}) {
            float[] matrix = new SyntheticWeights(7).floats(name, 256, 64);
            double squares = 0;
            for (float value : matrix) {
                squares += value * value;
            }
            assertThat(squares / matrix.length).as(name).isCloseTo(9.0 / 64, within(0.9 / 64));
        }
        float[] mlaQuery = new SyntheticWeights(7).floats("model.layers.0.self_attn.q_b_proj.weight", 256, 64);
        double squares = 0;
        for (float value : mlaQuery) {
            squares += value * value;
        }
        assertThat(squares / mlaQuery.length).as("MLA q_b_proj").isCloseTo(16.0 / 64, within(1.6 / 64));
    }

    @Test
    void rejectsShapesItCannotGenerate()
    {
        assertThatThrownBy(() -> new SyntheticWeights(7).floats(Q, 2, 0))
                .hasMessageContaining("tensor '" + Q + "': unsupported shape [2, 0]");
    }
}
