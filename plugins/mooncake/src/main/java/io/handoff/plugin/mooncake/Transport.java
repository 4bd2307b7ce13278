package io.handoff.plugin.mooncake;

import io.handoff.spi.transfer.TransferCapability;

import java.util.EnumSet;
import java.util.Locale;
import java.util.Set;

import static io.handoff.spi.transfer.TransferCapability.HEAD_SLICES;
import static io.handoff.spi.transfer.TransferCapability.DRAIN_ACK;
import static io.handoff.spi.transfer.TransferCapability.FORWARD_SYNC;
import static io.handoff.spi.transfer.TransferCapability.ONE_SIDED;
import static io.handoff.spi.transfer.TransferCapability.PIPELINED;
import static io.handoff.spi.transfer.TransferCapability.RECEIVER_VALIDATED_WRITES;
import static io.handoff.spi.transfer.TransferCapability.REMOTE;
import static io.handoff.spi.transfer.TransferCapability.SAME_HOST;

/**
 * How pages travel to a decode peer ({@code handoff.plugins.mooncake.transport}). Every transport waits on
 * the producer fence on its transfer thread (FORWARD_SYNC) and can say when a room has no write in flight
 * (DRAIN_ACK); they differ in who copies into the receiver's pool.
 */
enum Transport
{
    /** Per peer: {@link #SHM} when the receiver is on this host and exposed a shared file, else {@link #TCP}. */
    AUTO,
    /** Framed writes that the receiver checks against its write guard and copies into its own pool. */
    TCP,
    /** The sender maps the receiver's pool file and copies into it; the receiver is not involved. */
    SHM;

    static Transport parse(String value)
    {
        for (Transport transport : values()) {
            if (transport.id().equals(value)) {
                return transport;
            }
        }
        throw new IllegalArgumentException("handoff.plugins.mooncake.transport = \"" + value + "\": allowed: auto | tcp | shm");
    }

    String id()
    {
        return name().toLowerCase(Locale.ROOT);
    }

    /**
     * What this transport guarantees. AUTO may end up on either transport per peer, so it promises only what
     * both do, plus REMOTE: under AUTO a peer on another host always gets TCP, so the backend does work
     * between hosts. Each peer reports the exact set of the transport it chose.
     */
    Set<TransferCapability> capabilities()
    {
        return switch (this) {
            case TCP -> EnumSet.of(RECEIVER_VALIDATED_WRITES, REMOTE, SAME_HOST, DRAIN_ACK, FORWARD_SYNC, PIPELINED, HEAD_SLICES);
            case SHM -> EnumSet.of(ONE_SIDED, SAME_HOST, DRAIN_ACK, FORWARD_SYNC, HEAD_SLICES);
            case AUTO -> EnumSet.of(REMOTE, SAME_HOST, DRAIN_ACK, FORWARD_SYNC, HEAD_SLICES);
        };
    }
}
