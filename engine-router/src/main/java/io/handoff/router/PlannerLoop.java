package io.handoff.router;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.handoff.http.base.Exchange;
import io.handoff.http.base.JsonFields;
import io.handoff.router.planner.Decision;
import io.handoff.router.planner.Observation;
import io.handoff.router.planner.SloPlanner;
import org.apache.logging.log4j.LogManager;
import org.apache.logging.log4j.Logger;

import java.io.IOException;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletionException;

import static java.util.Objects.requireNonNull;

/**
 * The router's side of the SLO planner ({@code handoff.router.planner = slo}): at every look it gathers what the servers'
 * health polls reported ({@link Backend#reported}: queues, and the decodes' recent TTFT and ITL) into an
 * {@link Observation}, lets the {@link SloPlanner} decide, and carries out a switch with {@code POST /admin/role} on the
 * server, which drains and comes back in its new role (and registers so). {@code GET /debug/planner} lists the decisions.
 */
final class PlannerLoop
{
    private static final Logger log = LogManager.getLogger(PlannerLoop.class);

    private final BackendPool pool;
    private final Upstream upstream;
    private final RouterConfig.Planner settings;
    private final SloPlanner planner;
    // guards the planner (one look at a time) and its decisions, which /debug/planner reads
    private final Object lock = new Object();

    PlannerLoop(BackendPool pool, Upstream upstream, RouterConfig.Planner settings)
    {
        this.pool = requireNonNull(pool, "pool is null");
        this.upstream = requireNonNull(upstream, "upstream is null");
        this.settings = requireNonNull(settings, "settings is null");
        this.planner = new SloPlanner(settings.ttftTarget(), settings.itlTarget(), settings.hysteresis(), settings.cooldown());
    }

    /** One look, and the switch it decides on if any. */
    void look()
    {
        Observation observation = observe(pool.all(), System.nanoTime());
        Decision decision;
        synchronized (lock) {
            decision = planner.look(observation);
        }
        if (decision.server().isEmpty()) {
            log.debug("planner: hold: {}", decision.reason());
            return;
        }
        Decision.Switch change = decision.server().get();
        log.info("planner: {}", decision.reason());
        Optional<Backend> server = pool.all().stream().filter(backend -> backend.member().id().equals(change.id())).findFirst();
        if (server.isEmpty()) {
            log.warn("planner: server {} left the membership before its switch to {}", change.id(), change.role());
            return;
        }
        ObjectNode body = JsonFields.MAPPER.createObjectNode().put("role", change.role());
        try {
            HttpResponse<byte[]> response = upstream.post(server.get(), "/admin/role", body, HttpResponse.BodyHandlers.ofByteArray()).join();
            if (response.statusCode() / 100 != 2) {
                log.warn("planner: {} refused the switch to {}: {} {}", server.get(), change.role(), response.statusCode(),
                        new String(response.body(), StandardCharsets.UTF_8).strip());
            }
        }
        catch (CompletionException e) {
            log.warn("planner: {} did not answer the switch to {}: {}", server.get(), change.role(), Upstream.describe(e.getCause()));
        }
    }

    /** What the servers reported, as the planner reads it: the decodes' worst recent p90s stand for the cluster's latencies. */
    static Observation observe(List<Backend> backends, long nanos)
    {
        List<Observation.Server> servers = new ArrayList<>();
        double ttft = -1;
        double itl = -1;
        for (Backend backend : backends) {
            Backend.ReportedLoad load = backend.reported();
            servers.add(new Observation.Server(backend.member().id(), backend.role() == BackendRole.PREFILL, backend.routable(), load.waiting(),
                    load.running()));
            if (backend.role() == BackendRole.DECODE && backend.routable()) {
                ttft = Math.max(ttft, load.ttftP90Seconds());
                itl = Math.max(itl, load.itlP90Seconds());
            }
        }
        return new Observation(nanos, servers, ttft < 0 ? Optional.empty() : Optional.of(ttft), itl < 0 ? Optional.empty() : Optional.of(itl));
    }

    /** {@code GET /debug/planner}: the settings and the latest decisions, newest last. */
    void show(Exchange exchange)
            throws IOException
    {
        ObjectNode body = JsonFields.MAPPER.createObjectNode();
        body.put("planner", settings.enabled() ? "slo" : "off");
        body.put("ttft_target_seconds", settings.ttftTarget().toNanos() / 1e9);
        body.put("itl_target_seconds", settings.itlTarget().toNanos() / 1e9);
        body.put("hysteresis", settings.hysteresis());
        body.put("cooldown_seconds", settings.cooldown().toNanos() / 1e9);
        ArrayNode list = body.putArray("decisions");
        long now = System.nanoTime();
        List<Decision> decisions;
        synchronized (lock) {
            decisions = planner.decisions();
        }
        for (Decision decision : decisions) {
            ObjectNode node = list.addObject();
            node.put("seconds_ago", (now - decision.nanos()) / 1e9);
            node.put("action", decision.server().isPresent() ? "switch" : "hold");
            decision.server().ifPresent(change -> node.put("server", change.id()).put("to", change.role()));
            node.put("reason", decision.reason());
        }
        exchange.sendJson(200, body);
    }
}
