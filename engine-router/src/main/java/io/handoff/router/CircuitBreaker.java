package io.handoff.router;

import java.time.Duration;
import java.util.Locale;
import java.util.function.LongSupplier;

import static java.util.Objects.requireNonNull;

/**
 * One server's circuit breaker: {@code failureThreshold} failed requests in a row open it, and an open server gets no
 * requests (as an unhealthy one) for {@code openDuration}; then it is half-open: one trial request may go there, and
 * its success closes the breaker, its failure opens it again. A trial that reports nothing within another
 * {@code openDuration} (its client went away) lets the next request be the trial. A threshold of 0 never opens.
 */
final class CircuitBreaker
{
    enum State
    {
        CLOSED,
        OPEN,
        HALF_OPEN;

        String label()
        {
            return name().toLowerCase(Locale.ROOT).replace('_', '-');
        }
    }

    private enum Event
    {
        SUCCESS,
        FAILURE,
        /** Asked whether it may be chosen (only time moves it). */
        ASKED,
        /** Chosen for a request: in half-open, that request is the trial. */
        CHOSEN
    }

    private final int failureThreshold;
    private final long openNanos;
    private final LongSupplier clock;
    // Guarded by this.
    private State state = State.CLOSED;
    private int failures;
    private long since;
    private boolean trialOut;

    /** @param clock nanoseconds, as {@link System#nanoTime()} (a fake one in tests) */
    CircuitBreaker(int failureThreshold, Duration openDuration, LongSupplier clock)
    {
        if (failureThreshold < 0) {
            throw new IllegalArgumentException("failureThreshold must not be negative, was " + failureThreshold);
        }
        requireNonNull(openDuration, "openDuration is null");
        if (openDuration.isNegative() || openDuration.isZero()) {
            throw new IllegalArgumentException("openDuration must be positive, was " + openDuration);
        }
        this.failureThreshold = failureThreshold;
        this.openNanos = openDuration.toNanos();
        this.clock = requireNonNull(clock, "clock is null");
    }

    /** A breaker that never opens. */
    static CircuitBreaker disabled()
    {
        return new CircuitBreaker(0, Duration.ofSeconds(1), System::nanoTime);
    }

    /** Whether a request may go to the server now. */
    synchronized boolean available()
    {
        on(Event.ASKED);
        return state == State.CLOSED || (state == State.HALF_OPEN && !trialOut);
    }

    /** The server was chosen for a request (after {@link #available()} said it may be). */
    synchronized void chosen()
    {
        on(Event.CHOSEN);
    }

    synchronized void succeeded()
    {
        on(Event.SUCCESS);
    }

    synchronized void failed()
    {
        on(Event.FAILURE);
    }

    synchronized State state()
    {
        on(Event.ASKED);
        return state;
    }

    /** Failed requests in a row, up to the last success. */
    synchronized int failuresInARow()
    {
        return failures;
    }

    /** The state and the failures in a row, for people. */
    synchronized String describe()
    {
        return state().label() + (failures > 0 ? " (" + failures + " failure" + (failures == 1 ? "" : "s") + " in a row)" : "");
    }

    private void on(Event event)
    {
        if (failureThreshold == 0) {
            return;
        }
        long now = clock.getAsLong();
        // time first: an open breaker past its duration is half-open; a trial that never reported is given up
        if (state == State.OPEN && now - since >= openNanos) {
            state = State.HALF_OPEN;
            trialOut = false;
        }
        else if (state == State.HALF_OPEN && trialOut && now - since >= openNanos) {
            trialOut = false;
        }
        switch (event) {
            case SUCCESS -> {
                state = State.CLOSED;
                failures = 0;
                trialOut = false;
            }
            case FAILURE -> {
                failures++;
                if (state == State.HALF_OPEN || failures >= failureThreshold) {
                    open(now);
                }
            }
            case ASKED -> {
            }
            case CHOSEN -> {
                if (state == State.HALF_OPEN) {
                    trialOut = true;
                    since = now;
                }
            }
        }
    }

    private void open(long now)
    {
        state = State.OPEN;
        since = now;
        trialOut = false;
    }
}
