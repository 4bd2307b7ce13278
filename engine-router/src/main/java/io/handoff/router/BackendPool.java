package io.handoff.router;

import io.handoff.cluster.Member;
import io.handoff.cluster.MemberRole;
import io.handoff.cluster.MembershipView;
import io.handoff.http.base.ApiError;
import io.handoff.router.prefix.RouteKey;
import org.apache.logging.log4j.LogManager;
import org.apache.logging.log4j.Logger;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.random.RandomGenerator;
import java.util.stream.Stream;

import static java.util.Objects.requireNonNull;

/**
 * The prefill and decode servers and how one of each is chosen for a request: among the routable ones (healthy, not
 * draining; prefills also not reported suspect by a decode) whose circuit breaker is not open, by each phase's
 * {@link PhaseChoice} ({@code handoff.router.policy.prefill}, {@code .decode}).
 *
 * <p>The servers are what the router's {@link io.handoff.cluster.Membership} lists, and change while it runs
 * ({@link #reconcile}): each list is a snapshot replaced whole, so a request that holds a {@link Backend} keeps it
 * even after its server was removed; a removed server's policy state (its prefix tree) goes with it.
 */
final class BackendPool
{
    private static final Logger log = LogManager.getLogger(BackendPool.class);

    /**
     * What one membership view changed.
     *
     * @param added servers new to the pool (a new member, or a new incarnation of a known one): poll them now
     * @param removed servers gone from the pool (their member left, or was replaced by a new incarnation)
     */
    record Changes(List<Backend> added, List<Backend> removed)
    {
        boolean none()
        {
            return added.isEmpty() && removed.isEmpty();
        }
    }

    private final String source;
    private final Duration retryAfter;
    private final Duration healthInterval;
    private volatile List<Backend> prefills = List.of();
    private volatile List<Backend> decodes = List.of();
    private volatile Optional<String> stale = Optional.empty();
    private final RouterConfig.Routing routing;
    private final RouterConfig.Breaker breaker;
    private final PhaseChoice prefillChoice;
    private final PhaseChoice decodeChoice;

    /**
     * @param source where the membership comes from, for messages (see {@link io.handoff.cluster.Membership#describe})
     * @param random draws power-of-two's pairs (seeded in tests)
     */
    BackendPool(String source, Duration retryAfter, RouterConfig config, RandomGenerator random)
    {
        this.source = requireNonNull(source, "source is null");
        this.retryAfter = requireNonNull(retryAfter, "retryAfter is null");
        requireNonNull(config, "config is null");
        this.healthInterval = config.healthInterval();
        this.routing = config.routing();
        this.breaker = config.breaker();
        this.prefillChoice = PhaseChoice.prefill(routing, requireNonNull(random, "random is null"));
        this.decodeChoice = PhaseChoice.decode(routing, random);
    }

    /**
     * Makes the pool list exactly {@code view}'s members: a known member of the same incarnation keeps its
     * {@link Backend} (health, requests in flight) with the newer record; a new member, or a known id with another
     * incarnation (a restart), gets a new one, polled before it is chosen; a member no longer listed is dropped.
     */
    synchronized Changes reconcile(MembershipView view)
    {
        requireNonNull(view, "view is null");
        List<Backend> added = new ArrayList<>();
        List<Backend> removed = new ArrayList<>();
        prefills = reconciled(prefills, view.of(MemberRole.PREFILL), added, removed);
        decodes = reconciled(decodes, view.of(MemberRole.DECODE), added, removed);
        if (!view.stale().equals(stale)) {
            view.stale().ifPresentOrElse(
                    reason -> log.warn("membership ({}) may be out of date: {}; routing goes on to the last known servers", source, reason),
                    () -> log.info("membership ({}) is up to date again", source));
        }
        stale = view.stale();
        for (Backend backend : removed) {
            (backend.role() == BackendRole.PREFILL ? prefillChoice : decodeChoice).removed(backend);
            log.info("{} left the membership{}", backend, backend.inFlight() > 0 ? "; its " + backend.inFlight() + " request(s) in flight finish or fail there" : "");
        }
        for (Backend backend : added) {
            log.info("{} joined the membership (incarnation {})", backend, backend.incarnation().isEmpty() ? "not known yet" : backend.incarnation());
        }
        return new Changes(List.copyOf(added), List.copyOf(removed));
    }

