package io.handoff.core.security;

import io.handoff.spi.transfer.FrameTags;

import javax.crypto.Mac;

import java.nio.ByteBuffer;
import java.security.MessageDigest;

import static java.util.Objects.requireNonNull;

/**
 * The tag of each frame in one direction of a {@link Session}: HMAC-SHA256 under the direction's key over the
 * frame's sequence number (counted here, never sent), its length and its bytes. A frame injected, dropped, replayed
 * or moved fails the next check, since its position is part of what was tagged. Not thread-safe: one sender (under
 * its send lock) or one reader per direction.
 */
public final class FrameMac
{
    public static final int TAG_BYTES = ClusterSecret.TAG_BYTES;

    private final Mac mac;
    private long sequence;

    FrameMac(byte[] key)
    {
        this.mac = ClusterSecret.mac(requireNonNull(key, "key is null"));
    }

    /** The tag of the next frame, {@code frame[0 .. length)}. */
    public byte[] tag(byte[] frame, int length)
    {
        start(length);
        mac.update(frame, 0, length);
        return mac.doFinal();
    }

    /**
     * The next frame's tag, its bytes fed in parts as they are sent or arrive (a backend's data frame, straight from or
     * into its pool): the same tag {@link #tag} gives for the same bytes. Finish it before starting the next.
     */
    public FrameTags.Tag next(long length)
    {
        if (length < 0 || length > Integer.MAX_VALUE) {
            throw new IllegalArgumentException("a tagged frame holds 0.." + Integer.MAX_VALUE + " bytes, not " + length);
        }
        start((int) length);
        return new FrameTags.Tag()
        {
            private long fed;

            @Override
            public FrameTags.Tag update(ByteBuffer bytes)
            {
                fed += bytes.remaining();
                mac.update(bytes.duplicate());
                return this;
            }

            @Override
            public byte[] value()
            {
                if (fed != length) {
                    throw new IllegalStateException("a frame of " + length + " bytes was tagged over " + fed + " bytes");
                }
                return mac.doFinal();
            }
        };
    }

    private void start(int length)
    {
        long position = sequence++;
        for (int shift = 56; shift >= 0; shift -= 8) {
            mac.update((byte) (position >>> shift));
        }
        mac.update((byte) (length >>> 24));
        mac.update((byte) (length >>> 16));
        mac.update((byte) (length >>> 8));
        mac.update((byte) length);
    }

    /** Whether {@code tag} is the next frame's tag; constant-time in the tag's bytes. Moves to the next frame either way. */
    public boolean verify(byte[] frame, int length, byte[] tag)
    {
        return MessageDigest.isEqual(tag(frame, length), tag);
    }
}
