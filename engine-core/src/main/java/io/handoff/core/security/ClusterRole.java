package io.handoff.core.security;

/**
 * Who a node says it is in a {@link ClusterHandshake}: both sides' roles are under both proofs, so a proof made
 * by a prefill for a decode cannot be replayed by anyone as another pairing (or reflected back at its maker).
 * The codes are on the wire; never renumber them.
 */
public enum ClusterRole
{
    PREFILL(1),
    DECODE(2),
    ROUTER(3),
    TRANSFER_SENDER(4),
    TRANSFER_RECEIVER(5),
    /** Rank 0 of a tensor-parallel group: it leads the step. */
    RANK_LEADER(6),
    /** Rank 1 or higher of a tensor-parallel group. */
    RANK_WORKER(7);

    private final byte code;

    ClusterRole(int code)
    {
        this.code = (byte) code;
    }

    byte code()
    {
        return code;
    }

    static ClusterRole of(byte code)
    {
        for (ClusterRole role : values()) {
            if (role.code == code) {
                return role;
            }
        }
        return null;
    }
}
