package io.handoff.router;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.sun.net.httpserver.HttpServer;
import io.handoff.cluster.Membership;
import io.handoff.cluster.MembershipView;
import io.handoff.cluster.StaticMembership;
import io.handoff.http.base.AbortRequest;
import io.handoff.http.base.AccessNotice;
import io.handoff.http.base.ApiError;
import io.handoff.http.base.Exchange;
import io.handoff.http.base.HttpRoutes;
import io.handoff.http.base.HttpRoutes.Route;
import io.handoff.http.base.JdkHttpServerLimits;
import io.handoff.http.base.JsonFields;
import io.handoff.http.base.PrometheusText;
import io.handoff.http.base.ServerConfig;
import io.handoff.http.base.TimelineEndpoint;
import io.handoff.router.prefix.RouteKeys;
import io.handoff.trace.Timelines;
import org.apache.logging.log4j.LogManager;
import org.apache.logging.log4j.Logger;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.URI;
import java.net.URISyntaxException;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;

import static java.util.Objects.requireNonNull;

/**
 * {@code handoff router}: one HTTP endpoint in front of prefill and decode servers. It answers the same
 * API as a colocated server ({@code /generate}, {@code /v1/completions}, {@code /v1/chat/completions}, {@code /v1/responses}, {@code /abort_request}, {@code /health},
 * {@code /metrics}, with the same errors), pairs each generation request with a healthy prefill and decode
 * ({@link PairedRequests}), answers the model and admin queries from its servers ({@link BackendQueries}), and lists
 * its servers at {@code GET /backends}. Its servers are what a {@link Membership} lists (the command line's lists, an
 * etcd prefix, a Kubernetes label selector), followed while it runs: servers join and leave without a restart.
 *
 * <p>Like the server, each exchange runs on its own virtual thread, and so do the calls to the servers.
 */
