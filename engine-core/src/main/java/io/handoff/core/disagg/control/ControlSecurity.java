package io.handoff.core.disagg.control;

import io.handoff.core.security.AuthFailures;
import io.handoff.core.security.ClusterRole;
import io.handoff.core.security.ClusterSecurity;

import static java.util.Objects.requireNonNull;

/**
 * What the control connections of one process share for security: the settings (secret, timeouts, limits), the
 * budget of frame bytes in flight, and the count and rate-limited log of refused peers.
 */
public record ControlSecurity(ClusterSecurity settings, FrameBudget budget, AuthFailures failures)
{
    /** The handshake's purpose label: a control-channel proof is worthless on a transfer connection. */
    static final String PURPOSE = "control";
    /** Decodes connect to prefills. */
    static final ClusterRole INITIATOR = ClusterRole.DECODE;
    static final ClusterRole RESPONDER = ClusterRole.PREFILL;
    /** What an unauthenticated peer is told, whatever was wrong: nothing about this node. */
    public static final String GENERIC_REFUSAL = "refused: this node admits only authenticated cluster members that say hello first "
            + "(check that every node has the same handoff.security.cluster-secret-file)";

    public ControlSecurity
    {
        requireNonNull(settings, "settings is null");
        requireNonNull(budget, "budget is null");
        requireNonNull(failures, "failures is null");
    }

    public static ControlSecurity of(ClusterSecurity settings)
    {
        return new ControlSecurity(settings, new FrameBudget(settings.frameBytesInFlight()), new AuthFailures());
    }

    /** No secret, loopback only (tests, and what no handoff.security settings mean). */
    public static ControlSecurity loopbackOnly()
    {
        return of(ClusterSecurity.loopbackOnly());
    }
}
