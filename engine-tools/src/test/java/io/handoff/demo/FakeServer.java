package io.handoff.demo;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;

import java.io.IOException;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.Executors;

/**
 * A loopback HTTP server with canned answers per path, standing in for a Handoff server or router where
 * a test needs one: a plain body, or server-sent events written and flushed one by one.
 */
final class FakeServer
        implements AutoCloseable
{
    record Answer(int status, String contentType, List<String> parts) {}

    private final HttpServer server;
    private final Map<String, Answer> answers = new ConcurrentHashMap<>();
    final List<String> requestBodies = new CopyOnWriteArrayList<>();

    FakeServer()
    {
        try {
            server = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 0);
        }
        catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        server.setExecutor(Executors.newVirtualThreadPerTaskExecutor());
        server.createContext("/", this::handle);
        server.start();
    }

    FakeServer answer(String path, int status, String contentType, String body)
    {
        answers.put(path, new Answer(status, contentType, List.of(body)));
        return this;
    }

    /** Each event is sent as {@code data: <event>} and flushed before the next. */
    FakeServer events(String path, String... events)
    {
        answers.put(path, new Answer(200, "text/event-stream", List.of(events)));
        return this;
    }

    URI url()
    {
        return URI.create("http://127.0.0.1:" + server.getAddress().getPort());
    }

    private void handle(HttpExchange exchange)
            throws IOException
    {
        requestBodies.add(new String(exchange.getRequestBody().readAllBytes(), StandardCharsets.UTF_8));
        Answer answer = answers.get(exchange.getRequestURI().getPath());
        if (answer == null) {
            answer = new Answer(404, "application/json", List.of("{\"error\":{\"message\":\"no endpoint\"}}"));
        }
        exchange.getResponseHeaders().set("Content-Type", answer.contentType());
        try (OutputStream out = exchange.getResponseBody()) {
            if (answer.contentType().equals("text/event-stream")) {
                exchange.sendResponseHeaders(answer.status(), 0);
                for (String event : answer.parts()) {
                    out.write(("data: " + event + "\n\n").getBytes(StandardCharsets.UTF_8));
                    out.flush();
                }
            }
            else {
                byte[] body = answer.parts().getFirst().getBytes(StandardCharsets.UTF_8);
                exchange.sendResponseHeaders(answer.status(), body.length == 0 ? -1 : body.length);
                out.write(body);
            }
        }
    }

    @Override
    public void close()
    {
        server.stop(0);
    }
}
