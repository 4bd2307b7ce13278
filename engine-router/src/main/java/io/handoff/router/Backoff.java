package io.handoff.router;

import java.time.Duration;
import java.util.random.RandomGenerator;

import static java.util.Objects.requireNonNull;

/**
 * The pause before a retry: {@code initial × 2^(retry − 1)}, at most {@code max}, of which a random half is taken
 * off (so retries of requests that failed together spread out): retry {@code n} waits between half that and all of it.
 */
final class Backoff
{
    private final Duration initial;
    private final Duration max;
    private final RandomGenerator random;

    /** @param random the jitter (seeded in tests) */
    Backoff(Duration initial, Duration max, RandomGenerator random)
    {
        this.initial = requireNonNull(initial, "initial is null");
        this.max = requireNonNull(max, "max is null");
        this.random = requireNonNull(random, "random is null");
        if (initial.isNegative() || max.compareTo(initial) < 0) {
            throw new IllegalArgumentException("backoff must be 0 <= initial <= max, was initial " + initial + ", max " + max);
        }
    }

    /** The whole pause before retry {@code retry} (1 for the first), before jitter. */
    Duration ceiling(int retry)
    {
        if (retry < 1) {
            throw new IllegalArgumentException("retry counts from 1, was " + retry);
        }
        long nanos = initial.toNanos();
        for (int i = 1; i < retry && nanos < max.toNanos(); i++) {
            nanos = nanos * 2;
        }
        return Duration.ofNanos(Math.min(nanos, max.toNanos()));
    }

    /** The pause before retry {@code retry}: between half of {@link #ceiling} and all of it. */
    Duration delay(int retry)
    {
        long ceiling = ceiling(retry).toNanos();
        long half = ceiling / 2;
        long jitter;
        synchronized (this) {
            jitter = ceiling - half == 0 ? 0 : random.nextLong(ceiling - half + 1);
        }
        return Duration.ofNanos(half + jitter);
    }
}
