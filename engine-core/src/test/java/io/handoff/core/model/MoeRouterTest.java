package io.handoff.core.model;

import io.handoff.core.model.MoeConfig.GroupScoring;
import io.handoff.core.model.MoeConfig.Scoring;
import io.handoff.core.model.MoeRouter.Choice;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.data.Offset.offset;

class MoeRouterTest
{
    private static final int HIDDEN = 4;

    static MoeConfig config(int experts, int k, Scoring scoring, boolean bias, int groups, int groupsPerToken, GroupScoring groupScoring,
            boolean normalize, float scaling)
    {
        return new MoeConfig(experts, k, 1, 8, scoring, bias, groups, groupsPerToken, groupScoring, normalize, scaling);
    }

    private static MoeRouter router(MoeConfig config, float[] bias)
    {
        return new MoeRouter(config, WeightMatrix.f32(new float[config.experts() * HIDDEN], config.experts(), HIDDEN), bias);
    }

    private static float sigmoid(double x)
    {
        return (float) (1.0 / (1.0 + StrictMath.exp(-x)));
    }

    @Test
    void softmaxScoresAreTheChosenExpertsProbabilities()
    {
        // exp(logits) = 1, 2, 3, 4: probabilities 0.1 .. 0.4, the best two are experts 2 and 3
        float[] logits = {0, (float) Math.log(2), (float) Math.log(3), (float) Math.log(4)};
        Choice choice = router(config(4, 2, Scoring.SOFTMAX, false, 1, 1, GroupScoring.MAX, false, 1f), null).choose(logits);
        assertThat(choice.experts()).containsExactly(2, 3);
        assertThat(choice.weights()[0]).isCloseTo(0.3f, offset(1e-6f));
        assertThat(choice.weights()[1]).isCloseTo(0.4f, offset(1e-6f));
    }

    @Test
    void sigmoidScoresEachExpertOnItsOwn()
    {
        float[] logits = {0, 1, -1, 2};
        Choice choice = router(config(4, 2, Scoring.SIGMOID, false, 1, 1, GroupScoring.MAX, false, 1f), null).choose(logits);
        assertThat(choice.experts()).containsExactly(1, 3);
        assertThat(choice.weights()).containsExactly(sigmoid(1), sigmoid(2));
    }

    @Test
    void correctionBiasChangesTheChoiceButNotTheWeights()
    {
        float[] logits = {0, 1, -1, 2};
        float[] bias = {0, 0, 5, 0};
        Choice choice = router(config(4, 2, Scoring.SIGMOID, true, 1, 1, GroupScoring.MAX, false, 1f), bias).choose(logits);
        assertThat(choice.experts()).containsExactly(2, 3);
        assertThat(choice.weights()).containsExactly(sigmoid(-1), sigmoid(2));
    }

    @Test
    void groupLimitedChoiceSkipsTheBestExpertWhenItsGroupLoses()
    {
        // groups of two: {0,1} has the best expert but a poor partner; {2,3} and {4,5} are better by their top-two sums
        float[] logits = {5, -5, 2, 2, 1.5f, 1.5f, -3, -3};
        MoeConfig topTwo = config(8, 2, Scoring.SIGMOID, false, 4, 2, GroupScoring.TOP_TWO_SUM, false, 1f);
        assertThat(router(topTwo, null).choose(logits).experts()).containsExactly(2, 3);
        // by its best expert alone group {0,1} wins, with {2,3}; experts 2 and 3 tie and the lower index goes first
        MoeConfig max = config(8, 2, Scoring.SIGMOID, false, 4, 2, GroupScoring.MAX, false, 1f);
        assertThat(router(max, null).choose(logits).experts()).containsExactly(0, 2);
    }

    @Test
    void groupsAreScoredByBiasedScores()
    {
        // a bias on expert 7 lifts group {6,7} above {4,5}; the weights stay the unbiased scores
        float[] logits = {5, -5, 2, 2, 1.5f, 1.5f, -3, -3};
        float[] bias = {0, 0, 0, 0, 0, 0, 0, 3};
        MoeConfig config = config(8, 2, Scoring.SIGMOID, true, 4, 2, GroupScoring.TOP_TWO_SUM, false, 1f);
        Choice choice = router(config, bias).choose(logits);
        assertThat(choice.experts()).containsExactly(2, 7);
        assertThat(choice.weights()).containsExactly(sigmoid(2), sigmoid(-3));
    }

