package io.handoff.core.model;

import java.util.Set;

import static java.util.Objects.requireNonNull;

/**
 * What the {@link Sampler} needs of a request besides the logits: which output token it samples, the output tokens
 * sampled before it (the penalties count them) and the ids that would end the request (suppressed below
 * {@code minNewTokens}).
 *
 * @param outputs the request's output tokens; only {@code [0, tokenIndex)} is read, and the array is neither written
 *        nor kept, so the scheduler passes its own buffer instead of a copy per token
 * @param tokenIndex the index in the output of the token being sampled
 * @param endIds the ids that end the request: its stop token ids, and the model's EOS ids unless it ignores EOS
 * @param allowed the tokens a constraint (a grammar) allows, a bit per id, low bit first; null: every token. Read, not kept.
 */
public record SamplingContext(int[] outputs, int tokenIndex, Set<Integer> endIds, long[] allowed)
{
    private static final int[] NO_OUTPUTS = new int[0];

    public SamplingContext
    {
        requireNonNull(outputs, "outputs is null");
        requireNonNull(endIds, "endIds is null");
        if (tokenIndex < 0 || tokenIndex > outputs.length) {
            throw new IllegalArgumentException("token index " + tokenIndex + " is outside the output buffer of " + outputs.length + " tokens");
        }
    }

    public SamplingContext(int[] outputs, int tokenIndex, Set<Integer> endIds)
    {
        this(outputs, tokenIndex, endIds, null);
    }

    /** The first output token of a request whose output ends on one of {@code endIds}. */
    public static SamplingContext first(Set<Integer> endIds)
    {
        return new SamplingContext(NO_OUTPUTS, 0, endIds);
    }
}
