package io.handoff.router;

import com.fasterxml.jackson.databind.node.ObjectNode;
import io.handoff.core.scheduler.RequestTimeline;
import io.handoff.core.scheduler.TimelineEvent;
import io.handoff.core.scheduler.Timelines;
import io.handoff.http.ApiError;
import io.handoff.http.Exchange;
import io.handoff.http.JsonFields;
import org.apache.logging.log4j.LogManager;
import org.apache.logging.log4j.Logger;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.http.HttpHeaders;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Locale;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentMap;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.locks.LockSupport;

import static java.util.Objects.requireNonNull;

/**
 * The router's generation requests: each client request goes, with one rid and one
 * {@code (bootstrap_room, bootstrap_generation)}, to a prefill (never streaming: its answer only says
 * whether it ran) and to a decode (streaming as the client asked, with the prefill's KV-transfer control
 * endpoint as {@code bootstrap_host}), concurrently, and the client gets the decode's response.
 *
 * <p>One side failing is never left to the other side's timeouts: a prefill that fails before the decode
 * answered gets the decode aborted (it would wait for KV that never comes) and the client the prefill's
 * error; a decode that fails gets the prefill aborted; a client that disconnects gets both aborted.
 */
final class PairedRequests
{
    private static final Logger log = LogManager.getLogger(PairedRequests.class);

    /** Fields the router sets; a client that sends them would be pairing servers itself. */
    static final List<String> ROUTER_FIELDS = List.of("bootstrap_room", "bootstrap_generation", "bootstrap_host");
    private static final byte[] DONE = "data: [DONE]\n\n".getBytes(StandardCharsets.UTF_8);

    /** One client request and the two servers it went to. */
    record Pair(String rid, long room, int generation, Backend prefill, Backend decode)
    {
        Pair
        {
            requireNonNull(rid, "rid is null");
            requireNonNull(prefill, "prefill is null");
            requireNonNull(decode, "decode is null");
        }
    }

    private final BackendPool pool;
    private final Upstream upstream;
    private final RouterMetrics metrics;
    private final RoomIds rooms;
    private final Timelines timelines;
    private final ConcurrentMap<String, Pair> inFlight = new ConcurrentHashMap<>();
    private volatile boolean draining;

    PairedRequests(BackendPool pool, Upstream upstream, RouterMetrics metrics, RoomIds rooms)
    {
        this(pool, upstream, metrics, rooms, Timelines.NONE);
    }

    /** @param timelines where each request's way through this router is kept, for {@code /debug/requests} */
    PairedRequests(BackendPool pool, Upstream upstream, RouterMetrics metrics, RoomIds rooms, Timelines timelines)
    {
        this.timelines = requireNonNull(timelines, "timelines is null");
        this.pool = requireNonNull(pool, "pool is null");
        this.upstream = requireNonNull(upstream, "upstream is null");
        this.metrics = requireNonNull(metrics, "metrics is null");
        this.rooms = requireNonNull(rooms, "rooms is null");
    }

    int inFlight()
    {
        return inFlight.size();
    }

    /** {@code POST /generate} and {@code POST /v1/completions}: the body must be a JSON object; the servers check the rest. */
    void forward(Exchange exchange)
            throws IOException, InterruptedException
    {
        long start = System.nanoTime();
        JsonFields body = exchange.json();
        for (String field : ROUTER_FIELDS) {
            if (body.has(field)) {
                throw ApiError.invalid("router_field", field, "'" + field + "' is assigned by the router to pair a prefill with a decode server; leave it out");
            }
        }
        String rid = body.string("rid").orElseGet(PairedRequests::newRid);
        // Read here only to refuse a non-boolean before anything is sent: the prefill's copy is set to false.
        body.bool("stream");
        if (draining) {
            throw ApiError.unavailable("shutting_down", "the router is shutting down");
        }
        Pair pair = pair(rid);
        if (inFlight.putIfAbsent(rid, pair) != null) {
            pair.prefill().release();
            pair.decode().release();
            throw ApiError.conflict("duplicate_rid", "rid", "a request with rid '" + rid + "' is already in flight through this router; give each request its own rid");
        }
        RequestTimeline timeline = timelines.begin(rid, TimelineEvent.RECEIVED, "path=" + exchange.path());
        timeline.record(TimelineEvent.PAIRED, "prefill=" + pair.prefill().url() + " decode=" + pair.decode().url() + " room=" + pair.room() + " generation=" + pair.generation());
        Forwarding forwarding = new Forwarding(exchange, pair, start);
        try {
            forwarding.run(body.copy());
        }
        catch (ApiError e) {
            timeline.record(TimelineEvent.ROUTED, "status=" + e.status() + " error=" + e.getMessage());
            throw e;
        }
        catch (IOException e) {
            timeline.record(TimelineEvent.ROUTED, "client_gone error=" + e);
            throw e;
        }
        finally {
            forwarding.finish();
        }
    }

