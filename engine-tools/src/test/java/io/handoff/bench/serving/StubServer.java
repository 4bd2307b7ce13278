package io.handoff.bench.serving;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;

import java.io.IOException;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.Executors;

/**
 * A loopback stand-in for a server: {@code /v1/models} names a model, and {@code /generate} streams max_new_tokens
 * tokens (token i is {@code first id + i}) as cumulative chunks then {@code [DONE]}, or answers {@code status} with an
 * error body. It records every request body in arrival order.
 */
final class StubServer
        implements AutoCloseable
{
    private static final ObjectMapper JSON = new ObjectMapper();

    private final HttpServer server;
    private final int status;
    private final List<String> log;
    final List<JsonNode> bodies = new CopyOnWriteArrayList<>();

    StubServer(int status)
            throws IOException
    {
        this(status, new CopyOnWriteArrayList<>());
    }

    /** Also appends each request's rid to {@code log}, which several stubs may share. */
    StubServer(int status, List<String> log)
            throws IOException
    {
        this.status = status;
        this.log = log;
        server = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 0);
        server.setExecutor(Executors.newVirtualThreadPerTaskExecutor());
        server.createContext("/v1/models", exchange -> send(exchange, 200,
                "{\"object\":\"list\",\"data\":[{\"id\":\"stub\",\"max_model_len\":2048,\"vocab_size\":100}]}"));
        server.createContext("/generate", this::generate);
        server.start();
    }

    URI url()
    {
        return URI.create("http://127.0.0.1:" + server.getAddress().getPort());
    }

    List<String> rids()
    {
        return bodies.stream().map(b -> b.get("rid").asText()).toList();
    }

    private void generate(HttpExchange exchange)
            throws IOException
    {
        JsonNode body = JSON.readTree(exchange.getRequestBody());
        bodies.add(body);
        log.add(body.get("rid").asText());
        if (status != 200) {
            send(exchange, status, "{\"error\":{\"message\":\"the waiting queue is full\",\"code\":\"queue_full\"}}");
            return;
        }
        int tokens = body.get("sampling_params").get("max_new_tokens").asInt();
        int first = body.get("input_ids").get(0).asInt();
        exchange.getResponseHeaders().set("Content-Type", "text/event-stream");
        exchange.sendResponseHeaders(200, 0);
        try (OutputStream out = exchange.getResponseBody()) {
            StringBuilder ids = new StringBuilder();
            for (int i = 0; i < tokens; i++) {
                ids.append(i == 0 ? "" : ",").append(first + i);
                String finish = i == tokens - 1 ? "{\"type\":\"length\",\"length\":" + tokens + "}" : "null";
                out.write(("data: {\"output_ids\":[" + ids + "],\"meta_info\":{\"finish_reason\":" + finish + "}}\n\n").getBytes(StandardCharsets.UTF_8));
                out.flush();
            }
            out.write("data: [DONE]\n\n".getBytes(StandardCharsets.UTF_8));
        }
    }

    private static void send(HttpExchange exchange, int status, String body)
            throws IOException
    {
        byte[] bytes = body.getBytes(StandardCharsets.UTF_8);
        exchange.getResponseHeaders().set("Content-Type", "application/json");
        exchange.sendResponseHeaders(status, bytes.length);
        try (OutputStream out = exchange.getResponseBody()) {
            out.write(bytes);
        }
    }

    @Override
    public void close()
    {
        server.stop(0);
    }
}
