package io.handoff.router;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.handoff.http.base.ApiError;
import io.handoff.http.base.Exchange;
import io.handoff.http.base.JsonFields;

import java.io.IOException;
import java.net.URI;
import java.net.URISyntaxException;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;

import static java.util.Objects.requireNonNull;

/**
 * What the router answers from its servers rather than by pairing a generation: the model's description, the server
 * settings, tokenization and the version come from one healthy decode (every server of a deployment serves the same
 * model and tokenizer), named in the {@code X-Handoff-Backend} header; {@code /flush_cache} goes to every server, and
 * the answer lists each one's result.
 */
final class BackendQueries
{
    static final String BACKEND_HEADER = "X-Handoff-Backend";

    private final BackendPool pool;
    private final Upstream upstream;
    private final Duration timeout;

    /** @param timeout how long a server may take to answer a query (handoff.router.health-timeout) */
    BackendQueries(BackendPool pool, Upstream upstream, Duration timeout)
    {
        this.pool = requireNonNull(pool, "pool is null");
        this.upstream = requireNonNull(upstream, "upstream is null");
        this.timeout = requireNonNull(timeout, "timeout is null");
    }

    /** The same request, GET or a JSON POST, to a healthy decode; its answer passed on as it is. */
    void fromDecode(Exchange exchange)
            throws IOException, InterruptedException
    {
        Backend decode = pool.anyHealthy(BackendRole.DECODE).orElseThrow(() -> pool.noneHealthy(BackendRole.DECODE));
        String path = encoded(exchange.path());
        HttpResponse<byte[]> response;
        try {
            if (exchange.method().equals("GET")) {
                response = upstream.get(decode, path, timeout);
            }
            else {
                response = upstream.post(decode, path, exchange.json().copy(), HttpResponse.BodyHandlers.ofByteArray()).get();
            }
        }
        catch (IOException | ExecutionException e) {
            throw upstream.failure(decode, e);
        }
        exchange.setHeader(BACKEND_HEADER, decode.url().toString());
        exchange.send(response.statusCode(), response.headers().firstValue("Content-Type").orElse("application/json"), response.body());
    }

    /**
     * {@code POST /flush_cache} to every server at once. 200 when every one flushed; 400 when any refused (requests
     * were in flight there; the others did flush); 502 when none refused but some could not be reached.
     */
    void flushAll(Exchange exchange)
            throws IOException, InterruptedException
    {
        List<Backend> backends = pool.all();
        List<CompletableFuture<HttpResponse<byte[]>>> calls = new ArrayList<>();
        JsonNode empty = JsonFields.MAPPER.createObjectNode();
        for (Backend backend : backends) {
            calls.add(upstream.post(backend, "/flush_cache", empty, HttpResponse.BodyHandlers.ofByteArray()));
        }
        ObjectNode body = JsonFields.MAPPER.createObjectNode();
        ArrayNode results = body.putArray("backends");
        boolean refused = false;
        boolean unreachable = false;
        for (int i = 0; i < backends.size(); i++) {
            Backend backend = backends.get(i);
            ObjectNode result = results.addObject().put("url", backend.url().toString()).put("role", backend.role().label());
            try {
                HttpResponse<byte[]> response = calls.get(i).get();
                result.put("status", response.statusCode());
                result.put("flushed", response.statusCode() == 200);
                result.set("answer", answer(response.body()));
                refused |= response.statusCode() != 200;
            }
            catch (ExecutionException e) {
                result.put("status", -1);
                result.put("flushed", false);
                result.put("error", backend.describe() + " could not be reached: " + Upstream.describe(e));
                unreachable = true;
            }
        }
        body.put("success", !refused && !unreachable);
        exchange.sendJson(refused ? 400 : unreachable ? 502 : 200, body);
    }

    /** A server's JSON answer, or its text when it is not JSON. */
    private static JsonNode answer(byte[] bytes)
    {
        try {
            return JsonFields.MAPPER.readTree(bytes);
        }
        catch (IOException e) {
            return JsonFields.MAPPER.getNodeFactory().textNode(new String(bytes, java.nio.charset.StandardCharsets.UTF_8));
        }
    }

    /** A decoded request path as a URI path again, so that an id holding spaces or '%' reaches the server as the client sent it. */
    private static String encoded(String path)
    {
        try {
            return new URI(null, null, path, null).getRawPath();
        }
        catch (URISyntaxException e) {
            throw ApiError.invalid("invalid_path", null, "the path " + path + " cannot be passed on: " + e.getReason());
        }
    }
}
