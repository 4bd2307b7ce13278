package io.handoff.router;

import io.handoff.http.ApiError;

import java.net.URI;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.stream.Stream;

import static java.util.Objects.requireNonNull;

/**
 * The prefill and decode servers and how one of each is chosen for a request: prefills round-robin over
 * the healthy ones; decodes least-loaded (fewest requests in flight from this router, since a decode holds
 * a request's KV for its whole generation), ties round-robin. An unhealthy server is skipped.
 */
final class BackendPool
{
    private final List<Backend> prefills;
    private final List<Backend> decodes;
    private final Duration retryAfter;
    private final Duration healthInterval;
    private int prefillCursor;
    private int decodeCursor;

    BackendPool(List<URI> prefills, List<URI> decodes, Duration retryAfter, Duration healthInterval)
    {
        this.prefills = requireNonNull(prefills, "prefills is null").stream().map(url -> new Backend(url, BackendRole.PREFILL)).toList();
        this.decodes = requireNonNull(decodes, "decodes is null").stream().map(url -> new Backend(url, BackendRole.DECODE)).toList();
        this.retryAfter = requireNonNull(retryAfter, "retryAfter is null");
        this.healthInterval = requireNonNull(healthInterval, "healthInterval is null");
        if (prefills.isEmpty() || decodes.isEmpty()) {
            throw new IllegalArgumentException("a router needs at least one prefill and one decode server");
        }
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
     * The next healthy prefill that no decode reports suspect, with one more request in flight; 503 when there is
     * none.
     */
    synchronized Backend acquirePrefill()
    {
        for (int k = 0; k < prefills.size(); k++) {
            int i = (prefillCursor + k) % prefills.size();
            Backend prefill = prefills.get(i);
            if (prefill.healthy() && prefill.control().isPresent() && !suspect(prefill)) {
                prefillCursor = (i + 1) % prefills.size();
                prefill.acquire();
                return prefill;
            }
        }
        throw noneHealthy(BackendRole.PREFILL);
    }

    /**
     * For a retry: the next healthy prefill other than {@code avoid} (whose transfer just failed), with one more request in
     * flight; {@code avoid} itself when it is the only healthy one; 503 when none is healthy.
     */
    synchronized Backend acquirePrefillOtherThan(Backend avoid)
    {
        for (int k = 0; k < prefills.size(); k++) {
            int i = (prefillCursor + k) % prefills.size();
            Backend prefill = prefills.get(i);
            if (prefill != avoid && prefill.healthy() && prefill.control().isPresent() && !suspect(prefill)) {
                prefillCursor = (i + 1) % prefills.size();
                prefill.acquire();
                return prefill;
            }
        }
        return acquirePrefill();
    }

    /** Whether a healthy prefill other than {@code other} could take a retry. */
    synchronized boolean anotherPrefill(Backend other)
    {
        return prefills.stream().anyMatch(prefill -> prefill != other && prefill.healthy() && prefill.control().isPresent() && !suspect(prefill));
    }

    /** Whether a decode reports this prefill suspect (see {@link HealthCheck}). */
    boolean suspect(Backend prefill)
    {
        Optional<String> control = prefill.control();
        return control.isPresent() && decodes.stream().anyMatch(decode -> decode.suspectPeers().contains(control.get()));
    }

    /** The healthy decode with the fewest requests in flight, with one more; 503 when none is healthy. */
    synchronized Backend acquireDecode()
    {
        Backend best = null;
        int bestIndex = -1;
        for (int k = 0; k < decodes.size(); k++) {
            int i = (decodeCursor + k) % decodes.size();
            Backend decode = decodes.get(i);
            if (decode.healthy() && (best == null || decode.inFlight() < best.inFlight())) {
                best = decode;
                bestIndex = i;
            }
        }
        if (best == null) {
            throw noneHealthy(BackendRole.DECODE);
        }
        decodeCursor = (bestIndex + 1) % decodes.size();
        best.acquire();
        return best;
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
                message.append(i == 0 ? "" : "; ").append(server.url()).append(" (").append(server.unhealthyReason().orElse(
                        role == BackendRole.PREFILL && suspect(server) ? "healthy, but a decode reports it suspect: it did not drain within the "
                                + "decode's drain deadline; restart it" : "healthy, but without a KV-transfer control endpoint")).append(')');
            }
            message.append(". ");
        }
        message.append("The router polls every server every ").append(healthInterval.toMillis()).append(" ms (handoff.router.health-interval)"
                + " and sends requests to one again as soon as it is healthy");
        return ApiError.unavailable(code, message.toString(), retryAfter);
    }
}
