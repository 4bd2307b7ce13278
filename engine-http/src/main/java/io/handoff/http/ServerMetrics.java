package io.handoff.http;

import io.handoff.core.kv.PageAccounting;
import io.handoff.core.kv.QuarantineTimes;
import io.handoff.core.output.Generation;
import io.handoff.core.output.GenerationMetrics;
import io.handoff.core.scheduler.RequestRejectedException;
import io.handoff.core.scheduler.SchedulerStats;
import io.handoff.http.base.Histogram;
import io.handoff.http.base.HttpRequestCounts;
import io.handoff.http.base.ProcessMetrics;
import io.handoff.http.base.PrometheusText;
import io.handoff.trace.FailureCause;
import io.handoff.trace.FinishReason;

import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;
import java.util.OptionalDouble;
import java.util.concurrent.atomic.LongAdder;

/**
 * What {@code GET /metrics} reports: the server's own counters and latency histograms, plus the
 * scheduler's snapshot (requests, tokens, KV pages by state, prefix cache) read at scrape time.
 */
public final class ServerMetrics
        implements GenerationMetrics
{
    private static final double NANOS = 1e9;

    private final HttpRequestCounts httpRequests = new HttpRequestCounts();
    private final Map<FinishReason, LongAdder> finished = new LinkedHashMap<>();
    private final Map<RequestRejectedException.Kind, LongAdder> rejected = new LinkedHashMap<>();
    private final LongAdder clientDisconnects = new LongAdder();
    private final Histogram timeToFirstToken = new Histogram(Histogram.LATENCY_BUCKETS);
    private final Histogram interToken = new Histogram(Histogram.INTER_TOKEN_BUCKETS);
    private final Histogram endToEnd = new Histogram(Histogram.LATENCY_BUCKETS);
    // the last 30 s of each, for /health's load (a router's SLO planner reads them)
    private final RecentLatencies recentFirstToken = new RecentLatencies(System::nanoTime);
    private final RecentLatencies recentInterToken = new RecentLatencies(System::nanoTime);

    public ServerMetrics()
    {
        for (FinishReason reason : FinishReason.values()) {
            finished.put(reason, new LongAdder());
        }
        for (RequestRejectedException.Kind kind : RequestRejectedException.Kind.values()) {
            rejected.put(kind, new LongAdder());
        }
    }

    HttpRequestCounts httpRequests()
    {
        return httpRequests;
    }

    void rejected(RequestRejectedException.Kind kind)
    {
        rejected.get(kind).increment();
    }

    @Override
    public void interToken(long nanos)
    {
        interToken.observe(nanos / NANOS);
        recentInterToken.observe(nanos / NANOS);
    }

    /** Time to first token, p90 of the last 30 s; empty without requests. */
    OptionalDouble recentFirstTokenP90()
    {
        return recentFirstToken.quantile(0.9);
    }

    /** Inter-token latency, p90 of the last 30 s; empty without tokens. */
    OptionalDouble recentInterTokenP90()
    {
        return recentInterToken.quantile(0.9);
    }

    @Override
    public void clientDisconnected()
    {
        clientDisconnects.increment();
    }

    @Override
    public void finished(Generation.Outcome outcome)
    {
        finished.get(outcome.reason()).increment();
        if (outcome.firstTokenNanos() > 0) {
            timeToFirstToken.observe(outcome.firstTokenNanos() / NANOS);
            recentFirstToken.observe(outcome.firstTokenNanos() / NANOS);
        }
        if (outcome.totalNanos() > 0) {
            endToEnd.observe(outcome.totalNanos() / NANOS);
        }
    }

    public String render(SchedulerStats stats, int inFlight)
    {
        PrometheusText out = new PrometheusText();
        httpRequests.render(out);
        ProcessMetrics.render(out);
        out.labelled("handoff_requests_finished_total", "Generation requests that ended, by finish reason.", "counter", "reason",
                lowerKeys(finished));
        out.labelled("handoff_requests_rejected_total", "Generation requests refused before they ran, by reason.", "counter", "reason",
                lowerKeys(rejected));
        out.counter("handoff_client_disconnects_total", "Streaming requests aborted because their client disconnected.", clientDisconnects.sum());
        out.gauge("handoff_server_inflight_requests", "Generation requests the HTTP server has in flight.", inFlight);
        out.gauge("handoff_running_requests", "Requests admitted by the scheduler (holding KV pages).", stats.running());
        out.gauge("handoff_waiting_requests", "Requests queued for admission.", stats.waiting());
        out.counter("handoff_prompt_tokens_total", "Prompt tokens of admitted requests.", stats.promptTokens());
        out.counter("handoff_cached_prompt_tokens_total", "Prompt tokens whose KV came from the prefix cache.", stats.cachedPromptTokens());
        out.counter("handoff_generation_tokens_total", "Output tokens produced.", stats.generatedTokens());
        out.counter("handoff_forward_steps_total", "Forward steps the scheduler ran.", stats.steps());
        out.gauge("handoff_prefix_cache_hit_rate", "Share of prompt tokens served from the prefix cache, since start.", stats.prefixHitRate());
        PageAccounting pages = stats.pages();
        Map<String, Integer> byState = new LinkedHashMap<>();
        byState.put("free", pages.free());
        byState.put("owned", pages.owned());
        byState.put("receiving", pages.receiving());
        byState.put("quarantined", pages.quarantined());
        out.labelled("handoff_kv_pages", "KV pages by state (they add up to handoff_kv_pool_pages).", "gauge", "state", byState);
        out.gauge("handoff_kv_pool_pages", "KV pages in the pool.", pages.total());
        out.gauge("handoff_prefix_cache_pages", "KV pages the prefix cache holds a reference on.", stats.cachedPages());
        out.gauge("handoff_kv_request_pages", "KV pages held by requests and not by the prefix cache; 0 when no request runs.",
                Math.max(0, pages.owned() + pages.receiving() - stats.cachedPages()));
        out.histogram("handoff_time_to_first_token_seconds", "Time from submission to the first output token.", timeToFirstToken.snapshot());
        out.histogram("handoff_inter_token_latency_seconds", "Time between consecutive output tokens of a request.", interToken.snapshot());
        out.histogram("handoff_e2e_request_latency_seconds", "Time from submission to the end of a request (its pages freed).", endToEnd.snapshot());
        renderFailureSafety(out, stats);
        return out.toString();
    }

    // failures by cause, and how long quarantined pages stayed out of use (invariant I2)
    private static void renderFailureSafety(PrometheusText out, SchedulerStats stats)
    {
        Map<String, Long> failures = new LinkedHashMap<>();
        for (FailureCause cause : FailureCause.values()) {
            failures.put(cause.label(), stats.failures(cause));
        }
        out.labelled("handoff_request_failures_total", "Requests that failed or were aborted, by cause (docs/operations.md, Failure causes).",
                "counter", "cause", failures);
        QuarantineTimes.Snapshot quarantine = stats.quarantine();
        out.histogram("handoff_kv_quarantine_seconds", "How long quarantined KV pages stayed quarantined before their release proof, one "
                + "observation per quarantine that ended.", new Histogram.Snapshot(quarantine.upperBounds(), quarantine.cumulativeCounts(),
                quarantine.sumSeconds(), quarantine.count()));
        out.gauge("handoff_kv_quarantine_longest_seconds", "The longest quarantine that ended since start.", quarantine.longestSeconds());
    }

    private static <E extends Enum<E>> Map<String, Long> lowerKeys(Map<E, LongAdder> counters)
    {
        Map<String, Long> values = new LinkedHashMap<>();
        counters.forEach((key, counter) -> values.put(key.name().toLowerCase(Locale.ROOT), counter.sum()));
        return values;
    }
}
