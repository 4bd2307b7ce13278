package io.handoff.trace;

import java.util.Locale;
import java.util.Optional;

/**
 * What a {@link RequestTimeline} entry says happened: the transitions of one request on a prefill, a decode, a
 * colocated engine or a router. The label is what {@code /debug/requests/{rid}} and {@code handoff inspect} print.
 */
public enum TimelineEvent
{
    // scheduler (every engine role)
    QUEUED,
    ADMITTED,
    /** A prompt chunk's forward completed (its fence). */
    FORWARD_DONE,
    FIRST_TOKEN,
    DONE(true),
    FAILED(true),

    // disaggregation rooms (prefill and decode)
    /** The room exists on both sides: the decode's pages reached the prefill, or the prefill's connection is ready on the decode. */
    BOOTSTRAP,
    PLAN_POSTED,
    PLAN_LANDED,
    PLAN_FAILED,
    /** The prefill sent the aux record (first token, page checksums). */
    AUX_SENT,
    /** The decode heard that a chunk's pages landed. */
    CHUNK_LANDED,
    CHECKSUMS_VERIFIED,
    CHECKSUM_MISMATCH,
    COMMIT,
    ROOM_FAILED,
    QUARANTINED,
    QUARANTINE_RELEASED,

    // router
    RECEIVED,
    PAIRED,
    SENT,
    RESPONSE,
    RETRIED,
    ROUTED(true);

    private final boolean terminal;

    TimelineEvent()
    {
        this(false);
    }

    TimelineEvent(boolean terminal)
    {
        this.terminal = terminal;
    }

    /** The request's last word on this node: kept even when the timeline's entry cap is reached. */
    public boolean terminal()
    {
        return terminal;
    }

    /** Whether it is the first entry of an attempt: a request queued on a server, or received (or retried) by a router. */
    public boolean startsAttempt()
    {
        return this == QUEUED || this == RECEIVED;
    }

    /** e.g. {@code plan_posted}. */
    public String label()
    {
        return name().toLowerCase(Locale.ROOT);
    }

    public static Optional<TimelineEvent> fromLabel(String label)
    {
        for (TimelineEvent event : values()) {
            if (event.label().equals(label)) {
                return Optional.of(event);
            }
        }
        return Optional.empty();
    }
}
