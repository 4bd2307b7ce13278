package io.handoff.core.security;

import java.io.IOException;

import static java.util.Objects.requireNonNull;

/**
 * A {@link ClusterHandshake} that did not prove both sides members of one cluster. The message is for this node's
 * operator (it may say what the peer did); what the peer is told is only the handshake's fixed status byte.
 */
public final class AuthenticationException
        extends IOException
{
    /** Why, in the few classes an operator acts on differently. */
    public enum Failure
    {
        /** The peer's bytes are not this handshake: a node without a cluster secret, another version, or not Handoff at all. */
        NOT_A_HANDSHAKE,
        /** The peer answered that it has no cluster secret while this node has one. */
        PEER_HAS_NO_SECRET,
        /** A proof did not verify: the two nodes hold different secrets (or the peer holds none). */
        SECRET_MISMATCH,
        /** The peer claimed a role this side does not pair with, or the peer refused this side's role or version. */
        REFUSED,
        /** The handshake did not complete in time, or the connection closed during it. */
        INCOMPLETE,
        /** A frame of an authenticated session failed its tag: injected, replayed, reordered or corrupted. */
        FORGED_FRAME
    }

    private final Failure failure;
    private final int opening;

    public AuthenticationException(Failure failure, String message)
    {
        this(failure, message, 0);
    }

    /** @param opening for {@link Failure#NOT_A_HANDSHAKE}, the first four bytes the peer sent */
    public AuthenticationException(Failure failure, String message, int opening)
    {
        super(message);
        this.failure = requireNonNull(failure, "failure is null");
        this.opening = opening;
    }

    public AuthenticationException(Failure failure, String message, Throwable cause)
    {
        super(message, cause);
        this.failure = requireNonNull(failure, "failure is null");
        this.opening = 0;
    }

    public Failure failure()
    {
        return failure;
    }

    /** The first four bytes the peer sent instead of an opening ({@link Failure#NOT_A_HANDSHAKE}); 0 otherwise. */
    public int opening()
    {
        return opening;
    }
}
