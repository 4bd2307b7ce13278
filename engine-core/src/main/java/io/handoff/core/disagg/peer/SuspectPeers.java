package io.handoff.core.disagg.peer;

import io.handoff.spi.transfer.RoomKey;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;

import static java.util.Objects.requireNonNull;

/**
 * A decode's suspect prefills: a prefill is suspect once a room of its has waited {@code drain-deadline} for the
 * proof that releases its quarantined pages (a drain ack, a fenced peer). Suspicion changes what the engine does
 * about the peer (fence it, stop pairing it), never what happens to the pages: they stay quarantined until their
 * proof, however late (invariant I2). A peer stops being suspect when every room it was suspect for has its proof.
 * Thread-safe; every call is O(rooms waiting).
 */
public final class SuspectPeers
{
    private record Waiting(String peer, long sinceNanos) {}

    private final long deadlineNanos;
    private final Map<RoomKey, Waiting> waiting = new HashMap<>();
    // peer -> the rooms it is suspect for, sorted so reports are stable
    private final Map<String, Set<RoomKey>> suspects = new TreeMap<>();
    // peer -> when it became suspect or was last asked again for its drains
    private final Map<String, Long> askedNanos = new HashMap<>();

    public SuspectPeers(Duration drainDeadline)
    {
        this.deadlineNanos = requireNonNull(drainDeadline, "drainDeadline is null").toNanos();
    }

    /** The room's pages were quarantined at {@code nowNanos}, waiting for a proof from {@code peer}. */
    public synchronized void quarantined(RoomKey room, String peer, long nowNanos)
    {
        waiting.putIfAbsent(requireNonNull(room, "room is null"), new Waiting(requireNonNull(peer, "peer is null"), nowNanos));
    }

    /** The room's proof arrived (or it never needed one). */
    public synchronized void proven(RoomKey room)
    {
        Waiting was = waiting.remove(room);
        if (was == null) {
            return;
        }
        Set<RoomKey> rooms = suspects.get(was.peer());
        if (rooms != null && rooms.remove(room) && rooms.isEmpty()) {
            suspects.remove(was.peer());
            askedNanos.remove(was.peer());
        }
    }

    /** The peers that became suspect at {@code nowNanos}: each is returned once, when its first room passes the deadline. */
    public synchronized List<String> due(long nowNanos)
    {
        List<String> newly = new ArrayList<>();
        for (Map.Entry<RoomKey, Waiting> entry : waiting.entrySet()) {
            Waiting room = entry.getValue();
            if (nowNanos - room.sinceNanos() < deadlineNanos) {
                continue;
            }
            Set<RoomKey> rooms = suspects.get(room.peer());
            if (rooms == null) {
                rooms = new TreeSet<>((a, b) -> a.roomId() != b.roomId() ? Long.compare(a.roomId(), b.roomId())
                        : Integer.compare(a.generation(), b.generation()));
                suspects.put(room.peer(), rooms);
                askedNanos.put(room.peer(), nowNanos);
                newly.add(room.peer());
            }
            rooms.add(entry.getKey());
        }
        return newly;
    }

    /**
     * The suspect peers to ask again for their drains at {@code nowNanos} (over a new connection): each at most once per
     * drain deadline, the first time one deadline after it became suspect.
     */
    public synchronized List<String> askAgain(long nowNanos)
    {
        List<String> due = new ArrayList<>();
        for (Map.Entry<String, Long> asked : askedNanos.entrySet()) {
            if (nowNanos - asked.getValue() >= deadlineNanos) {
                asked.setValue(nowNanos);
                due.add(asked.getKey());
            }
        }
        due.sort(null);
        return due;
    }

    /** The suspect peers now, in order. */
    public synchronized List<String> peers()
    {
        return List.copyOf(suspects.keySet());
    }

    /** The rooms {@code peer} is suspect for (their pages are quarantined), in order. */
    public synchronized List<RoomKey> rooms(String peer)
    {
        Set<RoomKey> rooms = suspects.get(peer);
        return rooms == null ? List.of() : List.copyOf(rooms);
    }
}
