package io.handoff.demo;

import java.util.Arrays;
import java.util.Optional;

/**
 * The median and the 99th percentile of a set of latencies, in milliseconds. Percentiles interpolate
 * linearly between the two nearest ranks (NumPy's default), so serving benchmarks that use NumPy report
 * the same figure for the same samples.
 */
public record Percentiles(double p50, double p99)
{
    /** Empty when there are no samples (no request completed, or none produced a second token). */
    public static Optional<Percentiles> of(double[] samples)
    {
        if (samples.length == 0) {
            return Optional.empty();
        }
        double[] sorted = samples.clone();
        Arrays.sort(sorted);
        return Optional.of(new Percentiles(percentile(sorted, 50), percentile(sorted, 99)));
    }

    /** The {@code q}-th percentile (0..100) of ascending {@code sorted}. */
    public static double percentile(double[] sorted, double q)
    {
        if (sorted.length == 0) {
            throw new IllegalArgumentException("no samples");
        }
        if (!(q >= 0 && q <= 100)) {
            throw new IllegalArgumentException("percentile must be in 0..100, got " + q);
        }
        double rank = q / 100 * (sorted.length - 1);
        int below = (int) Math.floor(rank);
        int above = Math.min(below + 1, sorted.length - 1);
        return sorted[below] + (sorted[above] - sorted[below]) * (rank - below);
    }
}
