package io.handoff.trace;

import java.time.Instant;

/**
 * The two clocks of a timeline entry: wall-clock epoch microseconds, so that entries of different processes can be
 * put side by side, and monotonic nanoseconds, so that offsets within one process never run backwards.
 */
public interface TimelineClock
{
    TimelineClock SYSTEM = new TimelineClock()
    {
        @Override
        public long epochMicros()
        {
            Instant now = Instant.now();
            return now.getEpochSecond() * 1_000_000 + now.getNano() / 1_000;
        }

        @Override
        public long nanos()
        {
            return System.nanoTime();
        }
    };

    long epochMicros();

    long nanos();
}
