package io.handoff.bench.serving;

import io.handoff.demo.Percentiles;

import java.util.Arrays;
import java.util.Optional;

/**
 * Mean and percentiles of a set of latencies in milliseconds. Percentiles interpolate linearly between the two nearest
 * ranks, as the demo's {@link Percentiles} (NumPy's default), so the figures agree with serving benchmarks that use NumPy.
 */
public record Distribution(double mean, double p50, double p90, double p99)
{
    /** Empty when there are no samples (NaN samples are left out). */
    public static Optional<Distribution> of(double[] samples)
    {
        double[] sorted = Arrays.stream(samples).filter(x -> !Double.isNaN(x)).sorted().toArray();
        if (sorted.length == 0) {
            return Optional.empty();
        }
        return Optional.of(new Distribution(Arrays.stream(sorted).sum() / sorted.length, Percentiles.percentile(sorted, 50),
                Percentiles.percentile(sorted, 90), Percentiles.percentile(sorted, 99)));
    }
}
