package io.handoff.core.kv;

import static java.util.Objects.requireNonNull;

/**
 * Why it is safe to hand a quarantined page back to the free list (invariant I2). Each case is evidence
 * that no write into the page can land any more. There is deliberately no timeout case: a stalled
 * writer can outlive any timer (seed 003), so elapsed time never proves anything.
 */
public sealed interface ReleaseProof
{
    /** The sender acknowledged that no write is in flight for this room, generation and sender rank. */
    record DrainAck(long room, long generation, int senderRank)
            implements ReleaseProof
    {
        public DrainAck
        {
            if (senderRank < 0) {
                throw new IllegalArgumentException("sender rank must be >= 0, was " + senderRank);
            }
        }
    }

    /**
     * The transport writes through the receiver, which drops writes of a retired (room, generation), so
     * no late write can reach the page.
     */
    record ReceiverValidated(long room, long generation)
            implements ReleaseProof {}

    /**
     * The peer that could write can no longer reach this memory: connection torn down, memory
     * registration revoked, or its process gone.
     *
     * @param peer the peer, as the disaggregation layer names it
     * @param how what fenced it, e.g. "registration revoked"
     */
    record PeerFenced(String peer, String how)
            implements ReleaseProof
    {
        public PeerFenced
        {
            requireNonNull(peer, "peer is null");
            requireNonNull(how, "how is null");
        }
    }
}
