package io.handoff.core.model;

/**
 * How a request picks its next token, in the order the {@link Sampler} applies them:
 * <ol>
 * <li>below {@code minNewTokens} output tokens, the ids that would end the request (EOS unless ignored, and the
 *     request's stop token ids) cannot be picked: their logits become negative infinity;</li>
 * <li>penalties over the tokens of the output so far (as SGLang applies them: the prompt does not count), on the float
 *     logits, for each distinct earlier token in turn: {@code repetitionPenalty} divides its logit if positive and
 *     multiplies it otherwise (1 is off); {@code frequencyPenalty} times the number of earlier occurrences is
 *     subtracted, then {@code presencePenalty} once (0 is off);</li>
 * <li>a temperature of 0 is greedy (the highest penalized logit, ties toward the lowest id; the rules below cannot
 *     change it); otherwise the logits are divided by the temperature and turned into probabilities, and the tokens
 *     that may be drawn are a prefix of them ranked by probability (ties toward the lower id) cut three ways: only
 *     the {@code topK} most likely ({@code -1}: all); only the smallest most-likely set whose probability, out of the
 *     whole distribution, reaches {@code topP}; only those at least {@code minP} times as likely as the most likely
 *     token ({@code 0} is off). The most likely token is always kept, and a token of probability 0 is never drawn;</li>
 * <li>the draw, proportional to the kept tokens' probabilities, takes its randomness from {@code seed} and the
 *     token's index in the output, never from the batch it ran in or the node (prefill or decode) that ran it.</li>
 * </ol>
 * With every rule but temperature, {@code topP} and {@code seed} off, a token is exactly what plain nucleus sampling
 * picks.
 */
public record SamplingParams(
        float temperature,
        float topP,
        int topK,
        float minP,
        float repetitionPenalty,
        float frequencyPenalty,
        float presencePenalty,
        int minNewTokens,
        long seed)
{
    public static final SamplingParams GREEDY = new SamplingParams(0f, 1f, 0L);
    /** The largest penalty magnitude taken for frequency and presence (OpenAI's range is [-2, 2]). */
    public static final float MAX_ADDITIVE_PENALTY = 2f;
    /** The largest repetition penalty taken. */
    public static final float MAX_REPETITION_PENALTY = 2f;

    public SamplingParams
    {
        if (!(temperature >= 0) || Float.isInfinite(temperature)) {
            throw new IllegalArgumentException("temperature must be finite and >= 0, was " + temperature);
        }
        if (!(topP > 0 && topP <= 1)) {
            throw new IllegalArgumentException("top_p must be in (0, 1], was " + topP);
        }
        if (topK == 0 || topK < -1) {
            throw new IllegalArgumentException("top_k must be -1 (all tokens) or at least 1, was " + topK);
        }
        if (!(minP >= 0 && minP <= 1)) {
            throw new IllegalArgumentException("min_p must be in [0, 1], was " + minP);
        }
        if (!(repetitionPenalty > 0 && repetitionPenalty <= MAX_REPETITION_PENALTY)) {
            throw new IllegalArgumentException("repetition_penalty must be in (0, " + MAX_REPETITION_PENALTY + "], was " + repetitionPenalty);
        }
        if (!(Math.abs(frequencyPenalty) <= MAX_ADDITIVE_PENALTY)) {
            throw new IllegalArgumentException("frequency_penalty must be in [-2, 2], was " + frequencyPenalty);
        }
        if (!(Math.abs(presencePenalty) <= MAX_ADDITIVE_PENALTY)) {
            throw new IllegalArgumentException("presence_penalty must be in [-2, 2], was " + presencePenalty);
        }
        if (minNewTokens < 0) {
            throw new IllegalArgumentException("min_new_tokens must be at least 0, was " + minNewTokens);
        }
    }

    /** Temperature, nucleus and seed; every other rule off. */
    public SamplingParams(float temperature, float topP, long seed)
    {
        this(temperature, topP, -1, 0f, 1f, 0f, 0f, 0, seed);
    }

    public boolean greedy()
    {
        return temperature == 0f;
    }

    /** Whether a rule depends on the output so far (the sampler then needs the request's earlier tokens). */
    public boolean penalized()
    {
        return repetitionPenalty != 1f || frequencyPenalty != 0f || presencePenalty != 0f;
    }

    public SamplingParams withSeed(long newSeed)
    {
        return new SamplingParams(temperature, topP, topK, minP, repetitionPenalty, frequencyPenalty, presencePenalty, minNewTokens, newSeed);
    }
}
