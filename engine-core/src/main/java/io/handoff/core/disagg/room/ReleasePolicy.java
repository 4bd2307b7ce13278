package io.handoff.core.disagg.room;

import io.handoff.spi.transfer.TransferCapability;

import java.util.Set;

import static java.util.Objects.requireNonNull;

/**
 * How a decode may reuse a failed room's destination pages (invariant I2). The only place that turns a
 * transport's capabilities into that decision. None of the cases is a timer: a stalled writer can outlive
 * any timeout (seed 003), so each waits for evidence that no write can still land.
 */
public enum ReleasePolicy
{
    /** The receiver copies every write itself and drops those of a retired room: release at once. */
    RELEASE_NOW("the transport validates writes on the receiver"),
    /** Quarantine, ask the sender to drain the room, release on its drain ack (or when the peer is fenced). */
    AWAIT_DRAIN_ACK("the sender acknowledges a drained room"),
    /** Quarantine until the peer is fenced: its connection torn down, its registration revoked, or its process gone. */
    AWAIT_PEER_FENCE("the transport offers neither receiver validation nor drain acks");

    private final String reason;

    ReleasePolicy(String reason)
    {
        this.reason = reason;
    }

    /** The policy for a connection with these capabilities: the strongest proof it can give. */
    public static ReleasePolicy from(Set<TransferCapability> capabilities)
    {
        requireNonNull(capabilities, "capabilities is null");
        if (capabilities.contains(TransferCapability.RECEIVER_VALIDATED_WRITES)) {
            return RELEASE_NOW;
        }
        if (capabilities.contains(TransferCapability.DRAIN_ACK)) {
            return AWAIT_DRAIN_ACK;
        }
        return AWAIT_PEER_FENCE;
    }

    /** Why this policy was chosen, for the startup report. */
    public String reason()
    {
        return reason;
    }
}
