package io.handoff.core.model;

import io.handoff.core.model.MoeConfig.GroupScoring;
import io.handoff.core.model.MoeConfig.Scoring;
import io.handoff.core.model.MoeFeedForward.Expert;
import io.handoff.math.ExactExp;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.ForkJoinPool;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.data.Offset.offset;

class MoeFeedForwardTest
{
    /** A layer's weights as plain arrays, for the double-precision reference. */
    private record Layer(MoeConfig config, int hidden, float[] gate, float[] bias, float[][][] experts, float[][] shared,
            MoeFeedForward moe) {}

    @BeforeAll
    static void lanesWarm()
            throws InterruptedException
    {
        assertThat(ExactExp.awaitWarm(300_000)).as("ExactExp warmed up").isTrue();
    }

    private static float[] random(SplittableRandom random, int n, double scale)
    {
        float[] values = new float[n];
        for (int i = 0; i < n; i++) {
            values[i] = (float) ((random.nextDouble() * 2 - 1) * scale);
        }
        return values;
    }

    /** Each expert's {gate, up, down} as arrays; shared likewise (or null). */
    private static Layer layer(MoeConfig config, int hidden, long seed)
    {
        SplittableRandom random = new SplittableRandom(seed);
        float[] gate = random(random, config.experts() * hidden, 0.5);
        float[] bias = config.correctionBias() ? random(random, config.experts(), 0.2) : null;
        float[][][] experts = new float[config.experts()][][];
        List<Expert> expertList = new ArrayList<>();
        for (int e = 0; e < config.experts(); e++) {
            experts[e] = swigluWeights(random, hidden, config.intermediateSize());
            expertList.add(expert(experts[e], hidden, config.intermediateSize()));
        }
        float[][] shared = config.sharedExperts() == 0 ? null : swigluWeights(random, hidden, config.sharedIntermediateSize());
        MoeRouter router = new MoeRouter(config, WeightMatrix.f32(gate, config.experts(), hidden), bias);
        MoeFeedForward moe = new MoeFeedForward(config, router, expertList,
                shared == null ? null : expert(shared, hidden, config.sharedIntermediateSize()));
        return new Layer(config, hidden, gate, bias, experts, shared, moe);
    }

    private static float[][] swigluWeights(SplittableRandom random, int hidden, int width)
    {
        double scale = 1 / Math.sqrt(hidden);
        return new float[][] {random(random, width * hidden, scale), random(random, width * hidden, scale),
                random(random, hidden * width, 1 / Math.sqrt(width))};
    }

    private static Expert expert(float[][] w, int hidden, int width)
    {
        return new Expert(WeightMatrix.f32(w[0], width, hidden), WeightMatrix.f32(w[1], width, hidden), WeightMatrix.f32(w[2], hidden, width));
    }

    // ---- the reference: every expert computed densely in double, then weighted by a double-precision routing ----

    private static double[] referenceSwiglu(float[][] w, double[] x, int hidden, int width)
    {
        double[] h = new double[width];
        for (int r = 0; r < width; r++) {
            double g = 0;
            double u = 0;
            for (int c = 0; c < hidden; c++) {
                g += (double) w[0][r * hidden + c] * x[c];
                u += (double) w[1][r * hidden + c] * x[c];
            }
            h[r] = g / (1 + Math.exp(-g)) * u;
        }
        double[] y = new double[hidden];
        for (int r = 0; r < hidden; r++) {
            for (int c = 0; c < width; c++) {
                y[r] += (double) w[2][r * width + c] * h[c];
            }
        }
        return y;
    }

