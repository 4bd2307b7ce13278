package io.handoff.core.disagg.peer;

import io.handoff.core.disagg.control.ControlMessage.DrainAck;
import io.handoff.trace.PeerText;
import org.apache.logging.log4j.LogManager;
import org.apache.logging.log4j.Logger;

import java.time.Duration;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.LongSupplier;

import static java.util.Objects.requireNonNull;

/**
 * Whose drain ack counts on a decode: only the room's own prefill's. A drain ack releases quarantined pages
 * (invariant I2), so it must come from the process whose writes it speaks for: over the link the room was opened on,
 * or over a later connection to the same bootstrap address answered by the same process (its hello answer's host id
 * and pid), where a room whose connection closed asks again. An ack from any other connection is dropped, counted,
 * and logged at most once per interval.
 */
public final class DrainAckOrigins
{
    static final Duration LOG_INTERVAL = Duration.ofMinutes(1);
    private static final Logger log = LogManager.getLogger(DrainAckOrigins.class);

    private final AtomicLong refused = new AtomicLong();
    private final LongSupplier clock;
    private final long intervalNanos;
    private long loggedAt;
    private long unlogged = -1;

    public DrainAckOrigins()
    {
        this(System::nanoTime, LOG_INTERVAL);
    }

    public DrainAckOrigins(LongSupplier clock, Duration interval)
    {
        this.clock = requireNonNull(clock, "clock is null");
        this.intervalNanos = requireNonNull(interval, "interval is null").toNanos();
    }

    /** Whether {@code ack}, which arrived over {@code from}, may count for a room opened on {@code roomLink}. */
    public boolean accepts(DrainAck ack, DecodeToPrefillLinks.Link<?> roomLink, DecodeToPrefillLinks.Link<?> from)
    {
        if (from == roomLink || from.sameProcessAs(roomLink)) {
            return true;
        }
        refused.incrementAndGet();
        long suppressed;
        synchronized (this) {
            long now = clock.getAsLong();
            if (unlogged >= 0 && now - loggedAt < intervalNanos) {
                unlogged++;
                return false;
            }
            suppressed = Math.max(unlogged, 0);
            loggedAt = now;
            unlogged = 0;
        }
        log.warn("dropped a drain ack for room {} from prefill {} ({}): the room's pages were granted to prefill {} ({}), and only that "
                        + "process can say its writes stopped{}", ack.room(), PeerText.clean(from.address(), 100), describe(from),
                PeerText.clean(roomLink.address(), 100), describe(roomLink),
                suppressed == 0 ? "" : " (" + suppressed + " more such acks in the previous " + intervalNanos / 1_000_000_000 + " s were not logged)");
        return false;
    }

    /** Drain acks dropped for coming from another prefill than their room's. */
    public long refused()
    {
        return refused.get();
    }

    private static String describe(DecodeToPrefillLinks.Link<?> link)
    {
        return link.process().isEmpty() ? "no accepted hello" : "process " + PeerText.clean(link.process(), 200);
    }
}
