package io.handoff.http;

import com.fasterxml.jackson.databind.JsonNode;
import com.sun.net.httpserver.HttpServer;
import io.handoff.http.base.HttpRequestCounts;
import io.handoff.http.base.HttpRoutes;
import io.handoff.http.base.HttpRoutes.Access;
import io.handoff.http.base.HttpRoutes.Route;
import io.handoff.http.base.RequestGuard;
import io.handoff.http.base.security.ApiKeys;
import io.handoff.http.base.security.RateLimiter;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.atomic.AtomicLong;

import static io.handoff.http.ApiServerTest.assertError;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * The guard in front of every route, over a real HTTP server on loopback with trivial routes: API keys (401 and
 * its header), open routes, hidden debug routes, and the rate limit driven by a clock the test moves.
 */
class HttpRoutesAccessTest
{
    private static final Map<String, Route> ROUTES = Map.of(
            "/work", new Route("GET", exchange -> exchange.sendText(200, "text/plain", "done")),
            "/health", new Route("GET", exchange -> exchange.sendText(200, "text/plain", "ok"), Access.OPEN),
            "/debug/state", new Route("GET", exchange -> exchange.sendText(200, "text/plain", "state"), Access.DEBUG));

    private final AtomicLong clock = new AtomicLong();
    private final ExecutorService executor = Executors.newVirtualThreadPerTaskExecutor();
    private final HttpClient client = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();
    private final HttpRequestCounts counts = new HttpRequestCounts();
    private HttpServer server;

    @AfterEach
    void stop()
    {
        server.stop(0);
        executor.shutdownNow();
        client.close();
    }

    @Test
    void withoutAKeyEveryGuardedRouteIs401WithAnOpenAiErrorAndABearerChallenge()
            throws Exception
    {
        serve(ApiKeys.of(List.of("k-acc")), RateLimiter.off(), false);

        HttpResponse<String> missing = get("/work", null);
        HttpResponse<String> wrong = get("/work", "Bearer k-wrong");
        HttpResponse<String> unknown = get("/not-there", null);
        HttpResponse<String> right = get("/work", "Bearer k-acc");

        assertThat(missing.statusCode()).isEqualTo(401);
        assertThat(missing.headers().firstValue("WWW-Authenticate")).contains("Bearer realm=\"handoff\"");
        assertError(json(missing), "missing_api_key", "", "send the header 'Authorization: Bearer <key>'");
        assertThat(json(missing).get("error").get("type").asText()).isEqualTo("invalid_request_error");
        assertThat(wrong.statusCode()).isEqualTo(401);
        assertThat(wrong.headers().firstValue("WWW-Authenticate")).contains("Bearer realm=\"handoff\", error=\"invalid_token\"");
        assertError(json(wrong), "invalid_api_key", "", "the API key sent is not one of this server's keys");
        assertThat(wrong.body()).doesNotContain("k-wrong").doesNotContain("k-acc");
        // which endpoints exist is not told to a client without a key
        assertThat(unknown.statusCode()).isEqualTo(401);
        assertThat(right.statusCode()).isEqualTo(200);
        assertThat(right.body()).isEqualTo("done");
    }

    @Test
    void anOpenRouteNeedsNoKeyAndIsNotRateLimited()
            throws Exception
    {
        serve(ApiKeys.of(List.of("k-acc")), new RateLimiter(1, 1, clock::get), false);

        for (int i = 0; i < 5; i++) {
            assertThat(get("/health", null).statusCode()).isEqualTo(200);
        }
        assertThat(get("/work", "Bearer k-acc").statusCode()).isEqualTo(200);
    }

    @Test
    void aDebugRouteDoesNotExistUnlessDebugEndpointsAreOn()
            throws Exception
    {
        serve(ApiKeys.NONE, RateLimiter.off(), false);
        HttpResponse<String> hidden = get("/debug/state", null);
        assertThat(hidden.statusCode()).isEqualTo(404);
        assertError(json(hidden), "not_found", "", "no endpoint /debug/state; endpoints: /health, /work");
        server.stop(0);

        serve(ApiKeys.NONE, RateLimiter.off(), true);
        assertThat(get("/debug/state", null).body()).isEqualTo("state");
    }

    @Test
    void anAddressOverItsRateGets429WithRetryAfterUntilTheClockRefillsItsBucket()
            throws Exception
    {
        serve(ApiKeys.NONE, new RateLimiter(0.5, 2, clock::get), false);

        assertThat(get("/work", null).statusCode()).isEqualTo(200);
        assertThat(get("/work", null).statusCode()).isEqualTo(200);
        HttpResponse<String> limited = get("/work", null);

        assertThat(limited.statusCode()).isEqualTo(429);
        assertThat(limited.headers().firstValue("Retry-After")).contains("2");
        assertError(json(limited), "rate_limit_exceeded", "", "too many requests from 127.0.0.1: at most 0.5 per second, 2 at once");
        assertThat(json(limited).get("error").get("type").asText()).isEqualTo("requests");

        clock.addAndGet(Duration.ofMillis(1999).toNanos());
        assertThat(get("/work", null).statusCode()).isEqualTo(429);
        clock.addAndGet(Duration.ofMillis(1).toNanos());
        assertThat(get("/work", null).statusCode()).isEqualTo(200);
    }

    @Test
    void theRateLimitComesBeforeTheKeySoGuessingKeysIsThrottledToo()
            throws Exception
    {
        serve(ApiKeys.of(List.of("k-acc")), new RateLimiter(1, 2, clock::get), false);

        assertThat(get("/work", "Bearer guess-1").statusCode()).isEqualTo(401);
        assertThat(get("/work", "Bearer guess-2").statusCode()).isEqualTo(401);
        assertThat(get("/work", "Bearer k-acc").statusCode()).isEqualTo(429);
    }

    private void serve(ApiKeys keys, RateLimiter limiter, boolean debugEndpoints)
            throws IOException
    {
        server = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 0);
        server.setExecutor(executor);
        server.createContext("/", new HttpRoutes(ROUTES, 1 << 20, debugEndpoints, new RequestGuard(keys, limiter), counts)::dispatch);
        server.start();
    }

    private HttpResponse<String> get(String path, String authorization)
            throws IOException, InterruptedException
    {
        HttpRequest.Builder request = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + server.getAddress().getPort() + path)).GET();
        if (authorization != null) {
            request.header("Authorization", authorization);
        }
        return client.send(request.build(), HttpResponse.BodyHandlers.ofString());
    }

    private static JsonNode json(HttpResponse<String> response)
    {
        return LocalServer.json(response);
    }
}
