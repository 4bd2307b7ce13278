package io.handoff.http.base.security;

import java.security.MessageDigest;
import java.util.HexFormat;

/**
 * A MAC keyed with the cluster secret, as the HTTP layer needs it to sign and check the router's calls. The
 * core's cluster secret provides the key; this interface keeps the HTTP layer independent of how it is held, so
 * wiring one is a single lambda ({@code message -> secret.tag(RouterSignature.CONTEXT, message)}).
 */
@FunctionalInterface
public interface ClusterMac
{
    /** The MAC of {@code message}. */
    byte[] tag(byte[] message);

    /** Whether {@code tag} (hex) is the MAC of {@code message}; constant-time in the tag's bytes, false for malformed hex. */
    default boolean verify(byte[] message, String tag)
    {
        byte[] presented;
        try {
            presented = HexFormat.of().parseHex(tag);
        }
        catch (IllegalArgumentException malformed) {
            return false;
        }
        return MessageDigest.isEqual(presented, tag(message));
    }
}