    private static double[] referenceWeights(Layer layer, double[] x)
    {
        MoeConfig config = layer.config();
        int n = config.experts();
        double[] scores = new double[n];
        for (int e = 0; e < n; e++) {
            for (int c = 0; c < layer.hidden(); c++) {
                scores[e] += (double) layer.gate()[e * layer.hidden() + c] * x[c];
            }
        }
        if (config.scoring() == Scoring.SIGMOID) {
            for (int e = 0; e < n; e++) {
                scores[e] = 1 / (1 + Math.exp(-scores[e]));
            }
        }
        else {
            double max = Arrays.stream(scores).max().orElseThrow();
            double sum = 0;
            for (int e = 0; e < n; e++) {
                scores[e] = Math.exp(scores[e] - max);
                sum += scores[e];
            }
            for (int e = 0; e < n; e++) {
                scores[e] /= sum;
            }
        }
        double[] choosing = new double[n];
        for (int e = 0; e < n; e++) {
            choosing[e] = scores[e] + (layer.bias() == null ? 0 : layer.bias()[e]);
        }
        int size = config.expertsPerGroup();
        Integer[] groups = new Integer[config.groups()];
        double[] groupScore = new double[config.groups()];
        for (int g = 0; g < config.groups(); g++) {
            groups[g] = g;
            double[] members = Arrays.copyOfRange(choosing, g * size, (g + 1) * size);
            Arrays.sort(members);
            groupScore[g] = config.groupScoring() == GroupScoring.MAX || size == 1
                    ? members[size - 1]
                    : members[size - 1] + members[size - 2];
        }
        Arrays.sort(groups, (a, b) -> Double.compare(groupScore[b], groupScore[a]));
        List<Integer> candidates = new ArrayList<>();
        for (int j = 0; j < config.groupsPerToken(); j++) {
            for (int e = groups[j] * size; e < (groups[j] + 1) * size; e++) {
                candidates.add(e);
            }
        }
        candidates.sort((a, b) -> Double.compare(choosing[b], choosing[a]));
        double[] weights = new double[n];
        double sum = 0;
        for (int j = 0; j < config.expertsPerToken(); j++) {
            weights[candidates.get(j)] = scores[candidates.get(j)];
            sum += scores[candidates.get(j)];
        }
        for (int e = 0; e < n; e++) {
            weights[e] = (config.normalizeWeights() ? weights[e] / sum : weights[e]) * config.routedScalingFactor();
        }
        return weights;
    }

    private static double[] reference(Layer layer, float[] x, int off)
    {
        int hidden = layer.hidden();
        double[] row = new double[hidden];
        for (int i = 0; i < hidden; i++) {
            row[i] = x[off + i];
        }
        double[] weights = referenceWeights(layer, row);
        double[] out = new double[hidden];
        for (int e = 0; e < layer.config().experts(); e++) {
            double[] y = referenceSwiglu(layer.experts()[e], row, hidden, layer.config().intermediateSize());
            for (int i = 0; i < hidden; i++) {
                out[i] += weights[e] * y[i];
            }
        }
        if (layer.shared() != null) {
            double[] y = referenceSwiglu(layer.shared(), row, hidden, layer.config().sharedIntermediateSize());
            for (int i = 0; i < hidden; i++) {
                out[i] += y[i];
            }
        }
        return out;
    }

    private static void assertMatchesReference(Layer layer, int tokens, long seed)
    {
        int hidden = layer.hidden();
        float[] x = random(new SplittableRandom(seed), tokens * hidden, 1);
        float[] out = new float[tokens * hidden];
        layer.moe().forward(null, x, tokens, out);
        for (int t = 0; t < tokens; t++) {
            double[] expected = reference(layer, x, t * hidden);
            double scale = Arrays.stream(expected).map(Math::abs).max().orElseThrow();
            for (int i = 0; i < hidden; i++) {
                assertThat((double) out[t * hidden + i]).as("token %d value %d", t, i)
                        .isCloseTo(expected[i], offset(1e-5 * Math.max(1, scale)));
            }
        }
    }

    @Test
    void sigmoidGroupLimitedLayerMatchesADenseDoublePrecisionReference()
    {
        MoeConfig v3 = new MoeConfig(8, 3, 2, 24, Scoring.SIGMOID, true, 4, 2, GroupScoring.TOP_TWO_SUM, true, 2.5f);
        assertMatchesReference(layer(v3, 40, 11), 6, 12);
    }

    @Test
    void softmaxLayerMatchesADenseDoublePrecisionReference()
    {
        MoeConfig v2 = new MoeConfig(6, 2, 1, 16, Scoring.SOFTMAX, false, 1, 1, GroupScoring.MAX, false, 16f);
        assertMatchesReference(layer(v2, 37, 21), 5, 22);
        MoeConfig noShared = new MoeConfig(6, 2, 0, 16, Scoring.SOFTMAX, false, 3, 2, GroupScoring.MAX, true, 1f);
        assertMatchesReference(layer(noShared, 37, 31), 5, 32);
    }

