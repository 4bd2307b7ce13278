package io.handoff.http.base;

import com.sun.net.httpserver.HttpExchange;
import org.apache.logging.log4j.LogManager;
import org.apache.logging.log4j.Logger;

import java.io.IOException;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeSet;

import static java.util.Objects.requireNonNull;

/**
 * The route table of an HTTP API and how every exchange is answered: the {@link RequestGuard} (rate limit, API
 * key) for every route but the open ones, 404 for an unknown path (and for a debug route while debug endpoints
 * are off, so that they cannot even be found), 405 with {@code Allow} for a wrong method, an {@link ApiError} as
 * the OpenAI-style error object, and every exchange counted by route and status. The colocated server and the
 * router share it, so their clients see the same errors.
 */
public final class HttpRoutes
{
    private static final Logger log = LogManager.getLogger(HttpRoutes.class);

    @FunctionalInterface
    public interface Handler
    {
        void handle(Exchange exchange)
                throws IOException, InterruptedException;
    }

    /** Who may reach a route. */
    public enum Access
    {
        /** Anyone, without a key and without counting against the rate limit: liveness probes. */
        OPEN,
        /** Clients with an API key (when keys are configured), within the rate limit. */
        GUARDED,
        /** Like {@link #GUARDED}, and only while {@code handoff.server.debug-endpoints} is on; else the route does not exist. */
        DEBUG
    }

    /** @param method the HTTP method it answers, or several as the {@code Allow} header lists them ({@code "GET, POST"}) */
    public record Route(String method, Handler handler, Access access)
    {
        public Route
        {
            requireNonNull(method, "method is null");
            requireNonNull(handler, "handler is null");
            requireNonNull(access, "access is null");
        }

        boolean allows(String requested)
        {
            return List.of(method.split(", ")).contains(requested);
        }

        public Route(String method, Handler handler)
        {
            this(method, handler, Access.GUARDED);
        }
    }

    private final Map<String, Route> routes;
    private final long maxBodyBytes;
    private final RequestGuard guard;
    private final HttpRequestCounts counts;

    /** The routes of a server configured by {@code config}: its body limit, keys, rate limit and debug endpoints. */
    public HttpRoutes(Map<String, Route> routes, ServerConfig config, HttpRequestCounts counts)
    {
        this(routes, config.maxBodyBytes(), config.access().debugEndpoints(), RequestGuard.of(config), counts);
    }

    public HttpRoutes(Map<String, Route> routes, long maxBodyBytes, boolean debugEndpoints, RequestGuard guard, HttpRequestCounts counts)
    {
        requireNonNull(routes, "routes is null");
        Map<String, Route> visible = new HashMap<>(routes);
        if (!debugEndpoints) {
            visible.values().removeIf(route -> route.access() == Access.DEBUG);
        }
        this.routes = Map.copyOf(visible);
        this.maxBodyBytes = maxBodyBytes;
        this.guard = requireNonNull(guard, "guard is null");
        this.counts = requireNonNull(counts, "counts is null");
    }

    /** {@code routes} and {@code more} in one table (a server's own routes and, say, its debug routes). */
    public static Map<String, Route> union(Map<String, Route> routes, Map<String, Route> more)
    {
        Map<String, Route> all = new HashMap<>(routes);
        all.putAll(more);
        return Map.copyOf(all);
    }

    public void dispatch(HttpExchange raw)
    {
        String path = raw.getRequestURI().getPath();
        String key = routeKey(path);
        Route route = routes.get(key);
        String counted = route == null ? "other" : key;
        Exchange exchange = new Exchange(raw, maxBodyBytes, status -> counts.record(counted, status));
        try {
            if (route == null || route.access() != Access.OPEN) {
                // before the 404 too: without a key, which endpoints exist is none of the client's business
                guard.check(exchange, raw.getRemoteAddress().getAddress(), raw.getRequestHeaders().getFirst("Authorization"));
            }
            if (route == null) {
                throw ApiError.notFound("not_found", null, "no endpoint " + path + "; endpoints: " + String.join(", ", new TreeSet<>(routes.keySet())));
            }
            if (!route.allows(exchange.method())) {
                exchange.setHeader("Allow", route.method());
                throw ApiError.methodNotAllowed(exchange.method(), path, route.method());
            }
            route.handler().handle(exchange);
        }
        catch (ApiError error) {
            respond(exchange, error);
        }
        catch (IOException e) {
            // The client went away mid-exchange; the handler has aborted whatever it had started for it.
            log.debug("{} {}: {}", exchange.method(), path, e.toString());
        }
        catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            respond(exchange, ApiError.unavailable("shutting_down", "the server is shutting down"));
        }
        catch (RuntimeException e) {
            log.error("{} {} failed", exchange.method(), path, e);
            respond(exchange, ApiError.internal("internal error: " + e));
        }
        finally {
            if (exchange.status() == -1) {
                // 499 (nginx's convention): the client closed the connection before any response was sent.
                counts.record(counted, 499);
            }
            exchange.close();
        }
    }

    /**
     * The key of the route that answers {@code path}: the path itself, or a prefix route {@code /a/b/*} for a path
     * {@code /a/b/REST} (REST not empty) that has no route of its own. Counted under the key, so a rid in a path never
     * becomes a metric label.
     */
    private String routeKey(String path)
    {
        if (routes.containsKey(path)) {
            return path;
        }
        for (String key : routes.keySet()) {
            if (key.endsWith("/*") && path.length() > key.length() - 1 && path.startsWith(key.substring(0, key.length() - 1))) {
                return key;
            }
        }
        return path;
    }

    private static void respond(Exchange exchange, ApiError error)
    {
        if (exchange.status() != -1) {
            log.warn("{} {}: {} after the response had started", exchange.method(), exchange.path(), error.getMessage());
            return;
        }
        try {
            exchange.sendError(error);
        }
        catch (IOException e) {
            log.debug("{} {}: could not send the error: {}", exchange.method(), exchange.path(), e.toString());
        }
    }
}
