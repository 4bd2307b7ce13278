package io.handoff.router;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;

import java.io.IOException;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * A test double of a prefill or decode server, for testing the router's own logic (not the servers'): it
 * answers {@code /health}, {@code /bootstrap}, {@code /v1/models} and {@code /abort_request} as the
 * contract says, records every generation request it receives, and answers those with whatever the test's
 * {@link Generator} writes (by default canned JSON, or three SSE events and {@code [DONE]}).
 */
final class FakeBackend
        implements AutoCloseable
{
    static final ObjectMapper JSON = new ObjectMapper();
    private static final long WAIT_SECONDS = 30;

    /** Answers one generation request; {@code body} is what the router sent. */
    @FunctionalInterface
    interface Generator
    {
        void generate(FakeBackend self, HttpExchange exchange, ObjectNode body)
                throws IOException, InterruptedException;
    }

    /**
     * @param bytes the body exactly as it arrived (what the router's signature covers)
     * @param authorization its {@code Authorization} header, or null
     * @param signature its {@code X-Handoff-Cluster-Auth} header, or null
     */
    record Received(String path, ObjectNode body, byte[] bytes, String authorization, String signature)
    {
        String rid()
        {
            return body.path("rid").asText();
        }
    }

    final String name;
    final String role;
    volatile int healthStatus = 200;
    /** A decode's {@code suspect_peers} in its {@code /health}; none listed while null. */
    volatile List<String> suspectPeers;
    /** What {@code /health} reports under {@code load} (none when null): what a router's SLO planner reads. */
    volatile ObjectNode load;
    /** The roles {@code POST /admin/role} asked this server to switch to, in order. */
    final List<String> rolesAsked = new CopyOnWriteArrayList<>();
    volatile int healthGenerateStatus = 200;
    /** While set, {@code /health} answers only once it is counted down: a server too busy to answer in time. */
    volatile CountDownLatch healthStall;
    volatile String control;
    volatile String bootstrapRole;
    // the incarnation its /bootstrap reports; none when null
    volatile String incarnation;
    volatile Generator generator = FakeBackend::answer;
    /** Which rids an abort finds in flight; an abort of any other is recorded and answered 404, as a server answers a rid it does not have (yet). */
    volatile java.util.function.Predicate<String> knows = rid -> true;
    /** For a decode: the prefills it may be paired with. */
    volatile List<FakeBackend> prefills = List.of();
    final List<Received> received = new CopyOnWriteArrayList<>();
    final List<String> aborted = new CopyOnWriteArrayList<>();
    final AtomicInteger bootstrapCalls = new AtomicInteger();
    /** What {@code /flush_cache} answers (400: requests in flight); {@link #flushes} counts the calls. */
    volatile int flushStatus = 200;
    final AtomicInteger flushes = new AtomicInteger();
    /** The {@code Authorization} header of every call but generation requests (those are in {@link #received}), "-" when absent. */
    final List<String> otherAuthorizations = new CopyOnWriteArrayList<>();
    private final ConcurrentMap<String, CountDownLatch> abortLatches = new ConcurrentHashMap<>();
    private final ConcurrentMap<String, CountDownLatch> receivedLatches = new ConcurrentHashMap<>();
    private final ExecutorService executor = Executors.newVirtualThreadPerTaskExecutor();
    private final HttpServer server;

    private FakeBackend(String name, String role, String control)
            throws IOException
    {
        this.name = name;
        this.role = role;
        this.bootstrapRole = role;
        this.control = control;
        server = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 0);
        server.setExecutor(executor);
        server.createContext("/", this::handle);
        server.start();
    }

    static FakeBackend prefill(String name, String control)
            throws IOException
    {
        return new FakeBackend(name, "prefill", control);
    }

    static FakeBackend decode(String name)
            throws IOException
    {
        return new FakeBackend(name, "decode", null);
    }

    URI url()
    {
        return URI.create("http://127.0.0.1:" + server.getAddress().getPort());
    }

    List<String> rids()
    {
        return received.stream().map(Received::rid).toList();
    }

    Received only()
    {
        if (received.size() != 1) {
            throw new AssertionError(name + " received " + received.size() + " generation requests, expected 1: " + received);
        }
        return received.getFirst();
    }

    /** Waits (bounded) until an abort of {@code rid} arrives; false if none came. */
    boolean awaitAbort(String rid)
            throws InterruptedException
    {
        return latch(abortLatches, rid).await(WAIT_SECONDS, TimeUnit.SECONDS);
    }

    boolean abortArrived(String rid, long millis)
            throws InterruptedException
    {
        return latch(abortLatches, rid).await(millis, TimeUnit.MILLISECONDS);
    }

    /** Waits (bounded) until a generation request with {@code rid} has arrived. */
    boolean awaitReceived(String rid)
            throws InterruptedException
    {
        return latch(receivedLatches, rid).await(WAIT_SECONDS, TimeUnit.SECONDS);
    }

    /** What a query endpoint answers here: who answered, the raw path and method it got, and the JSON body if any. */
    private ObjectNode query(HttpExchange exchange, byte[] bytes)
            throws IOException
    {
        ObjectNode answer = JSON.createObjectNode().put("server", name).put("method", exchange.getRequestMethod())
                .put("raw_path", exchange.getRequestURI().getRawPath());
        if (bytes.length > 0) {
            answer.set("body", JSON.readTree(bytes));
        }
        return answer;
    }

    private static CountDownLatch latch(ConcurrentMap<String, CountDownLatch> latches, String rid)
    {
        return latches.computeIfAbsent(rid, key -> new CountDownLatch(1));
    }

    private void handle(HttpExchange exchange)
            throws IOException
    {
        try (exchange) {
            byte[] bytes = exchange.getRequestBody().readAllBytes();
            String path = exchange.getRequestURI().getPath();
            if (!path.equals("/generate") && !path.equals("/v1/completions")) {
                String authorization = exchange.getRequestHeaders().getFirst("Authorization");
                otherAuthorizations.add(path + " " + (authorization == null ? "-" : authorization));
            }
            switch (path) {
                case "/health" -> {
                    CountDownLatch stall = healthStall;
                    if (stall != null) {
                        try {
                            stall.await(WAIT_SECONDS, TimeUnit.SECONDS);
                        }
                        catch (InterruptedException e) {
                            Thread.currentThread().interrupt();
                        }
                    }
                    ObjectNode health = JSON.createObjectNode().put("status", healthStatus == 200 ? "ok" : "unhealthy");
                    List<String> suspects = suspectPeers;
                    if (suspects != null) {
                        suspects.forEach(health.putArray("suspect_peers")::add);
                    }
                    ObjectNode reported = load;
                    if (reported != null) {
                        health.set("load", reported);
                    }
                    json(exchange, healthStatus, health);
                }
                case "/admin/role" -> {
                    rolesAsked.add(JSON.readTree(bytes).path("role").asText());
                    json(exchange, 202, JSON.createObjectNode().put("status", "switching"));
                }
                case "/health_generate" -> json(exchange, healthGenerateStatus, healthGenerateStatus == 200
                        ? JSON.createObjectNode().put("status", "ok").put("output_id", 65)
                        : JSON.createObjectNode().put("status", "a one-token generation did not finish within 20000 ms"));
                case "/bootstrap" -> {
                    bootstrapCalls.incrementAndGet();
                    ObjectNode body = JSON.createObjectNode().put("role", bootstrapRole).put("model", "tiny-mla").put("compatibility", "c0ffee");
                    if (control != null) {
                        body.put("control", control);
                    }
                    if (incarnation != null) {
                        body.put("incarnation", incarnation);
                    }
                    json(exchange, 200, body);
                }
                case "/v1/models" -> json(exchange, 200, (ObjectNode) JSON.readTree("{\"object\":\"list\",\"data\":[{\"id\":\"tiny-mla\",\"owned_by\":\"" + name + "\"}]}"));
                case "/abort_request" -> {
                    String rid = JSON.readTree(bytes).path("rid").asText();
                    aborted.add(rid);
                    if (!knows.test(rid)) {
                        json(exchange, 404, JSON.createObjectNode().put("error", "test: no request with rid " + rid + " in flight"));
                        return;
                    }
                    latch(abortLatches, rid).countDown();
                    json(exchange, 200, JSON.createObjectNode().put("rid", rid).put("aborted", true));
                }
                case "/generate", "/v1/completions", "/v1/chat/completions" -> {
                    ObjectNode body = (ObjectNode) JSON.readTree(bytes);
                    Received request = new Received(exchange.getRequestURI().getPath(), body, bytes,
                            exchange.getRequestHeaders().getFirst("Authorization"), exchange.getRequestHeaders().getFirst("X-Handoff-Cluster-Auth"));
                    received.add(request);
                    latch(receivedLatches, request.rid()).countDown();
                    generator.generate(this, exchange, body);
                }
                case "/flush_cache" -> {
                    flushes.incrementAndGet();
                    json(exchange, flushStatus, JSON.createObjectNode().put("server", name).put("flushed", flushStatus == 200));
                }
                case "/get_model_info", "/get_server_info", "/version", "/tokenize", "/detokenize", "/v1/tokenize", "/v1/detokenize" ->
                        json(exchange, 200, query(exchange, bytes));
                default -> {
                    if (path.startsWith("/v1/models/")) {
                        json(exchange, 404, query(exchange, bytes));
                        return;
                    }
                    json(exchange, 404, JSON.createObjectNode().put("error", "no such endpoint"));
                }
            }
        }
        catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        catch (IOException e) {
            // The router went away mid-answer (as it does when its client disconnects): nothing to answer.
        }
    }

    /**
     * The default answer: canned JSON naming this server, or three events and [DONE] when the body asks to
     * stream. A decode answers only once its prefill (the one whose control endpoint is the request's
     * {@code bootstrap_host}) has the request, as a real decode waits for the KV.
     */
    static void answer(FakeBackend self, HttpExchange exchange, ObjectNode body)
            throws IOException, InterruptedException
    {
        for (FakeBackend prefill : self.prefills) {
            if (prefill.control != null && prefill.control.equals(body.path("bootstrap_host").asText()) && !prefill.awaitReceived(body.path("rid").asText())) {
                json(exchange, 500, JSON.createObjectNode().put("error", "test: the prefill never got the request"));
                return;
            }
        }
        if (!body.path("stream").asBoolean(false)) {
            json(exchange, 200, response(self, body.path("rid").asText(), "abc"));
            return;
        }
        OutputStream out = startEvents(exchange);
        event(out, JSON.createObjectNode().put("text", "a").put("served_by", self.name));
        event(out, JSON.createObjectNode().put("text", "ab").put("served_by", self.name));
        event(out, response(self, body.path("rid").asText(), "abc"));
        done(out);
    }

    static ObjectNode response(FakeBackend self, String rid, String text)
    {
        ObjectNode response = JSON.createObjectNode().put("text", text).put("served_by", self.name);
        response.putObject("meta_info").put("id", rid);
        return response;
    }

    static void json(HttpExchange exchange, int status, JsonNode body)
            throws IOException
    {
        byte[] bytes = JSON.writeValueAsBytes(body);
        exchange.getResponseHeaders().set("Content-Type", "application/json");
        exchange.sendResponseHeaders(status, bytes.length);
        exchange.getResponseBody().write(bytes);
    }

    static OutputStream startEvents(HttpExchange exchange)
            throws IOException
    {
        exchange.getResponseHeaders().set("Content-Type", "text/event-stream; charset=utf-8");
        exchange.sendResponseHeaders(200, 0);
        return exchange.getResponseBody();
    }

    static void event(OutputStream out, JsonNode event)
            throws IOException
    {
        out.write(("data: " + JSON.writeValueAsString(event) + "\n\n").getBytes(StandardCharsets.UTF_8));
        out.flush();
    }

    static void done(OutputStream out)
            throws IOException
    {
        out.write("data: [DONE]\n\n".getBytes(StandardCharsets.UTF_8));
        out.flush();
    }

    /** Stops listening: the next connection to it is refused. */
    void stop()
    {
        server.stop(0);
    }

    @Override
    public void close()
    {
        server.stop(0);
        executor.shutdownNow();
    }

    @Override
    public String toString()
    {
        return name + " (" + role + " at " + url() + ")";
    }
}
