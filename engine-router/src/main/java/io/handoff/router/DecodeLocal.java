package io.handoff.router;

import com.fasterxml.jackson.databind.node.ObjectNode;
import io.handoff.http.base.ApiError;
import io.handoff.http.base.Exchange;
import io.handoff.router.prefix.RouteKey;
import io.handoff.trace.TimelineEvent;
import io.handoff.trace.Timelines;
import org.apache.logging.log4j.LogManager;
import org.apache.logging.log4j.Logger;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.http.HttpResponse;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CompletionException;

import static java.util.Objects.requireNonNull;

/**
 * The decode-local fallback ({@code handoff.router.fallback = decode-local}): a request no prefill can take (none healthy,
 * all draining, suspect or with open breakers), or one whose prompt is shorter than
 * {@code handoff.router.fallback-below-prompt-chars}, goes to a decode alone with {@code bootstrap_local: true}, and the
 * decode computes the prompt itself. Its output is what the pair would have given: the same model and kernels compute
 * the same KV, only in the decode's own memory.
 */
final class DecodeLocal
{
    private static final Logger log = LogManager.getLogger(DecodeLocal.class);

    private final BackendPool pool;
    private final Upstream upstream;
    private final RouterMetrics metrics;
    private final Timelines timelines;
    private final RouterConfig.Fallback fallback;
    // the decode each request in flight here runs on, by the client's rid: what /abort_request reaches
    private final Map<String, Backend> inFlight = new ConcurrentHashMap<>();

    DecodeLocal(BackendPool pool, Upstream upstream, RouterMetrics metrics, Timelines timelines, RouterConfig.Fallback fallback)
    {
        this.pool = requireNonNull(pool, "pool is null");
        this.upstream = requireNonNull(upstream, "upstream is null");
        this.metrics = requireNonNull(metrics, "metrics is null");
        this.timelines = requireNonNull(timelines, "timelines is null");
        this.fallback = requireNonNull(fallback, "fallback is null");
    }

    /** Whether the fallback serves requests when no prefill can (the router's health then needs only decodes). */
    boolean enabled()
    {
        return fallback.mode() == RouterConfig.FallbackMode.DECODE_LOCAL;
    }

    /** Whether {@code key}'s request goes to a decode alone: the fallback is on, a decode can take it, and no prefill can or its prompt is short. */
    boolean applies(RouteKey key)
    {
        if (!enabled() || pool.healthy(BackendRole.DECODE) == 0) {
            return false;
        }
        return !pool.prefillAvailable() || key.promptLength() < fallback.belowPromptChars();
    }

    /** Sends the request to a decode that computes its prompt, and relays its answer (a stream as it comes). */
    void forward(Exchange exchange, ObjectNode body, String rid, RouteKey key, int generations)
            throws IOException, InterruptedException
    {
        long start = System.nanoTime();
        long pages = key.pages(pool.decodePageSize(), generations);
        Backend decode = pool.acquireDecode(key, pages);
        if (inFlight.putIfAbsent(rid, decode) != null) {
            decode.release(pages);
            throw ApiError.conflict("duplicate_rid", "rid", "a request with rid '" + rid + "' is already in flight through this router; give each "
                    + "request its own rid");
        }
        metrics.decodeLocal();
        body.put("bootstrap_local", true);
        timelines.begin(rid, TimelineEvent.RECEIVED, "path=" + exchange.path())
                .record(TimelineEvent.PAIRED, "decode-local: no prefill for it; decode=" + decode.url());
        Finish finish = new Finish(rid, decode, pages, start);
        try {
            HttpResponse<InputStream> response;
            try {
                response = upstream.post(decode, exchange.path(), body, HttpResponse.BodyHandlers.ofInputStream()).join();
            }
            catch (CompletionException e) {
                decode.failed();
                if (Upstream.unreachable(e.getCause())) {
                    HealthCheck.down(decode, "a request found it unreachable: " + Upstream.describe(e.getCause()));
                }
                throw upstream.failure(decode, e.getCause());
            }
            relay(exchange, decode, response, finish);
        }
        finally {
            finish.end(-1);
        }
    }

    /**
     * The end of one request here, once: out of the in-flight map, its pages released on the decode, its time counted and,
     * for an answer relayed, its status on the timeline. Before the last byte of a whole answer goes out, so that a client
     * that sends its next request at once finds the decode's load as it is; a stream's end, after its last event.
     */
    private final class Finish
    {
        private final String rid;
        private final Backend decode;
        private final long pages;
        private final long start;
        private boolean ended;

        Finish(String rid, Backend decode, long pages, long start)
        {
            this.rid = rid;
            this.decode = decode;
            this.pages = pages;
            this.start = start;
        }

        /** @param status the relayed answer's status, or -1 when none was relayed (then nothing goes on the timeline) */
        void end(int status)
        {
            if (ended) {
                return;
            }
            ended = true;
            if (status >= 0) {
                timelines.of(rid).record(TimelineEvent.ROUTED, "status=" + status + " decode-local");
            }
            inFlight.remove(rid, decode);
            decode.release(pages);
            metrics.forwarded(System.nanoTime() - start);
        }
    }

    /** {@code POST /abort_request} for a rid this fallback has in flight: aborts it on its decode; false when it has none. */
    boolean abort(String rid)
    {
        Backend decode = inFlight.get(rid);
        if (decode == null) {
            return false;
        }
        // the decode ends the request (its answer then reaches the client as an abort); what it says to the abort adds nothing
        upstream.abortAsync(decode, rid);
        return true;
    }

    private static void relay(Exchange exchange, Backend decode, HttpResponse<InputStream> response, Finish finish)
            throws IOException
    {
        String contentType = response.headers().firstValue("Content-Type").orElse("application/json");
        try (InputStream in = response.body()) {
            if (response.statusCode() >= 500) {
                decode.failed();
            }
            else {
                decode.succeeded();
            }
            if (!contentType.toLowerCase(Locale.ROOT).startsWith("text/event-stream")) {
                byte[] answer = in.readAllBytes();
                finish.end(response.statusCode());
                exchange.send(response.statusCode(), contentType, answer);
                return;
            }
            SseRelay relay = new SseRelay(in);
            byte[] first = relay.next();
            OutputStream out = exchange.stream(response.statusCode(), contentType);
            SseRelay.Result result = relay.relay(first, out);
            if (result.ending() == SseRelay.Ending.UPSTREAM_FAILED) {
                log.warn("decode-local stream from {} broke after {} event(s): {}", decode, result.events(), result.failure().toString());
            }
            finish.end(response.statusCode());
            if (result.ending() != SseRelay.Ending.CLIENT_GONE) {
                out.close();
            }
        }
    }
}
