package io.handoff.core.model;

/**
 * How a request picks its next token. A temperature of 0 is greedy; otherwise tokens are drawn from the
 * smallest set of most likely tokens whose probability reaches {@code topP}, with randomness derived
 * from {@code seed} and the token's index in the output, never from the batch it ran in.
 */
public record SamplingParams(float temperature, float topP, long seed)
{
    public static final SamplingParams GREEDY = new SamplingParams(0f, 1f, 0L);

    public SamplingParams
    {
        if (!(temperature >= 0) || Float.isInfinite(temperature)) {
            throw new IllegalArgumentException("temperature must be finite and >= 0, was " + temperature);
        }
        if (!(topP > 0 && topP <= 1)) {
            throw new IllegalArgumentException("top_p must be in (0, 1], was " + topP);
        }
    }

    public boolean greedy()
    {
        return temperature == 0f;
    }
}