    private List<Backend> reconciled(List<Backend> current, List<Member> members, List<Backend> added, List<Backend> removed)
    {
        Map<String, Backend> byId = new HashMap<>();
        current.forEach(backend -> byId.put(backend.member().id(), backend));
        List<Backend> next = new ArrayList<>();
        for (Member member : members) {
            Backend known = byId.remove(member.id());
            if (known != null && known.url().equals(member.http()) && known.member().incarnation().equals(member.incarnation())) {
                known.update(member);
                next.add(known);
                continue;
            }
            if (known != null) {
                removed.add(known);
            }
            Backend fresh = backend(member);
            added.add(fresh);
            next.add(fresh);
        }
        removed.addAll(byId.values());
        return List.copyOf(next);
    }

    /** Why membership may be out of date (its store unreachable), or empty. */
    Optional<String> stale()
    {
        return stale;
    }

    String source()
    {
        return source;
    }

    private Backend backend(Member member)
    {
        return new Backend(member, new CircuitBreaker(breaker.failureThreshold(), breaker.openDuration(), System::nanoTime));
    }

    /** The prefills' policy (a test reads a cache-aware one's trees). */
    RoutingPolicy prefillPolicy()
    {
        return prefillChoice.policy();
    }

    /** The page size a decode's outstanding KV pages are estimated in. */
    int decodePageSize()
    {
        return routing.decodePageSize();
    }

    List<Backend> all()
    {
        return Stream.concat(prefills.stream(), decodes.stream()).toList();
    }

    List<Backend> of(BackendRole role)
    {
        return role == BackendRole.PREFILL ? prefills : decodes;
    }

    /** Servers of {@code role} that may get new requests: healthy and not draining. */
    long healthy(BackendRole role)
    {
        return of(role).stream().filter(Backend::routable).count();
    }

    /**
     * The prefill the policy chooses for {@code key} among the healthy ones that no decode reports suspect and whose
     * breaker lets it through, with one more request in flight; 503 when there is none.
     */
    synchronized Backend acquirePrefill(RouteKey key)
    {
        return prefillChoice.acquire(prefills.stream().filter(this::eligiblePrefill).toList(), key, 0).orElseThrow(() -> noneHealthy(BackendRole.PREFILL));
    }

    /**
     * For a retry: the prefill the policy chooses among those other than {@code avoid} (whose transfer just failed), with one
     * more request in flight; {@code avoid} itself when it is the only one; 503 when there is none.
     */
    synchronized Backend acquirePrefillOtherThan(Backend avoid, RouteKey key)
    {
        List<Backend> others = prefills.stream().filter(prefill -> prefill != avoid && eligiblePrefill(prefill)).toList();
        return prefillChoice.acquire(others, key, 0).orElseGet(() -> acquirePrefill(key));
    }

    private boolean eligiblePrefill(Backend prefill)
    {
        return prefill.routable() && prefill.control().isPresent() && !suspect(prefill);
    }

    /** Whether some prefill could take a request now: eligible (healthy, not draining or suspect, with a control endpoint), breaker closed. */
    synchronized boolean prefillAvailable()
    {
        return prefills.stream().anyMatch(prefill -> eligiblePrefill(prefill) && prefill.breaker().available());
    }

    /** Whether a healthy prefill other than {@code other} could take a retry. */
    synchronized boolean anotherPrefill(Backend other)
    {
        return prefills.stream().anyMatch(prefill -> prefill != other && eligiblePrefill(prefill) && prefill.breaker().available());
    }

