package io.handoff.http.base.security;

import java.util.HashMap;
import java.util.Map;
import java.util.Optional;
import java.util.PriorityQueue;

/**
 * The router signatures a server accepted, each kept until its timestamp leaves the acceptance window: a second use
 * of one is a replayed call. Only signatures that verified are recorded, so only a holder of the cluster secret can
 * add to it, and it is bounded all the same: when {@code capacity} signatures are live at once, further calls are
 * refused until the oldest expire, rather than forgetting one that could then be replayed.
 */
final class UsedSignatures
{
    private record Expiry(long atMillis, String nonce) {}

    private final int capacity;
    private final Map<String, Long> live = new HashMap<>();
    private final PriorityQueue<Expiry> byExpiry = new PriorityQueue<>((a, b) -> Long.compare(a.atMillis(), b.atMillis()));

    UsedSignatures(int capacity)
    {
        if (capacity < 1) {
            throw new IllegalArgumentException("capacity must be >= 1, was " + capacity);
        }
        this.capacity = capacity;
    }

    /**
     * Records {@code nonce} as used until {@code expiresAtMillis}; empty when it was not used before and there is room,
     * else why the call is refused.
     */
    synchronized Optional<String> use(String nonce, long expiresAtMillis, long nowMillis)
    {
        while (!byExpiry.isEmpty() && byExpiry.peek().atMillis() < nowMillis) {
            live.remove(byExpiry.poll().nonce());
        }
        if (live.containsKey(nonce)) {
            return Optional.of("its signature was used before: a replayed call (the router signs every call anew)");
        }
        if (live.size() >= capacity) {
            return Optional.of("this server holds " + capacity + " router signatures of the last " + RouterSignature.WINDOW.toSeconds()
                    + " s already, its bound against replays: retry in a few seconds");
        }
        live.put(nonce, expiresAtMillis);
        byExpiry.add(new Expiry(expiresAtMillis, nonce));
        return Optional.empty();
    }

    synchronized int size()
    {
        return live.size();
    }
}
