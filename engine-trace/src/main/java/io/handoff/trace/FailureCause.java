package io.handoff.trace;

import java.util.Optional;

/**
 * Why a request failed, as one word a client, a router and a dashboard can act on: the {@code cause} label of
 * {@code handoff_request_failures_total}, the {@code cause} of a failed request's error body, and the last entry of
 * its timeline. The error text says the rest (which peer, which page, which deadline).
 */
public enum FailureCause
{
    /** A transfer backend reported a failed plan, or its connection broke. */
    TRANSPORT_FAILURE("transport_failure", true),
    /** A page's checksum on arrival differed from the one taken on prefill after the fence (I3). */
    CHECKSUM_MISMATCH("checksum_mismatch", true),
    /** The peer stopped answering (heartbeats), closed its connection, or its process went away. */
    PEER_LOST("peer_lost", true),
    /** A peer neither drained nor died within the drain deadline; it is suspect and no longer paired. */
    DRAIN_DEADLINE("drain_deadline_exceeded", true),
    /** The peer was refused at the handshake: authentication, or an incompatible model, layout or dtype. */
    HANDSHAKE_REFUSED("handshake_refused", false),
    /** The client aborted the request or went away. */
    CLIENT_ABORT("client_abort", false),
    /**
     * One half of a routed request never came. Prefill: no decode claimed the request's room (sent its page list) within
     * {@code handoff.disaggregation.claim-timeout}: the request carried a {@code bootstrap_room} no decode was given. Decode:
     * the prefill never received the request of the room this decode claimed within {@code bootstrapping-timeout} of the
     * claim (the router died between its two sends). Not retryable: the same request fails again unless both sides are sent the room.
     */
    ROOM_UNCLAIMED("room_unclaimed", false),
    /** A room state outlived its deadline (bootstrapping, waiting for input, transferring). */
    DEADLINE("deadline", true),
    /** A rank of the server's tensor-parallel group died, closed its link or stopped answering; the server needs a restart. */
    RANK_LOST("rank_lost", true),
    /** The server refused to start the request because it is draining: shutting down, or switching role. Another server can run it. */
    DRAINING("draining", true),
    /** Anything else the engine failed the request for (a failed forward step, a shutdown, a broken listener). */
    ENGINE("engine", false);

    /** What a failure of a cause counts against, in a router's circuit breakers and retries. */
    public enum Blame
    {
        /** The prefill-to-decode link: the KV did not arrive intact or in time. Both servers answered; neither is at fault alone. */
        LINK,
        /** The prefill, whichever server reported it (a decode reports a prefill that never drained). */
        PREFILL,
        /** The server that reported it. */
        SERVER,
        /** Nobody: the client ended it. */
        NOBODY
    }

    private final String label;
    private final boolean retryable;

    FailureCause(String label, boolean retryable)
    {
        this.label = label;
        this.retryable = retryable;
    }

    /** The cause with this {@link #label}, e.g. from a peer's room failure; empty for a label this build does not know. */
    public static Optional<FailureCause> fromLabel(String label)
    {
        for (FailureCause cause : values()) {
            if (cause.label.equals(label)) {
                return Optional.of(cause);
            }
        }
        return Optional.empty();
    }

    /** The metric label and error-body value, e.g. {@code checksum_mismatch}. */
    public String label()
    {
        return label;
    }

    /**
     * What a failure of this cause counts against: a checksum mismatch, a transport failure, a lost peer, a refused
     * handshake, an unclaimed room or a room deadline against the link between the pair (another prefill, or the same
     * pair again, may succeed; a healthy decode is not cut off for it); a drain deadline against the prefill; anything
     * else the engine failed against the server that reported it.
     */
    public Blame blame()
    {
        return switch (this) {
            case TRANSPORT_FAILURE, CHECKSUM_MISMATCH, PEER_LOST, HANDSHAKE_REFUSED, ROOM_UNCLAIMED, DEADLINE -> Blame.LINK;
            case DRAIN_DEADLINE -> Blame.PREFILL;
            case ENGINE, RANK_LOST -> Blame.SERVER;
            case CLIENT_ABORT, DRAINING -> Blame.NOBODY;
        };
    }

    /**
     * Whether running the same request again (on another prefill when there is one) may succeed: the failure was
     * in moving this request's KV, not in the request or the cluster's configuration.
     */
    public boolean retryable()
    {
        return retryable;
    }
}
