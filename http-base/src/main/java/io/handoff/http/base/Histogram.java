package io.handoff.http.base;

import java.util.Arrays;

/**
 * A Prometheus histogram: fixed upper bounds (seconds), counts per bucket, sum and count. Observations
 * and snapshots are serialized, so a snapshot's {@code +Inf} bucket always equals its count.
 */
public final class Histogram
{
    /** Time to first token and end-to-end latency. */
    public static final double[] LATENCY_BUCKETS = {0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300};
    /** Time between consecutive output tokens of one request. */
    public static final double[] INTER_TOKEN_BUCKETS = {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5};

    public record Snapshot(double[] upperBounds, long[] cumulativeCounts, double sum, long count) {}

    private final double[] upperBounds;
    private final long[] counts;
    private double sum;
    private long count;

    public Histogram(double[] upperBounds)
    {
        for (int i = 1; i < upperBounds.length; i++) {
            if (!(upperBounds[i] > upperBounds[i - 1])) {
                throw new IllegalArgumentException("bucket bounds must increase: " + Arrays.toString(upperBounds));
            }
        }
        this.upperBounds = upperBounds.clone();
        this.counts = new long[upperBounds.length];
    }

    public synchronized void observe(double value)
    {
        int bucket = Arrays.binarySearch(upperBounds, value);
        bucket = bucket >= 0 ? bucket : -bucket - 1; // first bound >= value ("le" is inclusive)
        if (bucket < counts.length) {
            counts[bucket]++;
        }
        sum += value;
        count++;
    }

    public synchronized Snapshot snapshot()
    {
        long[] cumulative = new long[counts.length];
        long running = 0;
        for (int i = 0; i < counts.length; i++) {
            running += counts[i];
            cumulative[i] = running;
        }
        return new Snapshot(upperBounds.clone(), cumulative, sum, count);
    }
}
