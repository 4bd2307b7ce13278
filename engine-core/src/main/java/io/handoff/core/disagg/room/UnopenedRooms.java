package io.handoff.core.disagg.room;

import io.handoff.spi.transfer.RoomKey;

import java.util.ArrayList;
import java.util.Collections;
import java.util.HashSet;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;

import static java.util.Objects.requireNonNull;

/**
 * A prefill's rooms that a decode named (its claim, its page list) before this prefill had their request. The router
 * sends a request's two halves at once, so a claim may overtake its request; but when the request never comes (the router
 * died between its two sends, the request broke before it reached the scheduler), the decode would wait with receiving
 * pages until its own, long deadline. A room whose request is queued here waits for its admission however long the queue
 * takes; any other is {@linkplain #due due} once the allowance (the bootstrapping deadline) has passed since a decode first named it, and the
 * prefill then tells that decode its request never came. Thread-safe; at most {@code bound} rooms are tracked, and the
 * oldest beyond that is due at once.
 *
 * @param <C> where the decode named the room, so that the answer goes back there
 */
public final class UnopenedRooms<C>
{
    /** A room that came due, and where its decode named it. */
    public record Due<C>(RoomKey room, C from) {}

    private record Named<C>(C from, long sinceNanos) {}

    private final long allowanceNanos;
    private final int bound;
    private final LinkedHashMap<RoomKey, Named<C>> named = new LinkedHashMap<>();
    private final Set<RoomKey> queued = new HashSet<>();
    // the last rooms opened or dequeued: the notice that their request was queued may come after the scheduler admitted or dropped it
    private final Set<RoomKey> recentlyLeft = Collections.newSetFromMap(new LinkedHashMap<>(16, 0.75f, false)
    {
        @Override
        protected boolean removeEldestEntry(Map.Entry<RoomKey, Boolean> eldest)
        {
            return size() > bound;
        }
    });
    private final List<Due<C>> overflow = new ArrayList<>();

    public UnopenedRooms(long allowanceNanos, int bound)
    {
        if (allowanceNanos <= 0 || bound < 1) {
            throw new IllegalArgumentException("allowance and bound must be positive: allowance=" + allowanceNanos + " ns, bound=" + bound);
        }
        this.allowanceNanos = allowanceNanos;
        this.bound = bound;
    }

    /** A decode named {@code room}, which has no live room here; the first naming counts. */
    public synchronized void named(RoomKey room, C from, long nowNanos)
    {
        requireNonNull(room, "room is null");
        requireNonNull(from, "from is null");
        if (named.containsKey(room)) {
            return;
        }
        if (named.size() >= bound) {
            Iterator<Map.Entry<RoomKey, Named<C>>> eldest = named.entrySet().iterator();
            Map.Entry<RoomKey, Named<C>> entry = eldest.next();
            eldest.remove();
            if (!queued.contains(entry.getKey())) {
                overflow.add(new Due<>(entry.getKey(), entry.getValue().from()));
            }
        }
        named.put(room, new Named<>(from, nowNanos));
    }

    /** The request of {@code room} reached this prefill's queue: it waits for its admission, without a deadline here. */
    public synchronized void queued(RoomKey room)
    {
        if (!recentlyLeft.contains(requireNonNull(room, "room is null"))) {
            queued.add(room);
        }
    }

    /** The request of {@code room} was admitted: its room is live and answers for itself. */
    public synchronized void opened(RoomKey room)
    {
        queued.remove(room);
        named.remove(room);
        recentlyLeft.add(room);
    }

    /** The request of {@code room} ended before its admission; where a decode named the room, if one did (it must hear it). */
    public synchronized Optional<C> dequeued(RoomKey room)
    {
        queued.remove(room);
        recentlyLeft.add(room);
        Named<C> found = named.remove(room);
        return found == null ? Optional.empty() : Optional.of(found.from());
    }

    /** The rooms named at least the allowance ago whose request is not queued here; each is returned once, and forgotten. */
    public synchronized List<Due<C>> due(long nowNanos)
    {
        List<Due<C>> due = new ArrayList<>(overflow);
        overflow.clear();
        for (Iterator<Map.Entry<RoomKey, Named<C>>> entries = named.entrySet().iterator(); entries.hasNext(); ) {
            Map.Entry<RoomKey, Named<C>> entry = entries.next();
            if (nowNanos - entry.getValue().sinceNanos() >= allowanceNanos && !queued.contains(entry.getKey())) {
                entries.remove();
                due.add(new Due<>(entry.getKey(), entry.getValue().from()));
            }
        }
        return due;
    }

    /** Rooms named and not yet opened, dequeued or due. */
    public synchronized int size()
    {
        return named.size();
    }
}
