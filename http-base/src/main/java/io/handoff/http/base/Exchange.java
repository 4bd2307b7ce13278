package io.handoff.http.base;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.sun.net.httpserver.HttpExchange;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.util.function.IntConsumer;

import static java.util.Objects.requireNonNull;

/**
 * One HTTP exchange as the API handlers use it: a size-limited JSON body in, JSON or server-sent events out
 * (or, for the router, a backend's response relayed as it is).
 */
public final class Exchange
{
    private static final long DISCARD_LIMIT = 16 << 20;
    private static final byte[] DONE = "data: [DONE]\n\n".getBytes(StandardCharsets.UTF_8);

    private final HttpExchange exchange;
    private final long maxBodyBytes;
    private final IntConsumer onStatus;
    private int status = -1;
    private byte[] body = new byte[0];

    /** {@code onStatus} hears the status just before it is sent, so a count of it is in place by the time the client has the response. */
    Exchange(HttpExchange exchange, long maxBodyBytes, IntConsumer onStatus)
    {
        this.exchange = requireNonNull(exchange, "exchange is null");
        this.maxBodyBytes = maxBodyBytes;
        this.onStatus = requireNonNull(onStatus, "onStatus is null");
    }

    public String method()
    {
        return exchange.getRequestMethod();
    }

    public String path()
    {
        return exchange.getRequestURI().getPath();
    }

    /** The status sent, or -1 while nothing has been. */
    public int status()
    {
        return status;
    }

    /** The body as a JSON object; 413 beyond the limit, without ever holding more than the limit. */
    public JsonFields json()
            throws IOException
    {
        try (InputStream in = exchange.getRequestBody()) {
            String declared = exchange.getRequestHeaders().getFirst("Content-Length");
            if (declared != null && declared.strip().matches("[0-9]{1,18}") && Long.parseLong(declared.strip()) > maxBodyBytes) {
                throw tooLarge(in);
            }
            // Read at most one byte past the limit: a chunked body that is too large is never held whole.
            body = in.readNBytes((int) Math.min(Integer.MAX_VALUE - 8, maxBodyBytes + 1));
            if (body.length > maxBodyBytes) {
                body = new byte[0];
                throw tooLarge(in);
            }
        }
        return JsonFields.parse(body);
    }

    /** The body exactly as {@link #json} read it (what a signature covers); empty before. */
    public byte[] body()
    {
        return body;
    }

    /** A request header's first value, or null. */
    public String header(String name)
    {
        return exchange.getRequestHeaders().getFirst(name);
    }

    /**
     * Reads and drops what is left of a body that is too large (up to a bound), so the client, which is
     * still sending it, reads the 413 instead of a connection reset; beyond the bound the connection closes.
     */
    private ApiError tooLarge(InputStream in)
            throws IOException
    {
        long left = DISCARD_LIMIT;
        byte[] buffer = new byte[8192];
        int read;
        while (left > 0 && (read = in.read(buffer, 0, (int) Math.min(buffer.length, left))) >= 0) {
            left -= read;
        }
        if (left == 0) {
            exchange.getResponseHeaders().set("Connection", "close");
        }
        return ApiError.tooLarge(maxBodyBytes);
    }

    public void setHeader(String name, String value)
    {
        exchange.getResponseHeaders().set(name, value);
    }

    public void sendJson(int code, JsonNode body)
            throws IOException
    {
        send(code, "application/json", JsonFields.MAPPER.writeValueAsBytes(body));
    }

    public void sendText(int code, String contentType, String body)
            throws IOException
    {
        send(code, contentType, body.getBytes(StandardCharsets.UTF_8));
    }

    public void sendError(ApiError error)
            throws IOException
    {
        error.retryAfter().ifPresent(after -> exchange.getResponseHeaders().set("Retry-After", Long.toString(Math.max(1, after.toSeconds()))));
        sendJson(error.status(), errorBody(error));
    }

    public static ObjectNode errorBody(ApiError error)
    {
        ObjectNode body = JsonFields.MAPPER.createObjectNode();
        ObjectNode inner = body.putObject("error");
        inner.put("message", error.getMessage());
        inner.put("type", error.type());
        inner.put("param", error.param().orElse(null));
        inner.put("code", error.code());
        error.cause().ifPresent(cause -> inner.put("cause", cause));
        return body;
    }

    public void send(int code, String contentType, byte[] bytes)
            throws IOException
    {
        exchange.getResponseHeaders().set("Content-Type", contentType);
        status = code;
        onStatus.accept(code);
        exchange.sendResponseHeaders(code, bytes.length == 0 ? -1 : bytes.length);
        try (OutputStream out = exchange.getResponseBody()) {
            out.write(bytes);
        }
    }

    /** Starts a {@code text/event-stream} response; each event is flushed as it is written. */
    public EventStream events()
            throws IOException
    {
        return new EventStream(stream(200, "text/event-stream; charset=utf-8"));
    }

    /** Starts a response of unknown length (chunked, not cached); the caller writes, flushes and closes the body. */
    public OutputStream stream(int code, String contentType)
            throws IOException
    {
        exchange.getResponseHeaders().set("Content-Type", contentType);
        exchange.getResponseHeaders().set("Cache-Control", "no-cache");
        status = code;
        onStatus.accept(code);
        exchange.sendResponseHeaders(code, 0);
        OutputStream body = exchange.getResponseBody();
        // the JDK server holds the headers until the first write: a router waits on them to know the request arrived
        body.flush();
        return body;
    }

    /** Server-sent events in the style of SGLang and OpenAI: {@code data: <json>} per event, {@code data: [DONE]} at the end. */
    public static final class EventStream
    {
        private final OutputStream out;

        private EventStream(OutputStream out)
        {
            this.out = out;
        }

        public void send(JsonNode event)
                throws IOException
        {
            out.write("data: ".getBytes(StandardCharsets.UTF_8));
            out.write(JsonFields.MAPPER.writeValueAsBytes(event));
            out.write("\n\n".getBytes(StandardCharsets.UTF_8));
            out.flush();
        }

        public void done()
                throws IOException
        {
            out.write(DONE);
            out.flush();
            out.close();
        }
    }

    void close()
    {
        exchange.close();
    }
}