    @Test
    void normalizingDividesByTheChosenWeightsSumAndScalingMultipliesAfterwards()
    {
        float[] logits = {0, 1, -1, 2};
        float a = sigmoid(1);
        float b = sigmoid(2);
        Choice plain = router(config(4, 2, Scoring.SIGMOID, false, 1, 1, GroupScoring.MAX, false, 2.5f), null).choose(logits);
        assertThat(plain.weights()).containsExactly(a * 2.5f, b * 2.5f);
        Choice normalized = router(config(4, 2, Scoring.SIGMOID, false, 1, 1, GroupScoring.MAX, true, 2.5f), null).choose(logits);
        assertThat(normalized.weights()).containsExactly(a / (a + b) * 2.5f, b / (a + b) * 2.5f);
    }

    @Test
    void tiesGoToTheLowerExpertAndGroupIndex()
    {
        float[] equal = {1, 1, 1, 1, 1, 1, 1, 1};
        Choice flat = router(config(8, 3, Scoring.SOFTMAX, false, 1, 1, GroupScoring.MAX, false, 1f), null).choose(equal);
        assertThat(flat.experts()).containsExactly(0, 1, 2);
        assertThat(flat.weights()).containsExactly(0.125f, 0.125f, 0.125f);
        Choice grouped = router(config(8, 3, Scoring.SIGMOID, false, 4, 2, GroupScoring.TOP_TWO_SUM, false, 1f), null).choose(equal);
        assertThat(grouped.experts()).containsExactly(0, 1, 2);
    }

    @Test
    void routeTakesTheLogitsFromTheGateRows()
    {
        // gate row e is e times (1, 0, 0, 0): logits 0, x0, 2 x0, 3 x0
        float[] gate = new float[4 * HIDDEN];
        for (int e = 0; e < 4; e++) {
            gate[e * HIDDEN] = e;
        }
        MoeRouter router = new MoeRouter(config(4, 2, Scoring.SIGMOID, false, 1, 1, GroupScoring.MAX, false, 1f),
                WeightMatrix.f32(gate, 4, HIDDEN), null);
        Choice choice = router.route(new float[] {9, 9, -1, 0.5f, 0, 0}, 2);
        assertThat(choice.experts()).containsExactly(0, 1);
        assertThat(choice.weights()).containsExactly(sigmoid(0), sigmoid(-1));
    }

    @Test
    void configsThatCannotRouteAreRefusedNamingTheField()
    {
        assertThatThrownBy(() -> config(4, 5, Scoring.SOFTMAX, false, 1, 1, GroupScoring.MAX, false, 1f))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("expertsPerToken (num_experts_per_tok) is 5");
        assertThatThrownBy(() -> config(8, 2, Scoring.SIGMOID, false, 4, 5, GroupScoring.TOP_TWO_SUM, false, 1f))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("groupsPerToken (topk_group) is 5");
        assertThatThrownBy(() -> config(10, 2, Scoring.SIGMOID, false, 4, 2, GroupScoring.TOP_TWO_SUM, false, 1f))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("experts (n_routed_experts) = 10")
                .hasMessageContaining("n_group");
        assertThatThrownBy(() -> config(8, 5, Scoring.SIGMOID, false, 4, 2, GroupScoring.TOP_TWO_SUM, false, 1f))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("topk_group");
        assertThatThrownBy(() -> config(8, 2, Scoring.SIGMOID, false, 1, 1, GroupScoring.MAX, false, 0f))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("routedScalingFactor");
        MoeConfig biased = config(4, 2, Scoring.SIGMOID, true, 1, 1, GroupScoring.MAX, false, 1f);
        assertThatThrownBy(() -> router(biased, null)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("e_score_correction_bias");
        assertThatThrownBy(() -> router(biased, new float[3])).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("3 values");
    }
}
