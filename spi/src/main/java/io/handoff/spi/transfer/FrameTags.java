package io.handoff.spi.transfer;

import java.nio.ByteBuffer;

/**
 * The tags of one authenticated connection's frames, as {@link TransferContext#authenticateConnection} leaves them:
 * with a cluster secret, an HMAC per frame under a key of the connection's own for each direction, over the frame's
 * place in its direction's sequence, its length and its bytes. A frame altered, injected, replayed, reordered or
 * moved from another connection fails its check. Without a secret, {@link #NONE}: no tag on the wire at all.
 *
 * <p>Each direction is one sequence: tag (or check) frames in the order they are sent (or arrive), from one thread at
 * a time per direction.
 */
public interface FrameTags
{
    /** No secret: frames carry no tag ({@link #tagBytes()} is 0). */
    FrameTags NONE = new FrameTags()
    {
        @Override
        public int tagBytes()
        {
            return 0;
        }

        @Override
        public Tag nextSent(long length)
        {
            return Tag.EMPTY;
        }

        @Override
        public Tag nextReceived(long length)
        {
            return Tag.EMPTY;
        }
    };

    /** The bytes of one tag on the wire; 0 when frames are not tagged. */
    int tagBytes();

    /** The tag of the next frame this side sends, of {@code length} bytes, fed with {@link Tag#update}. */
    Tag nextSent(long length);

    /** The tag the peer's next frame, of {@code length} bytes, must carry. */
    Tag nextReceived(long length);

    /** One frame's tag, computed as its bytes are fed. */
    interface Tag
    {
        Tag EMPTY = new Tag()
        {
            @Override
            public Tag update(ByteBuffer bytes)
            {
                return this;
            }

            @Override
            public byte[] value()
            {
                return new byte[0];
            }
        };

        /** Feeds the buffer's remaining bytes (its position does not move). */
        Tag update(ByteBuffer bytes);

        /** The tag, once every byte of the frame was fed; call once. */
        byte[] value();

        /** Whether {@code presented} is this tag, compared in constant time; call once, instead of {@link #value}. */
        default boolean matches(byte[] presented)
        {
            byte[] expected = value();
            if (presented.length != expected.length) {
                return false;
            }
            int difference = 0;
            for (int i = 0; i < expected.length; i++) {
                difference |= expected[i] ^ presented[i];
            }
            return difference == 0;
        }
    }
}
