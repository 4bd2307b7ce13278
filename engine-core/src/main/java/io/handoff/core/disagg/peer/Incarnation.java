package io.handoff.core.disagg.peer;

import java.security.SecureRandom;
import java.util.HexFormat;

/** Incarnation ids: 128 random bits in hex, drawn once per server start, so two starts never share one. */
public final class Incarnation
{
    private static final SecureRandom RANDOM = new SecureRandom();

    private Incarnation() {}

    public static String next()
    {
        byte[] bits = new byte[16];
        RANDOM.nextBytes(bits);
        return HexFormat.of().formatHex(bits);
    }
}
