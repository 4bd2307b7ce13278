package io.handoff.core.router;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;

import static java.util.Objects.requireNonNull;

/**
 * Copies a server-sent event stream from a decode server to the client event by event: each event (the
 * lines up to a blank line) is written and flushed as soon as its blank line arrives, so the client sees a
 * token when the decode sends it, and a stream cut mid-event never leaves half an event on the client side.
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

    private SseRelay() {}

    static Result copy(InputStream upstream, OutputStream client)
    {
        requireNonNull(upstream, "upstream is null");
        requireNonNull(client, "client is null");
        byte[] buffer = new byte[8192];
        ByteArrayOutputStream event = new ByteArrayOutputStream();
        int lineLength = 0;
        int events = 0;
        while (true) {
            int read;
            try {
                read = upstream.read(buffer);
            }
            catch (IOException e) {
                return new Result(Ending.UPSTREAM_FAILED, e, events);
            }
            if (read < 0) {
                // A last event without its blank line is still the server's output: pass it on.
                if (event.size() > 0 && !write(event, client)) {
                    return new Result(Ending.CLIENT_GONE, null, events);
                }
                return new Result(Ending.COMPLETE, null, events);
            }
            for (int i = 0; i < read; i++) {
                byte b = buffer[i];
                event.write(b);
                if (b == '\n') {
                    if (lineLength == 0) {
                        if (!write(event, client)) {
                            return new Result(Ending.CLIENT_GONE, null, events);
                        }
                        events++;
                    }
                    lineLength = 0;
                }
                else if (b != '\r') {
                    lineLength++;
                }
            }
        }
    }

    private static boolean write(ByteArrayOutputStream event, OutputStream client)
    {
        try {
            event.writeTo(client);
            client.flush();
            return true;
        }
        catch (IOException e) {
            return false;
        }
        finally {
            event.reset();
        }
    }
}