    /** Whether a decode reports this prefill suspect (see {@link HealthCheck}). */
    boolean suspect(Backend prefill)
    {
        Optional<String> control = prefill.control();
        return control.isPresent() && decodes.stream().anyMatch(decode -> decode.suspectPeers().contains(control.get()));
    }

    /**
     * The decode the policy chooses for {@code key} among the healthy ones whose breaker lets it through, with one more
     * request in flight holding {@code pages} (an estimate); 503 when there is none.
     */
    synchronized Backend acquireDecode(RouteKey key, long pages)
    {
        return decodeChoice.acquire(decodes.stream().filter(Backend::routable).toList(), key, pages).orElseThrow(() -> noneHealthy(BackendRole.DECODE));
    }

    /** A healthy server of {@code role} for a read-only call (e.g. {@code /v1/models}), without counting it as in flight. */
    Optional<Backend> anyHealthy(BackendRole role)
    {
        return of(role).stream().filter(Backend::routable).min((a, b) -> Integer.compare(a.inFlight(), b.inFlight()));
    }

    /** 503 with Retry-After when a side has no healthy server, naming that side (or both) and why each of its servers is out. */
    Optional<ApiError> missing()
    {
        return missing(false);
    }

    /**
     * The same, where with {@code decodesSuffice} (the decode-local fallback) a pool with a healthy decode misses nothing: its
     * decodes compute the prompts no prefill can.
     */
    Optional<ApiError> missing(boolean decodesSuffice)
    {
        if (decodesSuffice && healthy(BackendRole.DECODE) > 0) {
            return Optional.empty();
        }
        List<BackendRole> missing = Stream.of(BackendRole.values()).filter(role -> healthy(role) == 0).toList();
        if (missing.isEmpty()) {
            return Optional.empty();
        }
        String code = missing.size() == 1 ? "no_healthy_" + missing.getFirst().label() : "no_healthy_servers";
        return Optional.of(unavailable(code, missing));
    }

    /** Why a healthy server gets no requests. */
    private String whyOut(Backend server)
    {
        if (server.draining()) {
            return "draining: membership says it is on its way out";
        }
        if (server.role() == BackendRole.PREFILL && suspect(server)) {
            return "healthy, but a decode reports it suspect: it did not drain within the decode's drain deadline; restart it";
        }
        if (server.role() == BackendRole.PREFILL && server.control().isEmpty()) {
            return "healthy, but without a KV-transfer control endpoint";
        }
        return "healthy, but its circuit breaker is " + server.breaker().describe() + ": requests failed there "
                + breaker.failureThreshold() + " times in a row (handoff.router.circuit-breaker.failure-threshold); one trial request goes "
                + "there " + breaker.openDuration().toMillis() + " ms after it opened (handoff.router.circuit-breaker.open-duration)";
    }

    ApiError noneHealthy(BackendRole role)
    {
        return unavailable("no_healthy_" + role.label(), List.of(role));
    }

    private ApiError unavailable(String code, List<BackendRole> roles)
    {
        StringBuilder message = new StringBuilder();
        for (BackendRole role : roles) {
            message.append("no healthy ").append(role.label()).append(" server: ");
            List<Backend> servers = of(role);
            if (servers.isEmpty()) {
                message.append("none is listed by ").append(source).append(stale.map(reason -> " (which may be out of date: " + reason + ")").orElse(""));
            }
            for (int i = 0; i < servers.size(); i++) {
                Backend server = servers.get(i);
                message.append(i == 0 ? "" : "; ").append(server.url()).append(" (").append(server.unhealthyReason().orElseGet(() -> whyOut(server))).append(')');
            }
            message.append(". ");
        }
        message.append("The router polls every server every ").append(healthInterval.toMillis()).append(" ms (handoff.router.health-interval)"
                + " and sends requests to one again as soon as it is healthy");
        return ApiError.unavailable(code, message.toString(), retryAfter);
    }
}
