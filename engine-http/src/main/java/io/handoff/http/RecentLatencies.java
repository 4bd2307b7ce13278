package io.handoff.http;

import java.util.Arrays;
import java.util.OptionalDouble;
import java.util.function.LongSupplier;

import static java.util.Objects.requireNonNull;

/**
 * The latencies observed over the last {@link #WINDOW_NANOS} (at most {@link #CAPACITY} of them, the newest kept), for a
 * percentile of recent traffic: what {@code /health} reports under {@code load} and a router's SLO planner reads.
 * Thread-safe.
 */
final class RecentLatencies
{
    static final long WINDOW_NANOS = 30_000_000_000L;
    static final int CAPACITY = 4096;

    private final LongSupplier clock;
    private final long[] at = new long[CAPACITY];
    private final double[] seconds = new double[CAPACITY];
    private int next;
    private int size;

    RecentLatencies(LongSupplier clock)
    {
        this.clock = requireNonNull(clock, "clock is null");
    }

    synchronized void observe(double value)
    {
        at[next] = clock.getAsLong();
        seconds[next] = value;
        next = (next + 1) % CAPACITY;
        size = Math.min(size + 1, CAPACITY);
    }

    /** The {@code quantile} (0 to 1) of the values observed within the window; empty when there were none. */
    synchronized OptionalDouble quantile(double quantile)
    {
        long now = clock.getAsLong();
        double[] recent = new double[size];
        int count = 0;
        for (int i = 0; i < size; i++) {
            if (now - at[i] <= WINDOW_NANOS) {
                recent[count++] = seconds[i];
            }
        }
        if (count == 0) {
            return OptionalDouble.empty();
        }
        Arrays.sort(recent, 0, count);
        // the nearest-rank quantile
        int rank = Math.clamp((long) Math.ceil(quantile * count) - 1, 0, count - 1);
        return OptionalDouble.of(recent[rank]);
    }
}
