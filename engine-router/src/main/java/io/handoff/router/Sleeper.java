package io.handoff.router;

import java.time.Duration;

/** Waits out a retry's backoff; a test's counts the pauses instead. */
@FunctionalInterface
interface Sleeper
{
    Sleeper SYSTEM = duration -> Thread.sleep(duration);

    void sleep(Duration duration)
            throws InterruptedException;
}
