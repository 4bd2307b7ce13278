package io.handoff.core.model;

import java.util.Arrays;

import static java.util.Objects.requireNonNull;

/**
 * Chooses a token's routed experts and their weights from its hidden row, by DeepSeek-V2/V3's rules: gate logits
 * ({@code gate.weight}, {@code [experts, hidden]}) become scores (softmax or sigmoid); the choosing score is the score
 * plus the correction bias when there is one; with groups, only the best {@code groupsPerToken} groups' experts compete;
 * the top {@code expertsPerToken} choosing scores win; each winner's weight is its unbiased score, normalized over the
 * winners when configured, then times the routed scaling factor.
 *
 * <p>Ties, between groups or between experts, go to the lower index, so a choice depends only on the token's row.
 */
public final class MoeRouter
{
    private final MoeConfig config;
    private final WeightMatrix gate;
    private final float[] correctionBias;

    /** {@code correctionBias} is {@code null} unless {@code config.correctionBias()}, then one value per routed expert. */
    public MoeRouter(MoeConfig config, WeightMatrix gate, float[] correctionBias)
    {
        this.config = requireNonNull(config, "config is null");
        this.gate = requireNonNull(gate, "gate is null");
        if (gate.rows() != config.experts()) {
            throw new IllegalArgumentException("the router's gate has " + gate.rows() + " rows, the config " + config.experts()
                    + " routed experts: the gate must be [experts x hidden]");
        }
        if (config.correctionBias() != (correctionBias != null)) {
            throw new IllegalArgumentException(config.correctionBias()
                    ? "the config uses a correction bias (e_score_correction_bias) but none was given"
                    : "a correction bias was given but the config does not use one: set correctionBias");
        }
        if (correctionBias != null && correctionBias.length != config.experts()) {
            throw new IllegalArgumentException("the correction bias has " + correctionBias.length + " values, the config "
                    + config.experts() + " routed experts");
        }
        this.correctionBias = correctionBias == null ? null : correctionBias.clone();
    }

    /** A token's routed experts in ascending index order, each with its weight. */
    public record Choice(int[] experts, float[] weights)
    {
        public Choice
        {
            requireNonNull(experts, "experts is null");
            requireNonNull(weights, "weights is null");
            if (experts.length != weights.length) {
                throw new IllegalArgumentException(experts.length + " experts but " + weights.length + " weights");
            }
        }
    }

    public int hiddenSize()
    {
        return gate.cols();
    }

    /** The choice for the token at {@code x[xOff .. xOff + hidden)}. */
    public Choice route(float[] x, int xOff)
    {
        float[] logits = new float[config.experts()];
        Kernels.matmul(null, logits, 0, config.experts(), gate, x, xOff, gate.cols(), 1);
        return choose(logits);
    }

    /** The choice for a token whose gate logits are {@code logits} (one per routed expert). */
    public Choice choose(float[] logits)
    {
        int n = config.experts();
        if (logits.length != n) {
            throw new IllegalArgumentException(logits.length + " gate logits for " + n + " routed experts");
        }
        float[] scores = scores(logits);
        float[] choosing = scores.clone();
        if (correctionBias != null) {
            for (int e = 0; e < n; e++) {
                choosing[e] += correctionBias[e];
            }
        }
        boolean[] eligible = eligibleExperts(choosing);
        int k = config.expertsPerToken();
        int[] chosen = new int[k];
        boolean[] taken = new boolean[n];
        for (int j = 0; j < k; j++) {
            chosen[j] = best(choosing, eligible, taken, 0, n);
            taken[chosen[j]] = true;
        }
        Arrays.sort(chosen);
        return new Choice(chosen, weights(scores, chosen));
    }

    private float[] scores(float[] logits)
    {
        int n = logits.length;
        float[] scores = new float[n];
        if (config.scoring() == MoeConfig.Scoring.SIGMOID) {
            for (int e = 0; e < n; e++) {
                scores[e] = (float) (1.0 / (1.0 + StrictMath.exp(-(double) logits[e])));
            }
            return scores;
        }
        float max = Float.NEGATIVE_INFINITY;
        for (float logit : logits) {
            max = Math.max(max, logit);
        }
        // in double and in index order: the sum does not depend on anything but the logits
        double[] exps = new double[n];
        double sum = 0;
        for (int e = 0; e < n; e++) {
            exps[e] = StrictMath.exp((double) logits[e] - max);
            sum += exps[e];
        }
        for (int e = 0; e < n; e++) {
            scores[e] = (float) (exps[e] / sum);
        }
        return scores;
    }

    /** Every expert when there is one group; otherwise the experts of the best {@code groupsPerToken} groups. */
    private boolean[] eligibleExperts(float[] choosing)
    {
        int n = config.experts();
        boolean[] eligible = new boolean[n];
        if (config.groups() == 1) {
            Arrays.fill(eligible, true);
            return eligible;
        }
        int size = config.expertsPerGroup();
        float[] groupScores = new float[config.groups()];
        for (int g = 0; g < config.groups(); g++) {
            groupScores[g] = groupScore(choosing, g * size, size);
        }
        boolean[] all = new boolean[config.groups()];
        Arrays.fill(all, true);
        boolean[] takenGroups = new boolean[config.groups()];
        for (int j = 0; j < config.groupsPerToken(); j++) {
            int g = best(groupScores, all, takenGroups, 0, config.groups());
            takenGroups[g] = true;
            Arrays.fill(eligible, g * size, (g + 1) * size, true);
        }
        return eligible;
    }

    private float groupScore(float[] choosing, int from, int size)
    {
        boolean[] all = new boolean[choosing.length];
        Arrays.fill(all, from, from + size, true);
        boolean[] taken = new boolean[choosing.length];
        int first = best(choosing, all, taken, from, from + size);
        if (config.groupScoring() == MoeConfig.GroupScoring.MAX || size == 1) {
            return choosing[first];
        }
        taken[first] = true;
        return choosing[first] + choosing[best(choosing, all, taken, from, from + size)];
    }

    /** The index in {@code [from, to)} of the highest eligible, untaken value; the lower index on a tie. */
    private static int best(float[] values, boolean[] eligible, boolean[] taken, int from, int to)
    {
        int best = -1;
        for (int i = from; i < to; i++) {
            if (eligible[i] && !taken[i] && (best < 0 || values[i] > values[best])) {
                best = i;
            }
        }
        return best;
    }

    private float[] weights(float[] scores, int[] chosen)
    {
        float[] weights = new float[chosen.length];
        float sum = 0;
        for (int j = 0; j < chosen.length; j++) {
            weights[j] = scores[chosen[j]];
            sum += weights[j];
        }
        for (int j = 0; j < chosen.length; j++) {
            float weight = config.normalizeWeights() ? weights[j] / sum : weights[j];
            weights[j] = weight * config.routedScalingFactor();
        }
        return weights;
    }
}
