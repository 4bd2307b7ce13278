package io.handoff.trace;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;

import static java.util.Objects.requireNonNull;

/**
 * The timelines of the last {@code capacity} requests this node saw ({@code handoff.debug.timeline-requests}),
 * by rid; an older one is evicted when a new one begins. Lookups are lock-free; only {@link #begin} takes the
 * store's lock. With capacity 0 nothing is kept and every timeline is {@link RequestTimeline#NONE}.
 */
public final class Timelines
{
    public static final int DEFAULT_REQUESTS = 1000;
    /** The most {@code handoff.debug.timeline-requests} allows: about 64 entries each, a few MiB at most. */
    public static final int MAX_REQUESTS = 100_000;
    public static final Timelines NONE = new Timelines(0);

    private final int capacity;
    private final TimelineClock clock;
    private final Map<String, RequestTimeline> byRid = new ConcurrentHashMap<>();
    // begin order, oldest first; guarded by itself, and byRid changes only under it
    private final Deque<RequestTimeline> order = new ArrayDeque<>();

    public Timelines(int capacity)
    {
        this(capacity, TimelineClock.SYSTEM);
    }

    public Timelines(int capacity, TimelineClock clock)
    {
        if (capacity < 0 || capacity > MAX_REQUESTS) {
            throw new IllegalArgumentException("timelines are kept for 0.." + MAX_REQUESTS + " requests, not " + capacity
                    + " (handoff.debug.timeline-requests)");
        }
        this.capacity = capacity;
        this.clock = requireNonNull(clock, "clock is null");
    }

    public int capacity()
    {
        return capacity;
    }

    /**
     * A timeline for {@code rid}, with {@code first} as its next entry. A kept timeline of the same rid that ended in
     * failure is continued, so that a retry shows the failure before it (its first entry says {@code retry}); any other
     * kept one (a client reusing a rid) is replaced: the newest request is the one to explain.
     */
    public RequestTimeline begin(String rid, TimelineEvent first, String detail)
    {
        requireNonNull(rid, "rid is null");
        if (capacity == 0) {
            return RequestTimeline.NONE;
        }
        synchronized (order) {
            RequestTimeline previous = byRid.get(rid);
            if (previous != null && previous.snapshot().failed()) {
                previous.record(first, detail.isEmpty() ? "retry" : "retry " + detail);
                // a retried request is as recent as its retry
                order.remove(previous);
                order.addLast(previous);
                return previous;
            }
            RequestTimeline timeline = new RequestTimeline(rid, clock, true);
            timeline.record(first, detail);
            byRid.put(rid, timeline);
            if (previous != null) {
                order.remove(previous);
            }
            order.addLast(timeline);
            while (order.size() > capacity) {
                RequestTimeline evicted = order.pollFirst();
                byRid.remove(evicted.rid(), evicted);
            }
            return timeline;
        }
    }

    public Optional<RequestTimeline> find(String rid)
    {
        return Optional.ofNullable(byRid.get(requireNonNull(rid, "rid is null")));
    }

    /** The kept timeline of {@code rid}, or one that records nothing: for hooks that record into whatever is kept. */
    public RequestTimeline of(String rid)
    {
        return find(rid).orElse(RequestTimeline.NONE);
    }

    /** The kept rids, oldest first. */
    public List<String> rids()
    {
        synchronized (order) {
            List<String> rids = new ArrayList<>(order.size());
            for (RequestTimeline timeline : order) {
                rids.add(timeline.rid());
            }
            return rids;
        }
    }
}
