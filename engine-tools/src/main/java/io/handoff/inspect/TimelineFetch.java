package io.handoff.inspect;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;

import java.io.IOException;
import java.net.ConnectException;
import java.net.URI;
import java.net.URLEncoder;
import java.net.http.HttpClient;
import java.net.http.HttpConnectTimeoutException;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.net.http.HttpTimeoutException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Optional;

import static java.util.Objects.requireNonNull;

/**
 * Fetches one node's {@code GET /debug/requests/{rid}}; every way it can fail becomes a message that says what to do
 * (an unreachable node, a rid it does not keep, debug endpoints off, a missing or wrong API key).
 */
public final class TimelineFetch
{
    private final HttpClient client;
    private final ObjectMapper mapper;
    private final Optional<String> apiKey;
    private final Duration timeout;

    public TimelineFetch(HttpClient client, ObjectMapper mapper, Optional<String> apiKey, Duration timeout)
    {
        this.client = requireNonNull(client, "client is null");
        this.mapper = requireNonNull(mapper, "mapper is null");
        this.apiKey = requireNonNull(apiKey, "apiKey is null");
        this.timeout = requireNonNull(timeout, "timeout is null");
    }

    /** Throws {@link IllegalStateException} with what went wrong at {@code url}. */
    public NodeTimeline fetch(URI url, String rid)
            throws InterruptedException
    {
        String base = url.toString().endsWith("/") ? url.toString().substring(0, url.toString().length() - 1) : url.toString();
        URI endpoint = URI.create(base + "/debug/requests/" + URLEncoder.encode(rid, StandardCharsets.UTF_8).replace("+", "%20"));
        HttpRequest.Builder request = HttpRequest.newBuilder(endpoint).timeout(timeout).GET();
        apiKey.ifPresent(key -> request.header("Authorization", "Bearer " + key));
        HttpResponse<String> response;
        try {
            response = client.send(request.build(), HttpResponse.BodyHandlers.ofString());
        }
        catch (HttpConnectTimeoutException e) {
            throw new IllegalStateException(base + ": no connection within " + timeout.toMillis() + " ms; is the address right and the node up?");
        }
        catch (HttpTimeoutException e) {
            throw new IllegalStateException(base + ": no answer within " + timeout.toMillis() + " ms");
        }
        catch (ConnectException e) {
            throw new IllegalStateException(base + ": cannot connect (" + (e.getMessage() != null ? e.getMessage() : "refused")
                    + "); is a handoff server or router listening there?");
        }
        catch (IOException e) {
            throw new IllegalStateException(base + ": the request failed: " + e);
        }
        return read(base, rid, response.statusCode(), response.body());
    }

    NodeTimeline read(String base, String rid, int status, String body)
    {
        Optional<JsonNode> json = json(body);
        String code = json.map(node -> node.path("error").path("code").asText("")).orElse("");
        String message = json.map(node -> node.path("error").path("message").asText("")).orElse("");
        switch (status) {
            case 200 -> {
                NodeTimeline timeline = NodeTimeline.parse(base, json.orElseThrow(() -> new IllegalStateException(base + " answered 200 with a body that is not JSON")));
                if (!timeline.rid().equals(rid)) {
                    throw new IllegalStateException(base + " answered the timeline of rid '" + timeline.rid() + "', not '" + rid + "'");
                }
                return timeline;
            }
            case 401 -> throw new IllegalStateException(base + " needs an API key (" + message
                    + "): pass --api-key or set HANDOFF_API_KEY to one of handoff.server.api-keys");
            case 404 -> {
                if (code.equals("unknown_rid")) {
                    throw new IllegalStateException(base + ": " + message);
                }
                throw new IllegalStateException(base + " has no /debug/requests endpoint: its debug endpoints are off. Set"
                        + " handoff.server.debug-endpoints = on there (auto turns them on only when it listens on a loopback address)");
            }
            default -> throw new IllegalStateException(base + " answered HTTP " + status + (message.isEmpty() ? "" : ": " + message));
        }
    }

    private Optional<JsonNode> json(String body)
    {
        try {
            return Optional.ofNullable(mapper.readTree(body));
        }
        catch (JsonProcessingException e) {
            return Optional.empty();
        }
    }
}
