package io.handoff.core.security;

import io.handoff.spi.transfer.FrameTags;

import static java.util.Objects.requireNonNull;

/**
 * What a completed {@link ClusterHandshake} leaves: one {@link FrameMac} per direction, keyed from the cluster secret
 * and both sides' nonces, so a session's frames are worthless on any other connection and the two directions cannot
 * be swapped.
 */
public final class Session
{
    private final FrameMac sending;
    private final FrameMac receiving;

    private Session(FrameMac sending, FrameMac receiving)
    {
        this.sending = requireNonNull(sending, "sending is null");
        this.receiving = requireNonNull(receiving, "receiving is null");
    }

    static Session derive(ClusterSecret secret, String purpose, byte[] roles, byte[] initiatorNonce, byte[] responderNonce, boolean initiator)
    {
        byte[] toResponder = secret.derive("session initiator to responder " + purpose, roles, initiatorNonce, responderNonce);
        byte[] toInitiator = secret.derive("session responder to initiator " + purpose, roles, initiatorNonce, responderNonce);
        return initiator
                ? new Session(new FrameMac(toResponder), new FrameMac(toInitiator))
                : new Session(new FrameMac(toInitiator), new FrameMac(toResponder));
    }

    /** Tags this side's frames, in the order they are sent. */
    public FrameMac sending()
    {
        return sending;
    }

    /** Checks the peer's frames, in the order they arrive. */
    public FrameMac receiving()
    {
        return receiving;
    }

    /** This session as a transfer backend sees it: the tags of its own connection's frames. */
    public FrameTags frameTags()
    {
        return new FrameTags()
        {
            @Override
            public int tagBytes()
            {
                return FrameMac.TAG_BYTES;
            }

            @Override
            public Tag nextSent(long length)
            {
                return sending.next(length);
            }

            @Override
            public Tag nextReceived(long length)
            {
                return receiving.next(length);
            }
        };
    }
}
