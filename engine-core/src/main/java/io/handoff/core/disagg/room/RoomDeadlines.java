package io.handoff.core.disagg.room;

import java.time.Duration;

import static java.util.Objects.requireNonNull;

/**
 * How long a room may stay in each live phase without progress. A deadline is armed when a room enters a
 * phase and re-armed on every step of progress within it (a chunk, a completion), so a long prompt is not
 * failed for being long, only for stalling. Terminal phases have none, and nothing that releases a page
 * ever waits on one (invariant I2).
 *
 * <p>A sender's {@link RoomPhase#BOOTSTRAPPING} waits for the decode's claim ({@link ControlMessage.RoomClaim}, which a
 * decode sends as soon as it receives the request, before it queues it) under its own, shorter {@code claim} deadline, so
 * a room no decode was given fails in seconds; once claimed, it waits for the page list (sent when the decode admitted
 * the request) under the {@code bootstrapping} deadline, counted from the claim.
 *
 * @param bootstrapping receiver: connecting to the prefill (handshake, region registration) and sending its pages;
 *         sender: a claimed room waiting for the decode's page list
 * @param claim sender: waiting for a decode's claim, from admission
 */
public record RoomDeadlines(Duration bootstrapping, Duration waitingForInput, Duration transferring, Duration claim)
{
    public static final RoomDeadlines DEFAULT = new RoomDeadlines(Duration.ofSeconds(30), Duration.ofSeconds(300), Duration.ofSeconds(60),
            Duration.ofSeconds(5));

    public RoomDeadlines
    {
        check(bootstrapping, "bootstrapping");
        check(waitingForInput, "waitingForInput");
        check(transferring, "transferring");
        check(claim, "claim");
    }

    /** Deadlines whose claim allowance is the bootstrapping one. */
    public RoomDeadlines(Duration bootstrapping, Duration waitingForInput, Duration transferring)
    {
        this(bootstrapping, waitingForInput, transferring, bootstrapping);
    }

    /** The allowance of a live phase, in nanoseconds. */
    public long nanos(RoomPhase phase)
    {
        return switch (phase) {
            case BOOTSTRAPPING -> bootstrapping.toNanos();
            case WAITING_FOR_INPUT -> waitingForInput.toNanos();
            case TRANSFERRING -> transferring.toNanos();
            case SUCCESS, FAILED -> throw new IllegalArgumentException("terminal phase " + phase + " has no deadline");
        };
    }

    private static void check(Duration duration, String name)
    {
        requireNonNull(duration, name + " is null");
        if (duration.isNegative() || duration.isZero()) {
            throw new IllegalArgumentException(name + " deadline must be positive, was " + duration);
        }
    }
}
