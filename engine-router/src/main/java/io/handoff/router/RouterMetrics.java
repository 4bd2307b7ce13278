package io.handoff.router;

import io.handoff.http.base.Histogram;
import io.handoff.http.base.HttpRequestCounts;
import io.handoff.http.base.ProcessMetrics;
import io.handoff.http.base.PrometheusText;
import io.handoff.trace.FailureCause;

import java.util.EnumMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.LongAdder;
import java.util.function.ToDoubleFunction;

/**
 * What the router's {@code GET /metrics} reports: its HTTP requests by route and code (the same family as
 * a server's), per backend its health, requests in flight, requests sent and failures, requests retried by the
 * cause of the failed attempt, and the latency of forwarded requests as the client sees it.
 */
final class RouterMetrics
{
    private static final double NANOS = 1e9;

    private final HttpRequestCounts httpRequests = new HttpRequestCounts();
    private final Histogram latency = new Histogram(Histogram.LATENCY_BUCKETS);
    private final LongAdder clientDisconnects = new LongAdder();
    private final LongAdder decodeLocal = new LongAdder();
    private final Map<FailureCause, LongAdder> retries = new EnumMap<>(FailureCause.class);
    // failures blamed on a prefill-to-decode link, by (prefill, decode, cause)
    private final Map<List<String>, LongAdder> linkFailures = new java.util.concurrent.ConcurrentHashMap<>();

    RouterMetrics()
    {
        for (FailureCause cause : FailureCause.values()) {
            if (cause.retryable()) {
                retries.put(cause, new LongAdder());
            }
        }
    }

    HttpRequestCounts httpRequests()
    {
        return httpRequests;
    }

    void forwarded(long nanos)
    {
        latency.observe(nanos / NANOS);
    }

    /** A request went to a decode alone, which computes its prompt (the decode-local fallback). */
    void decodeLocal()
    {
        decodeLocal.increment();
    }

    void clientDisconnected()
    {
        clientDisconnects.increment();
    }

    /** A request's first attempt failed for {@code cause} (a retryable one) and it was sent again. */
    void retried(FailureCause cause)
    {
        LongAdder count = retries.get(cause);
        if (count == null) {
            throw new IllegalArgumentException("cause " + cause.label() + " is not retryable");
        }
        count.increment();
    }

    /**
     * A request between {@code prefill} and {@code decode} failed for a cause that blames their link (a checksum mismatch,
     * a transport failure, ...): counted for the pair, not against either server's breaker.
     */
    void linkFailed(Backend prefill, Backend decode, FailureCause cause)
    {
        linkFailures.computeIfAbsent(List.of(prefill.url().toString(), decode.url().toString(), cause.label()), k -> new LongAdder()).increment();
    }

    String render(List<Backend> backends, int inFlight)
    {
        PrometheusText out = new PrometheusText();
        httpRequests.render(out);
        ProcessMetrics.render(out);
        out.gauge("handoff_router_inflight_requests", "Generation requests the router has in flight.", inFlight);
        perBackend(out, backends, "handoff_router_backend_healthy", "1 if the server passed its last health poll (and, once, GET /bootstrap), else 0.",
                "gauge", backend -> backend.healthy() ? 1 : 0);
        perBackend(out, backends, "handoff_router_backend_inflight_requests", "Requests this router has in flight on the server.",
                "gauge", Backend::inFlight);
        perBackend(out, backends, "handoff_router_backend_requests_total", "Requests this router has sent to the server.",
                "counter", Backend::requests);
        perBackend(out, backends, "handoff_router_backend_failures_total", "Requests the server failed: no response, or a 5xx status.",
                "counter", Backend::failures);
        out.counter("handoff_router_decode_local_total", "Requests sent to a decode alone, which computed the prompt itself, because no prefill "
                + "could take them or their prompt was short (handoff.router.fallback = decode-local).", decodeLocal.sum());
        out.counter("handoff_router_client_disconnects_total", "Streaming requests aborted on both servers because their client disconnected.",
                clientDisconnects.sum());
        out.family("handoff_router_retries_total", "Requests sent a second time, in a new room, because the first attempt's KV transfer failed; "
                + "by the cause of that failure.", "counter");
        retries.forEach((cause, count) -> out.sample("handoff_router_retries_total", Map.of("cause", cause.label()), count.sum()));
        out.family("handoff_router_link_failures_total", "Requests whose KV transfer between a prefill and a decode failed for a cause that "
                + "blames their link (checksum mismatch, transport failure, lost peer, deadline), by pair and cause. They do not count against "
                + "either server's circuit breaker.", "counter");
        linkFailures.forEach((key, count) -> {
            Map<String, String> labels = new LinkedHashMap<>();
            labels.put("prefill", key.get(0));
            labels.put("decode", key.get(1));
            labels.put("cause", key.get(2));
            out.sample("handoff_router_link_failures_total", labels, count.sum());
        });
        out.histogram("handoff_router_request_latency_seconds", "Time from receiving a generation request to the end of its response.",
                latency.snapshot());
        return out.toString();
    }

    private static void perBackend(PrometheusText out, List<Backend> backends, String name, String help, String type, ToDoubleFunction<Backend> value)
    {
        out.family(name, help, type);
        for (Backend backend : backends) {
            Map<String, String> labels = new LinkedHashMap<>();
            labels.put("role", backend.role().label());
            labels.put("backend", backend.url().toString());
            out.sample(name, labels, value.applyAsDouble(backend));
        }
    }
}