public final class Router
        implements AutoCloseable
{
    private static final Logger log = LogManager.getLogger(Router.class);

    private final ServerConfig serverConfig;
    private final RouterConfig config;
    private final Membership membership;
    private final ExecutorService executor = Executors.newVirtualThreadPerTaskExecutor();
    private final ScheduledExecutorService poller = Executors.newSingleThreadScheduledExecutor(
            Thread.ofPlatform().daemon().name("handoff-router-health").factory());
    private final Upstream upstream;
    private final BackendPool pool;
    private final HealthCheck healthCheck;
    private final RouterMetrics metrics = new RouterMetrics();
    private final PairedRequests requests;
    private final PlannerLoop planner;
    private final HttpServer server;
    private volatile boolean draining;
    // false until the first poll of every server: a server that joins before it is polled with the rest
    private volatile boolean polling;
    private boolean stopped;

    private Router(ServerConfig serverConfig, RouterConfig config, Membership membership, Timelines timelines)
            throws IOException
    {
        this.serverConfig = requireNonNull(serverConfig, "serverConfig is null");
        this.config = requireNonNull(config, "config is null");
        this.membership = requireNonNull(membership, "membership is null");
        this.pool = new BackendPool(membership.describe(), serverConfig.retryAfter(), config, new SplittableRandom());
        // Bound before any thread or client exists: a port in use fails here with nothing to clean up.
        JdkHttpServerLimits.apply(serverConfig.limits());
        this.server = HttpServer.create(new InetSocketAddress(serverConfig.host(), serverConfig.port()), 0);
        this.upstream = new Upstream(config, executor, serverConfig.access().apiKeys().ownKey(), serverConfig.access().routerSigner());
        this.healthCheck = new HealthCheck(upstream, config.healthTimeout(), config.unhealthyAfterTimeouts(),
                (backend, role) -> membership.roleReported(backend.member().id(), role));
        this.requests = new PairedRequests(pool, upstream, metrics, RoomIds.random(), timelines,
                new RetryPlan(config.retry(), new SplittableRandom(), Sleeper.SYSTEM), new RouteKeys(config.routing().keyChars()), config.fallback());
        BackendQueries queries = new BackendQueries(pool, upstream, config.healthTimeout());
        this.planner = new PlannerLoop(pool, upstream, config.planner());
        Map<String, Route> routes = HttpRoutes.union(HttpRoutes.union(new TimelineEndpoint(timelines, "router").routes(), Map.of(
                "/generate", new Route("POST", requests::forward),
                "/v1/completions", new Route("POST", requests::forward),
                "/v1/chat/completions", new Route("POST", requests::forward),
                "/v1/responses", new Route("POST", requests::forward),
                "/abort_request", new Route("POST", exchange -> AbortRequest.handle(exchange, requests::abort, " through this router")),
                // open, as on the servers: a load balancer probes it without a key
                "/health", new Route("GET", this::health, HttpRoutes.Access.OPEN),
                "/health_generate", new Route("GET", this::healthGenerate),
                "/backends", new Route("GET", this::backends),
                "/debug/planner", new Route("GET", planner::show),
                "/metrics", new Route("GET", this::metrics))), queryRoutes(queries));
        server.setExecutor(executor);
        server.createContext("/", new HttpRoutes(routes, serverConfig, metrics.httpRequests())::dispatch);
        AccessNotice.log(serverConfig, false);
    }

    /**
     * Polls every server once (so the first requests find the healthy ones), binds
     * {@code serverConfig.host():port}, starts answering, and polls every {@code config.healthInterval()}.
     */
    public static Router start(ServerConfig serverConfig, RouterConfig config, List<URI> prefills, List<URI> decodes)
            throws IOException, InterruptedException
    {
        return start(serverConfig, config, prefills, decodes, new Timelines(Timelines.DEFAULT_REQUESTS));
    }

    /** @param timelines where each request's way through the router is kept, for {@code GET /debug/requests/{rid}} */
    public static Router start(ServerConfig serverConfig, RouterConfig config, List<URI> prefills, List<URI> decodes, Timelines timelines)
            throws IOException, InterruptedException
    {
        if (prefills.isEmpty() || decodes.isEmpty()) {
            throw new IllegalArgumentException("a router needs at least one prefill and one decode server");
        }
        return start(serverConfig, config, new StaticMembership(prefills, decodes), timelines);
    }

    /**
     * Starts following {@code membership} (the router owns it from here and closes it), polls every server it lists
     * once, binds {@code serverConfig.host():port}, starts answering, and polls every {@code config.healthInterval()}.
     * A membership that lists no server yet is not an error: the router answers 503 until servers join.
     *
     * @throws IllegalStateException when the membership cannot be read at all (its store unreachable at start)
     */
    public static Router start(ServerConfig serverConfig, RouterConfig config, Membership membership, Timelines timelines)
            throws IOException, InterruptedException
    {
        Router router;
        try {
            router = new Router(serverConfig, config, membership, timelines);
        }
        catch (IOException | RuntimeException e) {
            membership.close();
            throw e;
        }
        try {
            try {
                membership.start(router::follow);
            }
            catch (IOException e) {
                throw new IllegalStateException("cannot read the cluster's membership from " + membership.describe() + ": " + e.getMessage(), e);
            }
            router.probeBackends();
            router.polling = true;
            router.server.start();
        }
        catch (InterruptedException | RuntimeException e) {
            router.server.stop(0);
            router.release();
            throw e;
        }
        long interval = config.healthInterval().toNanos();
        router.poller.scheduleWithFixedDelay(router::pollQuietly, interval, interval, TimeUnit.NANOSECONDS);
        if (config.planner().enabled()) {
            long look = config.planner().interval().toNanos();
            router.poller.scheduleWithFixedDelay(router::planQuietly, look, look, TimeUnit.NANOSECONDS);
            log.info("SLO planner on: TTFT target {}, ITL target {}, a look every {}", config.planner().ttftTarget(), config.planner().itlTarget(),
                    config.planner().interval());
        }
        return router;
    }

    /**
     * A server URL as the command line gives it: {@code http://HOST:PORT} (or {@code https://}), or
     * {@code HOST:PORT} meaning {@code http://HOST:PORT}.
     */
    public static URI backendUrl(String text)
    {
        String given = requireNonNull(text, "text is null").strip();
        String withScheme = given.contains("://") ? given : "http://" + given;
        URI url;
        try {
            url = new URI(withScheme);
        }
        catch (URISyntaxException e) {
            throw new IllegalArgumentException("'" + given + "' is not a URL: " + e.getReason());
        }
        if (!"http".equals(url.getScheme()) && !"https".equals(url.getScheme())) {
            throw new IllegalArgumentException("'" + given + "' is not an http:// or https:// URL");
        }
        if (url.getHost() == null || url.getPort() == -1) {
            throw new IllegalArgumentException("'" + given + "' does not name a host and a port, e.g. http://10.0.0.5:30000");
        }
        if (url.getQuery() != null || url.getFragment() != null || url.getUserInfo() != null) {
            throw new IllegalArgumentException("'" + given + "' must be just a server's address, without user info, query or fragment");
        }
        String path = url.getPath() == null || url.getPath().equals("/") ? "" : url.getPath();
        return URI.create(url.getScheme() + "://" + url.getRawAuthority() + path);
    }

    /** Where it listens (with the actual port when the configured one was 0). */
    public InetSocketAddress address()
    {
        return server.getAddress();
    }

    /** Takes a new membership view: the pool follows it, and servers new to it are polled at once. */
    private void follow(MembershipView view)
    {
        BackendPool.Changes changes = pool.reconcile(view);
        if (!polling) {
            return;
        }
        for (Backend added : changes.added()) {
            executor.execute(() -> {
                try {
                    healthCheck.probe(added);
                }
                catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
                catch (RuntimeException e) {
                    log.error("health poll of {} failed", added, e);
                }
            });
        }
    }

    /** One health poll of every server, concurrently; returns when all have answered or timed out. */
    synchronized void probeBackends()
            throws InterruptedException
    {
        List<Callable<Void>> probes = new ArrayList<>();
        for (Backend backend : pool.all()) {
            probes.add(() -> {
                healthCheck.probe(backend);
                return null;
            });
        }
        executor.invokeAll(probes);
    }

    private void planQuietly()
    {
        try {
            planner.look();
        }
        catch (RuntimeException e) {
            log.error("planner look failed", e);
        }
    }

    private void pollQuietly()
    {
        try {
            probeBackends();
        }
        catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        catch (RuntimeException e) {
            log.error("health poll failed", e);
        }
    }

    /** A {@code {"status": "ok"}} body to fill in, or 503 while shutting down or while a side has no healthy server. */
    private ObjectNode okWhileServing()
    {
        if (draining) {
            throw ApiError.unavailable("shutting_down", "the router is shutting down");
        }
        pool.missing(requests.fallsBackToDecodes()).ifPresent(error -> {
            throw error;
        });
        ObjectNode body = JsonFields.MAPPER.createObjectNode();
        body.put("status", "ok");
        if (pool.healthy(BackendRole.PREFILL) == 0) {
            body.put("degraded", "no healthy prefill: decodes compute the prompts themselves (handoff.router.fallback = decode-local)");
        }
        return body;
    }

    private void health(Exchange exchange)
            throws IOException
    {
        ObjectNode body = okWhileServing();
        for (BackendRole role : BackendRole.values()) {
            body.putObject(role.label()).put("healthy", pool.healthy(role)).put("total", pool.of(role).size());
        }
        ObjectNode source = body.putObject("membership");
        source.put("source", pool.source());
        source.put("stale", pool.stale().orElse(null));
        exchange.sendJson(200, body);
    }

    /**
     * {@code GET /health_generate} of a healthy prefill and of a healthy decode: 200 when both generated their
     * one token, 503 naming the server that did not. The servers bound their own wait
     * ({@code handoff.server.health-generate-timeout}); the router waits that long plus its health-timeout.
     */
    private void healthGenerate(Exchange exchange)
            throws IOException, InterruptedException
    {
        ObjectNode body = okWhileServing();
        for (BackendRole role : BackendRole.values()) {
            Backend backend = pool.anyHealthy(role).orElseThrow(() -> pool.noneHealthy(role));
            HttpResponse<byte[]> response;
            try {
                response = upstream.get(backend, "/health_generate", serverConfig.healthGenerateTimeout().plus(config.healthTimeout()));
            }
            catch (IOException e) {
                throw ApiError.unavailable("unhealthy", backend.describe() + " did not answer GET /health_generate: " + Upstream.describe(e));
            }
            String answer = new String(response.body(), StandardCharsets.UTF_8);
            if (response.statusCode() != 200) {
                throw ApiError.unavailable("unhealthy", backend.describe() + " answered GET /health_generate with " + response.statusCode()
                        + ": " + answer.strip());
            }
            ObjectNode entry = body.putObject(role.label());
            entry.put("url", backend.url().toString());
            try {
                entry.set("answer", JsonFields.MAPPER.readTree(answer));
            }
            catch (IOException e) {
                throw ApiError.unavailable("unhealthy", backend.describe() + " answered GET /health_generate with something other than JSON: "
                        + answer.strip());
            }
        }
        exchange.sendJson(200, body);
    }

    /** What a decode answers for the whole deployment, and the cache flush every server does. */
    private static Map<String, Route> queryRoutes(BackendQueries queries)
    {
        Map<String, Route> routes = new java.util.HashMap<>();
        for (String path : List.of("/v1/models", "/v1/models/*", "/get_model_info", "/get_server_info", "/version")) {
            routes.put(path, new Route("GET", queries::fromDecode));
        }
        for (String path : List.of("/tokenize", "/detokenize", "/v1/tokenize", "/v1/detokenize")) {
            routes.put(path, new Route("POST", queries::fromDecode));
        }
        routes.put("/flush_cache", new Route("GET, POST", queries::flushAll));
        return Map.copyOf(routes);
    }

    private void backends(Exchange exchange)
            throws IOException
    {
        ArrayNode list = JsonFields.MAPPER.createArrayNode();
        for (Backend backend : pool.all()) {
            ObjectNode entry = list.addObject();
            entry.put("id", backend.member().id());
            entry.put("url", backend.url().toString());
            entry.put("role", backend.role().label());
            entry.put("incarnation", backend.incarnation().isEmpty() ? null : backend.incarnation());
            entry.put("healthy", backend.healthy());
            entry.put("draining", backend.draining());
            entry.put("in_flight", backend.inFlight());
            entry.put("control", backend.control().orElse(null));
            entry.put("reason", backend.unhealthyReason().orElse(null));
            // an open breaker keeps a healthy server out of choice, as an unhealthy one
            ObjectNode breaker = entry.putObject("circuit_breaker");
            breaker.put("state", backend.breaker().state().label());
            breaker.put("failures_in_a_row", backend.breaker().failuresInARow());
            if (backend.role() == BackendRole.PREFILL) {
                // a decode reports it suspect: healthy, but not paired (docs/operations.md, Suspect prefills)
                entry.put("suspect", pool.suspect(backend));
            }
            else {
                entry.put("outstanding_pages", backend.pages());
                backend.suspectPeers().forEach(entry.putArray("suspect_peers")::add);
            }
            entry.set("bootstrap", backend.bootstrap().orElse(null));
        }
        exchange.sendJson(200, list);
    }

    private void metrics(Exchange exchange)
            throws IOException
    {
        exchange.sendText(200, PrometheusText.CONTENT_TYPE, metrics.render(pool.all(), requests.inFlight()));
    }

    /**
     * Graceful shutdown within {@code grace}: new requests get 503, those in flight may finish during the
     * first three quarters, the rest are aborted on both of their servers, then the HTTP server stops.
     */
    public void shutdown(Duration grace)
            throws InterruptedException
    {
        synchronized (this) {
            if (stopped) {
                return;
            }
            stopped = true;
        }
        draining = true;
        long start = System.nanoTime();
        int aborted = requests.drain(start + grace.toNanos() * 3 / 4, start + grace.toNanos() * 9 / 10);
        server.stop(0);
        release();
        log.info("router stopped after {} ms ({} in-flight request(s) aborted)", (System.nanoTime() - start) / 1_000_000, aborted);
    }

    private void release()
    {
        membership.close();
        poller.shutdownNow();
        upstream.close();
        executor.shutdownNow();
    }

    @Override
    public void close()
    {
        try {
            shutdown(serverConfig.gracePeriod());
        }
        catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