    private Pair pair(String rid)
    {
        pool.missing().ifPresent(error -> {
            throw error;
        });
        Backend prefill = pool.acquirePrefill();
        try {
            return new Pair(rid, rooms.next(), 0, prefill, pool.acquireDecode());
        }
        catch (RuntimeException e) {
            prefill.release();
            throw e;
        }
    }

    private static String newRid()
    {
        return UUID.randomUUID().toString().replace("-", "");
    }

    /** {@code POST /abort_request} for a rid in flight here: aborts it on both of its servers; false when the rid is not in flight. */
    boolean abort(String rid)
    {
        Pair pair = inFlight.get(rid);
        if (pair == null) {
            return false;
        }
        abortBoth(pair);
        return true;
    }

    private void abortBoth(Pair pair)
    {
        CompletableFuture.allOf(
                upstream.abortAsync(pair.prefill(), pair.rid()).handle((response, failure) -> null),
                upstream.abortAsync(pair.decode(), pair.rid()).handle((response, failure) -> null)).join();
    }

    /**
     * Stops taking requests, lets those in flight finish until {@code finishBy}, then aborts the rest on
     * their servers and waits for them until {@code abortBy} ({@link System#nanoTime()} deadlines). Returns
     * how many were aborted.
     */
    int drain(long finishBy, long abortBy)
    {
        draining = true;
        awaitEmpty(finishBy);
        List<Pair> left = List.copyOf(inFlight.values());
        left.forEach(this::abortBoth);
        awaitEmpty(abortBy);
        return left.size();
    }

    private void awaitEmpty(long deadline)
    {
        while (!inFlight.isEmpty() && System.nanoTime() < deadline) {
            LockSupport.parkNanos(20_000_000);
        }
    }

    /** One client request on its way through a prefill and a decode. */
    private final class Forwarding
    {
        private final Exchange exchange;
        private final Pair pair;
        private final long start;
        private final AtomicBoolean decodeReleased = new AtomicBoolean();
        private final AtomicBoolean finished = new AtomicBoolean();
        // Guarded by this: whether the client has been sent the decode's stream, or the prefill's failure came first.
        private boolean streamStarted;
        private boolean prefillFailedFirst;

        Forwarding(Exchange exchange, Pair pair, long start)
        {
            this.exchange = exchange;
            this.pair = pair;
            this.start = start;
        }

        /**
         * The request leaves this router's books: called before the last bytes go to the client, so a client
         * that has its response finds the rid gone and the request counted (the same for a test).
         */
        void finish()
        {
            if (finished.compareAndSet(false, true)) {
                inFlight.remove(pair.rid(), pair);
                metrics.forwarded(System.nanoTime() - start);
            }
        }

