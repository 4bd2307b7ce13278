package io.handoff.core.scheduler;

import java.util.Arrays;

import static java.util.Objects.requireNonNull;

/**
 * The log probability of one token at one position, and the most likely alternatives there (most likely first,
 * ties toward the lower id). Arrays compare by content; callers must not mutate them.
 */
public record TokenLogprob(int tokenId, float logprob, int[] topIds, float[] topLogprobs)
{
    public TokenLogprob
    {
        requireNonNull(topIds, "topIds is null");
        requireNonNull(topLogprobs, "topLogprobs is null");
        if (topIds.length != topLogprobs.length) {
            throw new IllegalArgumentException(topIds.length + " top ids but " + topLogprobs.length + " top logprobs");
        }
    }

    @Override
    public boolean equals(Object o)
    {
        return o instanceof TokenLogprob other && tokenId == other.tokenId && Float.floatToIntBits(logprob) == Float.floatToIntBits(other.logprob)
                && Arrays.equals(topIds, other.topIds) && Arrays.equals(topLogprobs, other.topLogprobs);
    }

    @Override
    public int hashCode()
    {
        return 31 * (31 * tokenId + Float.hashCode(logprob)) + Arrays.hashCode(topIds);
    }

    @Override
    public String toString()
    {
        return "TokenLogprob[" + tokenId + "=" + logprob + ", top=" + Arrays.toString(topIds) + "]";
    }
}
