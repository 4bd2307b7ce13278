package io.handoff.bench.serving;

import java.util.OptionalDouble;

/**
 * Service-level objectives for goodput: a completed request meets them when its time to first token, every gap between
 * two of its tokens, and its end-to-end latency are each within the given bound (an absent bound is not checked).
 */
public record Slo(OptionalDouble ttftMillis, OptionalDouble itlMillis, OptionalDouble e2eMillis)
{
    public static final Slo NONE = new Slo(OptionalDouble.empty(), OptionalDouble.empty(), OptionalDouble.empty());

    public Slo
    {
        check("--slo-ttft-ms", ttftMillis);
        check("--slo-itl-ms", itlMillis);
        check("--slo-e2e-ms", e2eMillis);
    }

    private static void check(String option, OptionalDouble bound)
    {
        if (bound.isPresent() && !(bound.getAsDouble() > 0)) {
            throw new IllegalArgumentException(option + " must be a positive number of milliseconds, was " + bound.getAsDouble());
        }
    }

    public boolean any()
    {
        return ttftMillis.isPresent() || itlMillis.isPresent() || e2eMillis.isPresent();
    }

    public boolean met(Sample sample)
    {
        return sample.completed()
                && (ttftMillis.isEmpty() || sample.ttftMillis() <= ttftMillis.getAsDouble())
                && (itlMillis.isEmpty() || sample.maxItlMillis() <= itlMillis.getAsDouble())
                && (e2eMillis.isEmpty() || sample.e2eMillis() <= e2eMillis.getAsDouble());
    }
}