        void run(ObjectNode body)
                throws IOException, InterruptedException
        {
            String path = exchange.path();
            ObjectNode prefillBody = body.deepCopy();
            prefillBody.put("rid", pair.rid());
            prefillBody.put("stream", false);
            prefillBody.put("bootstrap_room", pair.room());
            prefillBody.put("bootstrap_generation", pair.generation());
            ObjectNode decodeBody = body.deepCopy();
            decodeBody.put("rid", pair.rid());
            decodeBody.put("bootstrap_room", pair.room());
            decodeBody.put("bootstrap_generation", pair.generation());
            decodeBody.put("bootstrap_host", pair.prefill().control().orElseThrow());

            CompletableFuture<HttpResponse<byte[]>> prefillCall = upstream.post(pair.prefill(), path, prefillBody, HttpResponse.BodyHandlers.ofByteArray());
            timelines.of(pair.rid()).record(TimelineEvent.SENT, "to=prefill url=" + pair.prefill().url());
            prefillCall.whenComplete((response, failure) -> {
                timelines.of(pair.rid()).record(TimelineEvent.RESPONSE, "from=prefill " + (response != null ? "status=" + response.statusCode() : "error=" + failure));
                pair.prefill().release();
                ended(pair.prefill(), response == null ? -1 : response.statusCode(), failure);
            });
            CompletableFuture<HttpResponse<InputStream>> decodeCall = upstream.post(pair.decode(), path, decodeBody, HttpResponse.BodyHandlers.ofInputStream());
            timelines.of(pair.rid()).record(TimelineEvent.SENT, "to=decode url=" + pair.decode().url());

            CompletableFuture.anyOf(prefillCall, decodeCall).handle((ignored, failure) -> null).join();
            if (!decodeCall.isDone() && !succeeded(prefillCall)) {
                // The decode would wait for KV that never comes (until its own deadline): end it now.
                upstream.abort(pair.decode(), pair.rid());
                discard(decodeCall);
                relayPrefillFailure(prefillCall);
                return;
            }
            HttpResponse<InputStream> decoded;
            try {
                decoded = decodeCall.join();
                timelines.of(pair.rid()).record(TimelineEvent.RESPONSE, "from=decode status=" + decoded.statusCode());
            }
            catch (CompletionException e) {
                timelines.of(pair.rid()).record(TimelineEvent.RESPONSE, "from=decode error=" + Upstream.describe(e.getCause()));
                releaseDecode();
                ended(pair.decode(), -1, e);
                abortPrefillIfRunning(prefillCall);
                throw upstream.failure(pair.decode(), e);
            }
            if (decoded.statusCode() / 100 != 2) {
                byte[] error = readBody(decoded, prefillCall);
                releaseDecode();
                ended(pair.decode(), decoded.statusCode(), null);
                abortPrefillIfRunning(prefillCall);
                relay(decoded.statusCode(), decoded.headers(), error);
                return;
            }
            relayDecode(decoded, prefillCall);
        }

        private void relayDecode(HttpResponse<InputStream> decoded, CompletableFuture<HttpResponse<byte[]>> prefillCall)
                throws IOException, InterruptedException
        {
            String contentType = decoded.headers().firstValue("Content-Type").orElse("application/json");
            if (!contentType.toLowerCase(Locale.ROOT).startsWith("text/event-stream")) {
                byte[] body = readBody(decoded, prefillCall);
                releaseDecode();
                relay(decoded.statusCode(), decoded.headers(), body);
                return;
            }
            // A decode answers a stream's headers at once, before it has any KV; until its first event the
            // request has not really been answered, and a prefill failure still ends it with the prefill's error.
            prefillCall.whenComplete((response, failure) -> {
                if (failure == null && response.statusCode() / 100 == 2) {
                    return;
                }
                synchronized (this) {
                    if (streamStarted) {
                        return;
                    }
                    prefillFailedFirst = true;
                }
                upstream.abortAsync(pair.decode(), pair.rid());
            });
            InputStream in = decoded.body();
            SseRelay relay = new SseRelay(in);
            byte[] first;
            try {
                first = relay.next();
            }
            catch (IOException e) {
                first = null;
                if (!prefillFailedFirst()) {
                    in.close();
                    releaseDecode();
                    ended(pair.decode(), -1, e);
                    abortPrefillIfRunning(prefillCall);
                    throw upstream.failure(pair.decode(), e);
                }
            }
            synchronized (this) {
                streamStarted = !prefillFailedFirst;
            }
            if (prefillFailedFirst()) {
                in.close();
                releaseDecode();
                relayPrefillFailure(prefillCall);
                return;
            }
            OutputStream out = exchange.stream(decoded.statusCode(), contentType);
            SseRelay.Result result = relay.relay(first, out);
            switch (result.ending()) {
                case COMPLETE -> {
                    in.close();
                    releaseDecode();
                    timelines.of(pair.rid()).record(TimelineEvent.ROUTED, "status=" + decoded.statusCode() + " stream events=" + result.events());
                    finish();
                    out.close();
                }
                case UPSTREAM_FAILED -> {
                    in.close();
                    releaseDecode();
                    ended(pair.decode(), -1, result.failure());
                    abortPrefillIfRunning(prefillCall);
                    ApiError error = upstream.failure(pair.decode(), result.failure());
                    log.warn("rid {}: the stream from {} broke after {} event(s): {}", pair.rid(), pair.decode(), result.events(), error.getMessage());
                    // As a server ends a stream that failed: an error event, then [DONE].
                    out.write(("data: " + JsonFields.MAPPER.writeValueAsString(Exchange.errorBody(error)) + "\n\n").getBytes(StandardCharsets.UTF_8));
                    timelines.of(pair.rid()).record(TimelineEvent.ROUTED, "status=" + decoded.statusCode() + " stream broke after " + result.events() + " event(s): " + error.getMessage());
                    finish();
                    out.write(DONE);
                    out.close();
                }
                case CLIENT_GONE -> {
                    metrics.clientDisconnected();
                    timelines.of(pair.rid()).record(TimelineEvent.ROUTED, "client_gone after " + result.events() + " event(s)");
                    log.debug("rid {}: the client disconnected; aborting it on {} and {}", pair.rid(), pair.prefill(), pair.decode());
                    abortBoth(pair);
                    in.close();
                    releaseDecode();
                }
            }
        }

