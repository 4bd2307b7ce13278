package io.handoff.core.scheduler;

import io.handoff.math.ExactExp;

import static java.util.Objects.requireNonNull;

/**
 * Log probabilities from one raw logits row: {@code logprob(i) = (float) (l[i] - max - log(sum_j exp(l[j] - max)))}, every
 * step in double, the exponentials exactly {@link StrictMath#exp}'s bits ({@link ExactExp}), the sum in ascending id
 * order. One formula with one summation order, so the same row gives the same bits on a prefill, a decode or a
 * colocated engine. The most likely ids come from a bounded selection (at most {@link LogprobRequest#MAX_TOP_N} kept),
 * not a sort of the vocabulary.
 */
public final class TokenLogprobs
{
    // exponentials are taken a block at a time, so a 128k vocabulary needs no row-sized scratch array
    private static final int BLOCK = 1024;

    private TokenLogprobs() {}

    /** The log probability of {@code tokenId} in {@code logits}, with the {@code topN} most likely ids (ties toward the lower id). */
    public static TokenLogprob of(float[] logits, int tokenId, int topN)
    {
        requireNonNull(logits, "logits is null");
        if (tokenId < 0 || tokenId >= logits.length) {
            throw new IllegalArgumentException("token id " + tokenId + " is outside the vocabulary [0, " + logits.length + ")");
        }
        if (topN < 0 || topN > Math.min(LogprobRequest.MAX_TOP_N, logits.length)) {
            throw new IllegalArgumentException("topN must be in 0.." + Math.min(LogprobRequest.MAX_TOP_N, logits.length) + ", got " + topN);
        }
        double max = Double.NEGATIVE_INFINITY;
        for (float logit : logits) {
            max = Math.max(max, logit);
        }
        double shift = max + StrictMath.log(sumOfExps(logits, max));
        int[] topIds = new int[topN];
        float[] topLogprobs = new float[topN];
        int kept = 0;
        for (int id = 0; id < logits.length && topN > 0; id++) {
            float value = logprob(logits[id], shift);
            // ids arrive in ascending order, so an equal value never displaces a kept (lower) id
            if (kept == topN && !(value > topLogprobs[topN - 1])) {
                continue;
            }
            int at = kept < topN ? kept++ : topN - 1;
            while (at > 0 && value > topLogprobs[at - 1]) {
                topIds[at] = topIds[at - 1];
                topLogprobs[at] = topLogprobs[at - 1];
                at--;
            }
            topIds[at] = id;
            topLogprobs[at] = value;
        }
        return new TokenLogprob(tokenId, logprob(logits[tokenId], shift), topIds, topLogprobs);
    }

    /**
     * The first prompt position a request's {@code Logprobs.input} covers: {@code max(inputStart, 1)} (position 0 has nothing
     * before it), or the prompt's length (no entries) when it asked for none.
     */
    public static int inputFrom(LogprobRequest request, int promptLength)
    {
        requireNonNull(request, "request is null");
        return request.wantsInput() ? Math.min(promptLength, Math.max(1, request.inputStart())) : promptLength;
    }

    private static float logprob(float logit, double shift)
    {
        return (float) (logit - shift);
    }

    private static double sumOfExps(float[] logits, double max)
    {
        double[] block = new double[Math.min(BLOCK, logits.length)];
        double sum = 0;
        for (int from = 0; from < logits.length; from += block.length) {
            int length = Math.min(block.length, logits.length - from);
            for (int i = 0; i < length; i++) {
                block[i] = logits[from + i] - max;
            }
            ExactExp.exp(block, 0, block, 0, length);
            for (int i = 0; i < length; i++) {
                sum += block[i];
            }
        }
        return sum;
    }
}
