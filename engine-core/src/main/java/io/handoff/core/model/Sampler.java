package io.handoff.core.model;

import java.util.Arrays;
import java.util.SplittableRandom;

/**
 * Picks the next token from logits. Deterministic: greedy breaks ties toward the lowest id, and a sampled
 * token depends only on the logits, the parameters and the token's index in the request's output, so it
 * does not change with batching or with which node (prefill or decode) samples it.
 */
public final class Sampler
{
    private Sampler() {}

    public static int sample(float[] logits, SamplingParams params, int tokenIndex)
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
        double total = 0;
        for (int i = 0; i < vocab; i++) {
            probs[i] = StrictMath.exp((logits[i] - max) / params.temperature());
            total += probs[i];
        }
        // descending probability, ties toward the lower id: a total order, so the nucleus is unique
        Integer[] order = new Integer[vocab];
        Arrays.setAll(order, i -> i);
        Arrays.sort(order, (a, b) -> probs[a] != probs[b] ? Double.compare(probs[b], probs[a]) : Integer.compare(a, b));
        double threshold = params.topP() * total;
        double mass = 0;
        int keep = 0;
        while (keep < vocab && (keep == 0 || mass < threshold)) {
            mass += probs[order[keep++]];
        }
        double u = new SplittableRandom(mix(params.seed(), tokenIndex)).nextDouble() * mass;
        double cumulative = 0;
        for (int i = 0; i < keep; i++) {
            cumulative += probs[order[i]];
            if (u < cumulative) {
                return order[i];
            }
        }
        return order[keep - 1];
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

    private static long mix(long seed, int tokenIndex)
    {
        long z = seed + 0x9e3779b97f4a7c15L * (tokenIndex + 1L);
        z = (z ^ (z >>> 30)) * 0xbf58476d1ce4e5b9L;
        z = (z ^ (z >>> 27)) * 0x94d049bb133111ebL;
        return z ^ (z >>> 31);
    }
}
