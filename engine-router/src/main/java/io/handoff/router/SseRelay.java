package io.handoff.router;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;

import static java.util.Objects.requireNonNull;

/**
 * A server-sent event stream from a decode server, read and passed to the client event by event: each
 * event (its lines up to a blank line) is written and flushed as soon as its blank line arrives, so the
 * client sees a token when the decode sends it, and a stream cut mid-event never leaves half an event on
 * the client side.
 */
final class SseRelay
{
    /** How the copy ended. */
    enum Ending
    {
        /** The upstream stream ended and every event reached the client. */
        COMPLETE,
        /** Reading from the decode server failed; the client got every whole event before it. */
        UPSTREAM_FAILED,
        /** Writing to the client failed: it disconnected. */
        CLIENT_GONE,
    }

    record Result(Ending ending, IOException failure, int events) {}

    private final InputStream upstream;
    private final byte[] buffer = new byte[8192];
    private final ByteArrayOutputStream event = new ByteArrayOutputStream();
    private int position;
    private int limit;
    private int lineLength;

    SseRelay(InputStream upstream)
    {
        this.upstream = requireNonNull(upstream, "upstream is null");
    }

    /** The next event with its blank line; at the end a last event without one (still the server's output), then null. */
    byte[] next()
            throws IOException
    {
        while (true) {
            if (position == limit) {
                limit = upstream.read(buffer);
                position = 0;
                if (limit < 0) {
                    limit = 0;
                    return take();
                }
            }
            while (position < limit) {
                byte b = buffer[position++];
                event.write(b);
                if (b == '\n') {
                    boolean blank = lineLength == 0;
                    lineLength = 0;
                    if (blank) {
                        return take();
                    }
                }
                else if (b != '\r') {
                    lineLength++;
                }
            }
        }
    }

    private byte[] take()
    {
        if (event.size() == 0) {
            return null;
        }
        byte[] bytes = event.toByteArray();
        event.reset();
        return bytes;
    }

    /** Writes {@code first} (when not null) and then every further event to {@code client}, flushing each. */
    Result relay(byte[] first, OutputStream client)
    {
        requireNonNull(client, "client is null");
        int events = 0;
        byte[] next = first;
        while (next != null) {
            try {
                client.write(next);
                client.flush();
            }
            catch (IOException e) {
                return new Result(Ending.CLIENT_GONE, null, events);
            }
            events++;
            try {
                next = next();
            }
            catch (IOException e) {
                return new Result(Ending.UPSTREAM_FAILED, e, events);
            }
        }
        return new Result(Ending.COMPLETE, null, events);
    }
}
