package io.handoff.core.model.tokenizer;

import java.nio.ByteBuffer;
import java.nio.CharBuffer;
import java.nio.charset.CharsetDecoder;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;

import static java.util.Objects.requireNonNull;

/**
 * Output text token by token: bytes that may still become a valid UTF-8 character wait for the next
 * token, invalid ones become U+FFFD as {@link Tokenizer#decode} makes them, so the pieces
 * {@link #next} returns, followed by {@link #finish}, equal the decode of all the ids. Not thread-safe.
 */
public final class StreamingDecoder
{
    private final Tokenizer tokenizer;
    private final CharsetDecoder decoder = StandardCharsets.UTF_8.newDecoder()
            .onMalformedInput(CodingErrorAction.REPLACE)
            .onUnmappableCharacter(CodingErrorAction.REPLACE);
    private ByteBuffer pending = ByteBuffer.allocate(16);

    StreamingDecoder(Tokenizer tokenizer)
    {
        this.tokenizer = requireNonNull(tokenizer, "tokenizer is null");
    }

    /** The complete characters this token finishes; empty while a character is still partial. */
    public String next(int id)
    {
        byte[] bytes = tokenizer.tokenBytes(id);
        if (pending.remaining() < bytes.length) {
            ByteBuffer larger = ByteBuffer.allocate(pending.position() + bytes.length + 16);
            larger.put(pending.flip());
            pending = larger;
        }
        pending.put(bytes);
        return drain(false);
    }

    /** The end of the output: bytes still waiting become U+FFFD. */
    public String finish()
    {
        String text = drain(true);
        decoder.reset();
        return text;
    }

    private String drain(boolean endOfInput)
    {
        pending.flip();
        CharBuffer out = CharBuffer.allocate(pending.remaining() * 2 + 2);
        decoder.decode(pending, out, endOfInput);
        if (endOfInput) {
            decoder.flush(out);
        }
        pending.compact();
        return out.flip().toString();
    }
}
