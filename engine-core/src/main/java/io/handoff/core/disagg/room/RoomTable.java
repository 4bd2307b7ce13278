package io.handoff.core.disagg.room;

import io.handoff.core.disagg.control.ControlMessage.RoomMessage;
import io.handoff.spi.transfer.RoomKey;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

import static java.util.Objects.requireNonNull;

/**
 * One side's live rooms, by room id, and the routing of control messages to them. A message whose
 * generation is older than the room's current or retired generation is dropped and counted (a late
 * message of a reused room id must never reach its successor). A message for a room not registered yet
 * is parked and handed back by {@link #register}: the router sends a request to both sides at once, so
 * the decode's first message can beat the prefill's own copy of the request. Parking is bounded; what
 * does not fit is dropped and counted.
 *
 * <p>A newer generation of a room id whose older generation is still registered (typically failed and waiting for
 * the drain ack that releases its pages) takes the id over; the older one is <em>superseded</em>, not cleared: it
 * still gets messages of its exact key (its drain ack) and stays listed until it is retired itself (invariant I2).
 *
 * @param <R> the room type ({@link SenderRoom} or {@link ReceiverRoom})
 */
public final class RoomTable<R>
{
    private static final int MAX_PARKED_PER_ROOM = 16;

    private final int maxParkedRooms;
    private final int maxRetiredRemembered;
    private final Map<Long, Entry<R>> live = new HashMap<>();
    // older generations of live room ids, still waiting to be retired
    private final Map<RoomKey, R> superseded = new HashMap<>();
    private final LinkedHashMap<RoomKey, List<RoomMessage>> parked = new LinkedHashMap<>();
    // room id -> newest retired generation; insertion-ordered so the oldest is forgotten first
    private final LinkedHashMap<Long, Integer> retired = new LinkedHashMap<>();
    private long dropped;

    private record Entry<R>(RoomKey key, R room) {}

    public RoomTable(int maxParkedRooms, int maxRetiredRemembered)
    {
        if (maxParkedRooms < 0 || maxRetiredRemembered < 0) {
            throw new IllegalArgumentException("bounds must be >= 0: parked=" + maxParkedRooms + " retired=" + maxRetiredRemembered);
        }
        this.maxParkedRooms = maxParkedRooms;
        this.maxRetiredRemembered = maxRetiredRemembered;
    }

    /**
     * Adds a room and returns the messages that arrived for it before, in arrival order, for the caller to
     * feed to it. Refuses a room id that is live with this generation or a newer one, or a generation that is not
     * newer than a retired one; a live older generation is superseded.
     */
    public synchronized List<RoomMessage> register(RoomKey key, R room)
    {
        requireNonNull(key, "key is null");
        requireNonNull(room, "room is null");
        Entry<R> current = live.get(key.roomId());
        if (current != null && key.generation() <= current.key().generation()) {
            throw new IllegalStateException("room id " + key.roomId() + " is live as " + current.key() + "; cannot register " + key);
        }
        Integer retiredGeneration = retired.get(key.roomId());
        if (retiredGeneration != null && key.generation() <= retiredGeneration) {
            throw new IllegalStateException("room " + key + " reuses a retired generation (newest retired: " + retiredGeneration + ")");
        }
        if (current != null) {
            superseded.put(current.key(), current.room());
        }
        live.put(key.roomId(), new Entry<>(key, room));
        List<RoomMessage> early = parked.remove(key);
        return early == null ? List.of() : early;
    }

    /** The room a message is for, when it is live; otherwise the message is parked or dropped, and empty is returned. */
    public synchronized Optional<R> route(RoomMessage message)
    {
        requireNonNull(message, "message is null");
        RoomKey key = message.room();
        Entry<R> current = live.get(key.roomId());
        if (current != null && current.key().equals(key)) {
            return Optional.of(current.room());
        }
        R older = superseded.get(key);
        if (older != null) {
            return Optional.of(older);
        }
        Integer retiredGeneration = retired.get(key.roomId());
        if ((current != null && key.generation() < current.key().generation())
                || (retiredGeneration != null && key.generation() <= retiredGeneration)) {
            dropped++;
            return Optional.empty();
        }
        park(key, message);
        return Optional.empty();
    }

    /** The live room with exactly this key; counts nothing (for the write guard). */
    public synchronized Optional<R> get(RoomKey key)
    {
        Entry<R> current = live.get(key.roomId());
        return current != null && current.key().equals(key) ? Optional.of(current.room()) : Optional.ofNullable(superseded.get(key));
    }

    /** Removes a settled room; later messages for its generation (or older) are dropped. */
    public synchronized void retire(RoomKey key)
    {
        requireNonNull(key, "key is null");
        Entry<R> current = live.get(key.roomId());
        if (current != null && current.key().equals(key)) {
            live.remove(key.roomId());
        }
        superseded.remove(key);
        int newest = Math.max(key.generation(), retired.getOrDefault(key.roomId(), -1));
        // re-inserted so that the most recently retired ids are forgotten last
        retired.remove(key.roomId());
        retired.put(key.roomId(), newest);
        while (retired.size() > maxRetiredRemembered) {
            retired.remove(retired.keySet().iterator().next());
        }
        for (Iterator<RoomKey> keys = parked.keySet().iterator(); keys.hasNext(); ) {
            RoomKey parkedKey = keys.next();
            if (parkedKey.roomId() == key.roomId() && parkedKey.generation() <= key.generation()) {
                dropped += parked.get(parkedKey).size();
                keys.remove();
            }
        }
    }

    /**
     * Retires a room that is not registered (never was, or no longer is) and reports whether it did: a peer gave it up
     * (its drain request), so a later registration of the key is refused and what was parked for it (a decode's page
     * list, its failure) is dropped. Nothing can then ever be written for it, and the drain may be acknowledged at once.
     * False for a registered room (live or superseded): that room answers the drain itself, after its own drain.
     */
    public synchronized boolean retireUnregistered(RoomKey key)
    {
        requireNonNull(key, "key is null");
        Entry<R> current = live.get(key.roomId());
        if ((current != null && current.key().equals(key)) || superseded.containsKey(key)) {
            return false;
        }
        retire(key);
        return true;
    }

    /** Whether messages for {@code key} wait here for its registration. */
    public synchronized boolean parked(RoomKey key)
    {
        return parked.containsKey(key);
    }

    /** Messages dropped: stale generations, and parked messages that did not fit or whose room retired unregistered. */
    public synchronized long dropped()
    {
        return dropped;
    }

    public synchronized int parkedRooms()
    {
        return parked.size();
    }

    /** A snapshot of the live rooms, e.g. to tick deadlines or to fail those of a lost peer. */
    public synchronized List<R> rooms()
    {
        List<R> rooms = new ArrayList<>(live.size() + superseded.size());
        for (Entry<R> entry : live.values()) {
            rooms.add(entry.room());
        }
        rooms.addAll(superseded.values());
        return rooms;
    }

    private void park(RoomKey key, RoomMessage message)
    {
        List<RoomMessage> messages = parked.get(key);
        if (messages == null) {
            if (parked.size() >= maxParkedRooms) {
                Iterator<List<RoomMessage>> oldest = parked.values().iterator();
                if (!oldest.hasNext()) {
                    dropped++;
                    return;
                }
                dropped += oldest.next().size();
                oldest.remove();
            }
            messages = new ArrayList<>();
            parked.put(key, messages);
        }
        if (messages.size() >= MAX_PARKED_PER_ROOM) {
            dropped++;
            return;
        }
        messages.add(message);
    }
}
