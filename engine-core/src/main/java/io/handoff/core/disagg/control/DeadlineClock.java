package io.handoff.core.disagg.control;

import java.time.Duration;
import java.util.concurrent.atomic.AtomicLong;

import static java.util.Objects.requireNonNull;

/**
 * Monotonic time for deadlines and liveness. Rooms and channels never read the system clock themselves,
 * so a test moves time with a {@link Manual} clock instead of sleeping.
 */
@FunctionalInterface
public interface DeadlineClock
{
    /** Nanoseconds from an arbitrary origin; only differences mean anything. */
    long nanos();

    static DeadlineClock system()
    {
        return System::nanoTime;
    }

    /** A clock that moves only when told to. Thread-safe. */
    final class Manual
            implements DeadlineClock
    {
        private final AtomicLong now = new AtomicLong();

        @Override
        public long nanos()
        {
            return now.get();
        }

        public long advance(Duration duration)
        {
            requireNonNull(duration, "duration is null");
            if (duration.isNegative()) {
                throw new IllegalArgumentException("a monotonic clock cannot go back: " + duration);
            }
            return now.addAndGet(duration.toNanos());
        }
    }
}