        private synchronized boolean prefillFailedFirst()
        {
            return prefillFailedFirst;
        }

        /** Reads a decode's whole (non-streaming) body; a decode that breaks off is a 502 that names it. */
        private byte[] readBody(HttpResponse<InputStream> decoded, CompletableFuture<?> prefillCall)
                throws InterruptedException
        {
            try (InputStream in = decoded.body()) {
                return in.readAllBytes();
            }
            catch (IOException e) {
                releaseDecode();
                ended(pair.decode(), -1, e);
                abortPrefillIfRunning(prefillCall);
                throw upstream.failure(pair.decode(), e);
            }
        }

        private void relayPrefillFailure(CompletableFuture<HttpResponse<byte[]>> prefillCall)
                throws IOException
        {
            log.debug("rid {}: {} failed before {} answered; the decode was aborted", pair.rid(), pair.prefill(), pair.decode());
            HttpResponse<byte[]> response;
            try {
                response = prefillCall.join();
            }
            catch (CompletionException e) {
                throw upstream.failure(pair.prefill(), e);
            }
            relay(response.statusCode(), response.headers(), response.body());
        }

        private void relay(int status, HttpHeaders headers, byte[] body)
                throws IOException
        {
            headers.firstValue("Retry-After").ifPresent(value -> exchange.setHeader("Retry-After", value));
            timelines.of(pair.rid()).record(TimelineEvent.ROUTED, "status=" + status);
            finish();
            exchange.send(status, headers.firstValue("Content-Type").orElse("application/json"), body);
        }

        private void abortPrefillIfRunning(CompletableFuture<?> prefillCall)
                throws InterruptedException
        {
            if (!prefillCall.isDone()) {
                upstream.abort(pair.prefill(), pair.rid());
            }
        }

        /** A decode response nobody will read: closed when it comes (which also ends it on the decode), counted out then. */
        private void discard(CompletableFuture<HttpResponse<InputStream>> decodeCall)
        {
            decodeCall.whenComplete((response, failure) -> {
                if (response != null) {
                    try {
                        response.body().close();
                    }
                    catch (IOException e) {
                        log.debug("closing a discarded response of {}: {}", pair.decode(), e.toString());
                    }
                }
                releaseDecode();
            });
        }

        private void releaseDecode()
        {
            if (decodeReleased.compareAndSet(false, true)) {
                pair.decode().release();
            }
        }

        private void ended(Backend backend, int status, Throwable failure)
        {
            if (failure == null && status < 500) {
                return;
            }
            backend.failed();
            if (failure != null && Upstream.unreachable(failure)) {
                // Out until a poll finds it back, which also reads its /bootstrap again (a restart has a new control port).
                HealthCheck.down(backend, "a request found it unreachable: " + Upstream.describe(failure));
            }
        }
    }

    private static boolean succeeded(CompletableFuture<? extends HttpResponse<?>> call)
    {
        return !call.isCompletedExceptionally() && call.join().statusCode() / 100 == 2;
    }
}
