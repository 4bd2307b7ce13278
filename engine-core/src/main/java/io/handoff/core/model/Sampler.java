package io.handoff.core.model;

import io.handoff.math.ExactExp;

import java.util.Arrays;
import java.util.SplittableRandom;

/**
 * Picks the next token from logits by the rules of {@link SamplingParams}. Deterministic: greedy breaks ties toward
 * the lowest id, and a sampled token depends only on the logits, the parameters and the {@link SamplingContext} (the
 * token's index, the output before it, the end ids), so it does not change with batching or with which node (prefill
 * or decode) samples it.
 */
public final class Sampler
{
    private Sampler() {}

    /** Samples output token {@code context.tokenIndex()}; {@code logits} is not modified. */
    public static int sample(float[] logits, SamplingParams params, SamplingContext context)
    {
        return pick(adjustedLogits(logits, params, context), params, context.tokenIndex());
    }

    /**
     * Samples with no history: for callers that know neither the earlier output tokens nor the end ids. Refuses
     * parameters whose rules would need them (penalties past the first token, {@code minNewTokens} not yet reached)
     * rather than silently leaving those rules out.
     */
    public static int sample(float[] logits, SamplingParams params, int tokenIndex)
    {
        if ((params.penalized() && tokenIndex > 0) || tokenIndex < params.minNewTokens()) {
            throw new IllegalArgumentException("token " + tokenIndex + " of " + params
                    + " depends on the earlier output tokens or the end ids: pass them in a SamplingContext");
        }
        return pick(logits, params, tokenIndex);
    }

    /**
     * The logits the draw sees: tokens a constraint does not allow at negative infinity, end ids at negative infinity
     * below {@code minNewTokens}, then the penalties over the earlier output tokens. {@code logits} itself when no rule
     * applies (every rule off computes exactly what plain temperature sampling does), otherwise a new array.
     */
    static float[] adjustedLogits(float[] logits, SamplingParams params, SamplingContext context)
    {
        boolean suppress = context.tokenIndex() < params.minNewTokens() && !context.endIds().isEmpty();
        boolean penalize = params.penalized() && context.tokenIndex() > 0;
        long[] allowed = context.allowed();
        if (!suppress && !penalize && allowed == null) {
            return logits;
        }
        float[] adjusted = logits.clone();
        if (allowed != null) {
            for (int id = 0; id < adjusted.length; id++) {
                if ((id >>> 6) >= allowed.length || (allowed[id >>> 6] & (1L << id)) == 0) {
                    adjusted[id] = Float.NEGATIVE_INFINITY;
                }
            }
        }
        if (suppress && allowed != null && onlyEndsAllowed(allowed, context.endIds())) {
            suppress = false; // the constraint is complete and allows nothing but an end: it ends before min_new_tokens
        }
        if (suppress) {
            for (int id : context.endIds()) {
                if (id >= 0 && id < adjusted.length) {
                    adjusted[id] = Float.NEGATIVE_INFINITY;
                }
            }
        }
        if (penalize) {
            penalize(adjusted, params, context.outputs(), context.tokenIndex());
        }
        return adjusted;
    }

    private static boolean onlyEndsAllowed(long[] allowed, java.util.Set<Integer> endIds)
    {
        long[] rest = allowed.clone();
        for (int id : endIds) {
            if (id >= 0 && (id >>> 6) < rest.length) {
                rest[id >>> 6] &= ~(1L << id);
            }
        }
        for (long word : rest) {
            if (word != 0) {
                return false;
            }
        }
        return true;
    }

    /** The highest logit's id; the lowest id among equal maxima. NaN logits never win. */
    public static int argmax(float[] logits)
    {
        int best = 0;
        for (int i = 1; i < logits.length; i++) {
            if (logits[i] > logits[best] || Float.isNaN(logits[best])) {
                best = i;
            }
        }
        return best;
    }

    // Per distinct earlier token: repetition (divide a positive logit, multiply a negative one), then frequency (per
    // occurrence), then presence (once). An off penalty (1, 0, 0) leaves the float unchanged, so all three always run.
    private static void penalize(float[] logits, SamplingParams params, int[] outputs, int count)
    {
        int[] earlier = Arrays.copyOf(outputs, count);
        Arrays.sort(earlier);
        int start = 0;
        while (start < count) {
            int token = earlier[start];
            int end = start + 1;
            while (end < count && earlier[end] == token) {
                end++;
            }
            if (token >= 0 && token < logits.length) {
                float logit = logits[token];
                logit = logit > 0 ? logit / params.repetitionPenalty() : logit * params.repetitionPenalty();
                logit -= params.frequencyPenalty() * (end - start);
                logit -= params.presencePenalty();
                logits[token] = logit;
            }
            start = end;
        }
    }

    private static int pick(float[] logits, SamplingParams params, int tokenIndex)
    {
        if (params.greedy()) {
            return argmax(logits);
        }
        int vocab = logits.length;
        double max = Double.NEGATIVE_INFINITY;
        for (float logit : logits) {
            max = Math.max(max, logit);
        }
        double[] probs = new double[vocab];
        int finite = 0;
        for (int i = 0; i < vocab; i++) {
            probs[i] = (logits[i] - max) / params.temperature();
            if (logits[i] != Float.NEGATIVE_INFINITY) {
                finite++;
            }
        }
        if (finite * 2 > vocab) {
            ExactExp.exp(probs, 0, probs, 0, vocab); // StrictMath.exp's bits, over vector lanes
        }
        else {
            // Mostly masked (a grammar): exp of negative infinity is 0, and the vector exp takes a slow path for it, so
            // only the finite entries go through it, packed together. Every value is the same as the plain path's.
            double[] packed = new double[finite];
            int[] ids = new int[finite];
            for (int i = 0, n = 0; i < vocab; i++) {
                if (logits[i] != Float.NEGATIVE_INFINITY) {
                    ids[n] = i;
                    packed[n++] = probs[i];
                }
                probs[i] = 0;
            }
            ExactExp.exp(packed, 0, packed, 0, finite);
            for (int n = 0; n < finite; n++) {
                probs[ids[n]] = packed[n];
            }
        }
        double total = 0;
        for (double p : probs) {
            total += p;
        }
        // The kept tokens are a prefix of the ranking (descending probability, ties toward the lower id), cut by
        // top-k, the nucleus and min-p; the ranking is taken lazily, so only what is read of it is ordered.
        TokenRanking ranking = new TokenRanking(probs);
        int limit = params.topK() == -1 ? vocab : Math.min(params.topK(), vocab);
        double threshold = params.topP() * total;
        double floor = params.minP() * ranking.weight(0);
        double mass = 0;
        int keep = 0;
        while (keep < limit) {
            double p = ranking.weight(keep);
            // a token of probability 0 (an end id below min_new_tokens, an underflow) is never drawn
            if (keep > 0 && (mass >= threshold || p < floor || p == 0)) {
                break;
            }
            keep++;
            mass += p;
        }
        double u = new SplittableRandom(mix(params.seed(), tokenIndex)).nextDouble() * mass;
        double cumulative = 0;
        for (int i = 0; i < keep; i++) {
            cumulative += ranking.weight(i);
            if (u < cumulative) {
                return ranking.id(i);
            }
        }
        return ranking.id(keep - 1);
    }

    private static long mix(long seed, int tokenIndex)
    {
        long z = seed + 0x9e3779b97f4a7c15L * (tokenIndex + 1L);
        z = (z ^ (z >>> 30)) * 0xbf58476d1ce4e5b9L;
        z = (z ^ (z >>> 27)) * 0x94d049bb133111ebL;
        return z ^ (z >>> 31);
    }
}
