package io.handoff.core.security;

import io.handoff.trace.ConnectionRefusals;
import org.apache.logging.log4j.LogManager;
import org.apache.logging.log4j.Logger;

import java.time.Duration;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.LongSupplier;

import static java.util.Objects.requireNonNull;

/**
 * Peers refused for not authenticating (or for breaking the protocol before they did): a counter for
 * {@code /metrics} ({@code handoff_cluster_auth_failures_total}), and the process's {@link ConnectionRefusals}, which
 * counts every dropped or refused cluster connection by listener and reason and logs them rate-limited. Connections
 * dropped for other reasons (a cap, a deadline, a peer that left before its hello) go to {@link #refusals} directly.
 */
public final class AuthFailures
{
    private static final Logger log = LogManager.getLogger(AuthFailures.class);

    private final AtomicLong total = new AtomicLong();
    private final ConnectionRefusals refusals;

    public AuthFailures()
    {
        this(new ConnectionRefusals(log::warn));
    }

    public AuthFailures(LongSupplier clock, Duration interval)
    {
        this(new ConnectionRefusals(log::warn, clock, interval));
    }

    public AuthFailures(ConnectionRefusals refusals)
    {
        this.refusals = requireNonNull(refusals, "refusals is null");
    }

    /**
     * Counts one peer refused for failing authentication or the protocol before it, and reports it to {@link #refusals}.
     *
     * @param listener the listener's metric label: "control" or "transfer"
     * @param peerAddress the peer's address (host, without the port: each connection has a new port)
     * @param kind the class of refusal, e.g. an {@link AuthenticationException.Failure} name
     */
    public void refused(String listener, String peerAddress, String kind, String reason)
    {
        total.incrementAndGet();
        refusals.refused(listener, String.valueOf(peerAddress), kind, reason);
    }

    /** A refusal of an authentication failure. */
    public void refused(String listener, String peerAddress, AuthenticationException failure)
    {
        refused(listener, peerAddress, failure.failure().name().toLowerCase(java.util.Locale.ROOT).replace('_', '-'),
                "cluster authentication failed: " + failure.getMessage());
    }

    /** Counts a failure the caller reports itself (this node's own attempt to authenticate to a peer). */
    public void failed()
    {
        total.incrementAndGet();
    }

    /** Every authentication failure counted so far. */
    public long total()
    {
        return total.get();
    }

    /** Every dropped or refused connection of this process's cluster listeners, by listener and reason. */
    public ConnectionRefusals refusals()
    {
        return refusals;
    }
}
