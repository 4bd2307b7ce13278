package io.handoff.core.kv;

import java.util.Arrays;

/**
 * How long quarantined pages stayed quarantined (invariant I2): one observation per quarantine, when its proof
 * released it, in fixed buckets, plus the longest one ended since start. A quarantine still open is not in here;
 * the page pool's accounting counts its pages. Thread-safe; every call is O(buckets).
 */
public final class QuarantineTimes
{
    /** Upper bounds in seconds: from a drain ack on loopback to a prefill stalled for minutes. */
    public static final double[] BUCKETS = {0.001, 0.005, 0.025, 0.1, 0.5, 1, 5, 30, 60, 300, 1800};

    /**
     * @param cumulativeCounts per bucket of {@link #BUCKETS}, the quarantines that ended within its bound
     * @param longestNanos the longest quarantine ended since start; 0 when none has
     */
    public record Snapshot(double[] upperBounds, long[] cumulativeCounts, double sumSeconds, long count, long longestNanos)
    {
        public static final Snapshot EMPTY = new Snapshot(BUCKETS.clone(), new long[BUCKETS.length], 0, 0, 0);

        public double longestSeconds()
        {
            return longestNanos / 1e9;
        }
    }

    private final long[] counts = new long[BUCKETS.length];
    private double sumSeconds;
    private long count;
    private long longestNanos;

    /** A quarantine ended, on its proof, after {@code nanos}. */
    public synchronized void ended(long nanos)
    {
        long duration = Math.max(0, nanos);
        double seconds = duration / 1e9;
        int bucket = Arrays.binarySearch(BUCKETS, seconds);
        bucket = bucket >= 0 ? bucket : -bucket - 1; // first bound >= the value ("le" is inclusive)
        if (bucket < counts.length) {
            counts[bucket]++;
        }
        sumSeconds += seconds;
        count++;
        longestNanos = Math.max(longestNanos, duration);
    }

    public synchronized Snapshot snapshot()
    {
        long[] cumulative = new long[counts.length];
        long running = 0;
        for (int i = 0; i < counts.length; i++) {
            running += counts[i];
            cumulative[i] = running;
        }
        return new Snapshot(BUCKETS.clone(), cumulative, sumSeconds, count, longestNanos);
    }
}
