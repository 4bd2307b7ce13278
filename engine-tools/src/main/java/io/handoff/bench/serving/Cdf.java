package io.handoff.bench.serving;

import java.util.Arrays;

/**
 * The empirical distribution function of a set of samples, for a chart: x = the i-th smallest sample, y = the fraction
 * of samples at or below it, (i + 1) / n. Thinned to at most {@code maxPoints} evenly spaced ranks (the smallest and the
 * largest always kept), so a run of many thousand tokens still draws as a small SVG.
 */
public record Cdf(double[] x, double[] y)
{
    public static Cdf of(double[] samples, int maxPoints)
    {
        if (maxPoints < 2) {
            throw new IllegalArgumentException("maxPoints must be at least 2, was " + maxPoints);
        }
        double[] sorted = Arrays.stream(samples).filter(s -> !Double.isNaN(s)).sorted().toArray();
        int n = sorted.length;
        int points = Math.min(n, maxPoints);
        double[] x = new double[points];
        double[] y = new double[points];
        for (int p = 0; p < points; p++) {
            int rank = points == 1 ? 0 : (int) Math.round((double) p * (n - 1) / (points - 1));
            x[p] = sorted[rank];
            y[p] = (rank + 1) / (double) n;
        }
        return new Cdf(x, y);
    }
}
