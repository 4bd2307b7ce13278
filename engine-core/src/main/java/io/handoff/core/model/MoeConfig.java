package io.handoff.core.model;

import static java.util.Objects.requireNonNull;

/**
 * The shape and routing rules of a DeepSeek-V2/V3 mixture-of-experts feed-forward layer.
 *
 * @param experts the routed experts ({@code n_routed_experts})
 * @param expertsPerToken how many routed experts each token uses ({@code num_experts_per_tok}, top-k)
 * @param sharedExperts experts every token uses ({@code n_shared_experts}); their SwiGLU is {@code sharedExperts *
 *         intermediateSize} wide
 * @param intermediateSize one expert's SwiGLU width ({@code moe_intermediate_size})
 * @param scoring how gate logits become scores: softmax (V2) or sigmoid (V3)
 * @param correctionBias whether a per-expert bias ({@code e_score_correction_bias}) is added to the scores for choosing
 *         experts (never for their weights)
 * @param groups the expert groups ({@code n_group}); 1 routes over all experts at once
 * @param groupsPerToken the groups a token's experts are chosen from ({@code topk_group})
 * @param groupScoring how a group's score is taken from its experts' choosing scores
 * @param normalizeWeights whether the chosen experts' weights are divided by their sum ({@code norm_topk_prob})
 * @param routedScalingFactor the factor applied to every routed weight ({@code routed_scaling_factor}), after normalizing
 */
public record MoeConfig(
        int experts,
        int expertsPerToken,
        int sharedExperts,
        int intermediateSize,
        Scoring scoring,
        boolean correctionBias,
        int groups,
        int groupsPerToken,
        GroupScoring groupScoring,
        boolean normalizeWeights,
        float routedScalingFactor)
{
    /** How a gate logit becomes an expert's score. */
    public enum Scoring
    {
        /** Softmax over all routed experts' logits (DeepSeek-V2). */
        SOFTMAX,
        /** An independent sigmoid per expert (DeepSeek-V3). */
        SIGMOID
    }

    /** How a group of experts is scored when routing is group-limited. */
    public enum GroupScoring
    {
        /** The group's best expert score (DeepSeek-V2's {@code group_limited_greedy}). */
        MAX,
        /** The sum of the group's two best choosing scores (DeepSeek-V3's {@code noaux_tc}, as llama.cpp does it). */
        TOP_TWO_SUM
    }

    public MoeConfig
    {
        requireNonNull(scoring, "scoring is null");
        requireNonNull(groupScoring, "groupScoring is null");
        positive("experts", experts);
        positive("expertsPerToken", expertsPerToken);
        positive("intermediateSize", intermediateSize);
        positive("groups", groups);
        positive("groupsPerToken", groupsPerToken);
        if (sharedExperts < 0) {
            throw new IllegalArgumentException("sharedExperts (n_shared_experts) must be 0 or more, was " + sharedExperts);
        }
        if (expertsPerToken > experts) {
            throw new IllegalArgumentException("expertsPerToken (num_experts_per_tok) is " + expertsPerToken + ", more than the "
                    + experts + " routed experts: lower it to at most " + experts);
        }
        if (groupsPerToken > groups) {
            throw new IllegalArgumentException("groupsPerToken (topk_group) is " + groupsPerToken + ", more than the " + groups
                    + " groups (n_group): lower it to at most " + groups);
        }
        if (experts % groups != 0) {
            throw new IllegalArgumentException("experts (n_routed_experts) = " + experts + " cannot be split into " + groups
                    + " equal groups (n_group): make n_group a divisor of it");
        }
        if (expertsPerToken > groupsPerToken * (experts / groups)) {
            throw new IllegalArgumentException("expertsPerToken (num_experts_per_tok) is " + expertsPerToken + ", but the "
                    + groupsPerToken + " chosen groups (topk_group) hold only " + groupsPerToken * (experts / groups)
                    + " experts: raise topk_group or lower num_experts_per_tok");
        }
        if (!(routedScalingFactor > 0) || !Float.isFinite(routedScalingFactor)) {
            throw new IllegalArgumentException("routedScalingFactor (routed_scaling_factor) must be finite and positive, was "
                    + routedScalingFactor);
        }
    }

    /** Routed experts in one group. */
    public int expertsPerGroup()
    {
        return experts / groups;
    }

    /** The shared experts' SwiGLU width: {@code sharedExperts * intermediateSize}. */
    public int sharedIntermediateSize()
    {
        return sharedExperts * intermediateSize;
    }

    private static void positive(String field, int value)
    {
        if (value < 1) {
            throw new IllegalArgumentException(field + " must be at least 1, was " + value);
        }
    }
}