    @Test
    void aTokensOutputIsBitIdenticalAloneAndInABatchOf32()
    {
        int hidden = 128;
        MoeConfig config = new MoeConfig(8, 2, 2, 64, Scoring.SIGMOID, true, 4, 2, GroupScoring.TOP_TWO_SUM, true, 2.5f);
        Layer layer = layer(config, hidden, 41);
        float[] batch = random(new SplittableRandom(42), 32 * hidden, 1);
        int at = 17;
        float[] alone = Arrays.copyOfRange(batch, at * hidden, (at + 1) * hidden);
        float[] aloneOut = new float[hidden];
        layer.moe().forward(null, alone, 1, aloneOut);
        float[] batchOut = new float[32 * hidden];
        ForkJoinPool pool = new ForkJoinPool(4);
        try {
            layer.moe().forward(pool, batch, 32, batchOut);
        }
        finally {
            pool.shutdown();
        }
        assertThat(Arrays.copyOfRange(batchOut, at * hidden, (at + 1) * hidden)).containsExactly(aloneOut);
        for (int t = 0; t < 32; t++) {
            float[] single = new float[hidden];
            layer.moe().forward(null, Arrays.copyOfRange(batch, t * hidden, (t + 1) * hidden), 1, single);
            assertThat(Arrays.copyOfRange(batchOut, t * hidden, (t + 1) * hidden)).as("token %d", t).containsExactly(single);
        }
    }

    @Test
    void anExpertNoTokenChoosesIsNeverEvaluated()
    {
        int hidden = 8;
        int width = 4;
        MoeConfig config = new MoeConfig(4, 1, 0, width, Scoring.SIGMOID, true, 1, 1, GroupScoring.MAX, false, 1f);
        float[] ones = new float[width * hidden];
        Arrays.fill(ones, 0.1f);
        float[] poison = new float[width * hidden];
        Arrays.fill(poison, Float.NaN);
        List<Expert> experts = new ArrayList<>();
        for (int e = 0; e < 4; e++) {
            float[] w = e == 3 ? poison : ones;
            experts.add(new Expert(WeightMatrix.f32(w, width, hidden), WeightMatrix.f32(w, width, hidden), WeightMatrix.f32(w, hidden, width)));
        }
        // the bias makes expert 0 every token's choice
        MoeRouter router = new MoeRouter(config, WeightMatrix.f32(new float[4 * hidden], 4, hidden), new float[] {10, 0, 0, 0});
        MoeFeedForward moe = new MoeFeedForward(config, router, experts, null);
        float[] x = random(new SplittableRandom(5), 3 * hidden, 1);
        float[] out = new float[3 * hidden];
        moe.forward(null, x, 3, out);
        for (float value : out) {
            assertThat(value).isFinite();
        }
        assertThat(out).isNotEqualTo(new float[3 * hidden]);
    }

    @Test
    void weightsThatDoNotFitTheConfigAreRefused()
    {
        MoeConfig config = new MoeConfig(2, 1, 1, 4, Scoring.SOFTMAX, false, 1, 1, GroupScoring.MAX, false, 1f);
        Expert expert = new Expert(WeightMatrix.f32(new float[32], 4, 8), WeightMatrix.f32(new float[32], 4, 8),
                WeightMatrix.f32(new float[32], 8, 4));
        MoeRouter router = new MoeRouter(config, WeightMatrix.f32(new float[16], 2, 8), null);
        assertThatThrownBy(() -> new MoeFeedForward(config, router, List.of(expert), expert))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("1 routed experts given, the config has 2");
        assertThatThrownBy(() -> new MoeFeedForward(config, router, List.of(expert, expert), null))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("no shared expert weights");
        assertThatThrownBy(() -> new Expert(WeightMatrix.f32(new float[32], 4, 8), WeightMatrix.f32(new float[32], 4, 8),
                WeightMatrix.f32(new float[32], 4, 8))).isInstanceOf(IllegalArgumentException.class).hasMessageContaining("down");
    }
}
