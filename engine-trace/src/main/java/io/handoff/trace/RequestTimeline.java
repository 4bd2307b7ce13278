package io.handoff.trace;

import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

import static java.util.Objects.requireNonNull;

/**
 * One request's transitions on this node, each with its wall-clock time and its monotonic offset from the first.
 * Any thread may record (the scheduler, control readers, transfer threads); entries are few by construction (no
 * per-token entry), and past {@link #MAX_ENTRIES} only terminal ones are kept, the others counted as dropped.
 */
public final class RequestTimeline
{
    /** Entries kept per request; a long prompt's many chunks fill it, so later ones are counted, not kept. */
    public static final int MAX_ENTRIES = 64;
    // room past the cap for the request's last word (done or failed, and the router's routed)
    private static final int TERMINAL_RESERVE = 4;

    /** A timeline that records nothing: for requests of a store that keeps none. */
    public static final RequestTimeline NONE = new RequestTimeline("", TimelineClock.SYSTEM, false);

    /**
     * @param epochMicros wall-clock time, microseconds since the epoch
     * @param offsetNanos monotonic time since the timeline's start
     * @param detail what happened, as {@code key=value} words (e.g. {@code chunk=0 pages=4 bytes=65536})
     */
    public record Entry(TimelineEvent event, long epochMicros, long offsetNanos, String detail)
    {
        public Entry
        {
            requireNonNull(event, "event is null");
            requireNonNull(detail, "detail is null");
        }
    }

    /** What a reader sees: a copy. */
    public record Snapshot(String rid, long startEpochMicros, List<Entry> entries, int dropped)
    {
        public Snapshot
        {
            requireNonNull(rid, "rid is null");
            entries = List.copyOf(entries);
        }

        /**
         * Whether its latest attempt ended: a terminal entry since the last entry that starts one. Entries may follow
         * the end (a prefill's answer the router records after the client had its own, a quarantine released later).
         */
        public boolean ended()
        {
            return lastEnd().isPresent();
        }

        /** Ended, and in failure: what a retry of the same rid continues. */
        public boolean failed()
        {
            return lastEnd().map(end -> end.event() == TimelineEvent.FAILED
                    || end.event() == TimelineEvent.ROUTED && !end.detail().startsWith("status=2")).orElse(false);
        }

        private Optional<Entry> lastEnd()
        {
            for (Entry entry : entries.reversed()) {
                if (entry.event().terminal()) {
                    return Optional.of(entry);
                }
                if (entry.event().startsAttempt()) {
                    return Optional.empty();
                }
            }
            return Optional.empty();
        }
    }

    private final String rid;
    private final TimelineClock clock;
    private final boolean recording;
    private final long startNanos;
    private final long startEpochMicros;
    private final List<Entry> entries = new ArrayList<>();
    private int dropped;

    RequestTimeline(String rid, TimelineClock clock, boolean recording)
    {
        this.rid = requireNonNull(rid, "rid is null");
        this.clock = requireNonNull(clock, "clock is null");
        this.recording = recording;
        this.startNanos = clock.nanos();
        this.startEpochMicros = clock.epochMicros();
    }

    public String rid()
    {
        return rid;
    }

    public void record(TimelineEvent event)
    {
        record(event, "");
    }

    public void record(TimelineEvent event, String detail)
    {
        if (!recording) {
            return;
        }
        long nanos = clock.nanos();
        long epochMicros = clock.epochMicros();
        synchronized (entries) {
            int cap = event.terminal() ? MAX_ENTRIES + TERMINAL_RESERVE : MAX_ENTRIES;
            if (entries.size() >= cap) {
                dropped++;
                return;
            }
            entries.add(new Entry(event, epochMicros, nanos - startNanos, detail));
        }
    }

    /** The scheduler's last word on a request: {@link TimelineEvent#DONE}, or {@link TimelineEvent#FAILED} with its cause. */
    public void ended(FinishReason reason, FailureCause cause, String error)
    {
        if (!recording || reason == null) {
            return;
        }
        StringBuilder detail = new StringBuilder("reason=").append(reason.name().toLowerCase(java.util.Locale.ROOT));
        if (cause != null) {
            detail.append(" cause=").append(cause.label());
        }
        if (error != null) {
            detail.append(" error=").append(error);
        }
        boolean failed = reason == FinishReason.ERROR || reason == FinishReason.ABORT || cause != null;
        record(failed ? TimelineEvent.FAILED : TimelineEvent.DONE, detail.toString());
    }

    public Snapshot snapshot()
    {
        synchronized (entries) {
            return new Snapshot(rid, startEpochMicros, entries, dropped);
        }
    }
}
