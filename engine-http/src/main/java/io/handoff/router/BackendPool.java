package io.handoff.router;

import io.handoff.http.ApiError;

import java.net.URI;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.random.RandomGenerator;
import java.util.stream.Stream;

import static java.util.Objects.requireNonNull;

/**
 * The prefill and decode servers and how one of each is chosen for a request: among the healthy ones (prefills
 * also not reported suspect by a decode) whose circuit breaker is not open, by each phase's {@link PhaseChoice}
 * ({@code handoff.router.policy.prefill}, {@code .decode}).
 */
final class BackendPool
{
    private final List<Backend> prefills;
    private final List<Backend> decodes;
    private final Duration retryAfter;
    private final Duration healthInterval;
    private final RouterConfig.Routing routing;
    private final RouterConfig.Breaker breaker;
    private final PhaseChoice prefillChoice;
    private final PhaseChoice decodeChoice;

    /** @param random draws power-of-two's pairs (seeded in tests) */
    BackendPool(List<URI> prefills, List<URI> decodes, Duration retryAfter, RouterConfig config, RandomGenerator random)
    {
        requireNonNull(config, "config is null");
        this.routing = config.routing();
        this.breaker = config.breaker();
        this.prefills = requireNonNull(prefills, "prefills is null").stream().map(url -> backend(url, BackendRole.PREFILL)).toList();
        this.decodes = requireNonNull(decodes, "decodes is null").stream().map(url -> backend(url, BackendRole.DECODE)).toList();
        this.retryAfter = requireNonNull(retryAfter, "retryAfter is null");
        this.healthInterval = config.healthInterval();
        this.prefillChoice = PhaseChoice.prefill(routing, random);
        this.decodeChoice = PhaseChoice.decode(routing, random);
        if (prefills.isEmpty() || decodes.isEmpty()) {
            throw new IllegalArgumentException("a router needs at least one prefill and one decode server");
        }
    }

    private Backend backend(URI url, BackendRole role)
    {
        return new Backend(url, role, new CircuitBreaker(breaker.failureThreshold(), breaker.openDuration(), System::nanoTime));
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

    long healthy(BackendRole role)
    {
        return of(role).stream().filter(Backend::healthy).count();
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
        return prefill.healthy() && prefill.control().isPresent() && !suspect(prefill);
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
        return decodeChoice.acquire(decodes.stream().filter(Backend::healthy).toList(), key, pages).orElseThrow(() -> noneHealthy(BackendRole.DECODE));
    }

    /** A healthy server of {@code role} for a read-only call (e.g. {@code /v1/models}), without counting it as in flight. */
    Optional<Backend> anyHealthy(BackendRole role)
    {
        return of(role).stream().filter(Backend::healthy).min((a, b) -> Integer.compare(a.inFlight(), b.inFlight()));
    }

    /** 503 with Retry-After when a side has no healthy server, naming that side (or both) and why each of its servers is out. */
    Optional<ApiError> missing()
    {
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
