package io.handoff.router;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.fasterxml.jackson.databind.node.TextNode;
import io.handoff.http.base.ApiError;
import io.handoff.http.base.Exchange;
import io.handoff.http.base.JsonFields;
import io.handoff.http.base.OutputCount;
import io.handoff.router.prefix.RouteKey;
import io.handoff.router.prefix.RouteKeys;
import io.handoff.trace.FailureCause;
import io.handoff.trace.RequestTimeline;
import io.handoff.trace.TimelineEvent;
import io.handoff.trace.Timelines;
import org.apache.logging.log4j.LogManager;
import org.apache.logging.log4j.Logger;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.http.HttpHeaders;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Optional;
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
 * <p>A request of several generations (a batch, {@code n > 1}; counted by {@link OutputCount}, as the servers count
 * them) gets a block of as many consecutive rooms, {@code bootstrap_room} the first: the servers run generation
 * {@code i} in room {@code bootstrap_room + i}. It is still one request here: one failure fails it, one abort (or
 * the client leaving) aborts all of its generations on both servers (each rid names all of them there).
 *
 * <p>One side failing is never left to the other side's timeouts: a prefill that fails before the decode
 * answered gets the decode aborted (it would wait for KV that never comes) and the client the prefill's
 * error; a decode that fails gets the prefill aborted; a client that disconnects gets both aborted.
 *
 * <p>A bad transfer is retried, not returned: when the failure a server answers with names a
 * {@linkplain FailureCause#retryable() retryable} cause (checksum mismatch, transport failure, peer lost, drain or
 * room deadline), the request runs again after a backoff, in a new room, on another prefill when there is one, under
 * the rid {@code <rid>-retry<n>} on the servers (an earlier attempt's rid may still be in their books), as many times
 * as its {@link RetryPlan} allows. A retry is only possible before the first byte went to the client; a decode never
 * streams a token before its room committed (the first token comes with the verified aux record), so a transfer
 * failure always comes before it. A last attempt that fails for such a cause too is a 502 naming it.
 *
 * <p>Which prefill and decode an attempt gets is the {@link BackendPool}'s policies' choice, for the request's
 * {@link RouteKey}; the decode is charged the request's estimated KV pages while it runs there.
 */
final class PairedRequests
{
    private static final Logger log = LogManager.getLogger(PairedRequests.class);

    /** The suffix of a retry's rid on the servers. */
    static final String RETRY_SUFFIX = "-retry";

    /** Fields the router sets; a client that sends them would be pairing servers itself. */
    static final List<String> ROUTER_FIELDS = List.of("bootstrap_room", "bootstrap_generation", "bootstrap_host", "bootstrap_local");
    private static final byte[] DONE = "data: [DONE]\n\n".getBytes(StandardCharsets.UTF_8);

    /**
     * One attempt of a client request and the two servers it went to: {@code rids} is the servers' rid (or, when the
     * client sent a list, one per prompt), {@code room} the first of its {@code rooms} consecutive rooms.
     */
    record Pair(List<String> rids, boolean ridList, long room, int rooms, int generation, Backend prefill, Backend decode, long decodePages)
    {
        Pair
        {
            rids = List.copyOf(rids);
            requireNonNull(prefill, "prefill is null");
            requireNonNull(decode, "decode is null");
        }

        /** The rid as the servers are sent it. */
        JsonNode ridNode()
        {
            if (!ridList) {
                return TextNode.valueOf(rids.getFirst());
            }
            ArrayNode list = JsonFields.MAPPER.createArrayNode();
            rids.forEach(list::add);
            return list;
        }

        String rid()
        {
            return String.join(",", rids);
        }
    }

    private final BackendPool pool;
    private final Upstream upstream;
    private final RouterMetrics metrics;
    private final RoomIds rooms;
    private final Timelines timelines;
    private final RetryPlan retries;
    private final DecodeLocal decodeLocal;
    private final RouteKeys keys;
    private final ConcurrentMap<String, Routed> inFlight = new ConcurrentHashMap<>();
    private volatile boolean draining;

    /**
     * @param timelines where each request's way through this router is kept, for {@code /debug/requests}
     * @param retries how many attempts a failed transfer gets, and the pauses between them
     * @param keys reads each request's key for the routing policies
     */
    PairedRequests(BackendPool pool, Upstream upstream, RouterMetrics metrics, RoomIds rooms, Timelines timelines, RetryPlan retries, RouteKeys keys)
    {
        this(pool, upstream, metrics, rooms, timelines, retries, keys, RouterConfig.Fallback.NONE);
    }

    /** @param fallback where a request goes that no prefill can take ({@link DecodeLocal}) */
    PairedRequests(BackendPool pool, Upstream upstream, RouterMetrics metrics, RoomIds rooms, Timelines timelines, RetryPlan retries, RouteKeys keys,
            RouterConfig.Fallback fallback)
    {
        this.decodeLocal = new DecodeLocal(pool, upstream, metrics, timelines, fallback);
        this.retries = requireNonNull(retries, "retries is null");
        this.keys = requireNonNull(keys, "keys is null");
        this.timelines = requireNonNull(timelines, "timelines is null");
        this.pool = requireNonNull(pool, "pool is null");
        this.upstream = requireNonNull(upstream, "upstream is null");
        this.metrics = requireNonNull(metrics, "metrics is null");
        this.rooms = requireNonNull(rooms, "rooms is null");
    }

    /** Whether requests no prefill can take go to a decode alone. */
    boolean fallsBackToDecodes()
    {
        return decodeLocal.enabled();
    }

    int inFlight()
    {
        return inFlight.size();
    }

    /**
     * {@code POST /generate}, {@code /v1/completions}, {@code /v1/chat/completions} and {@code /v1/responses}: the body must be a JSON object
     * with a rid (or rid list) and a count of generations the router can read; the servers check the rest.
     */
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
        ObjectNode given = body.copy();
        List<String> rids = rids(given.get("rid"));
        boolean ridList = given.path("rid").isArray();
        // As the servers count them: the block of rooms this request's generations use.
        int rooms = OutputCount.of(exchange.path(), given).total();
        // Read here only to refuse a non-boolean before anything is sent: the prefill's copy is set to false.
        body.bool("stream");
        if (draining) {
            throw ApiError.unavailable("shutting_down", "the router is shutting down");
        }
        RouteKey key = keys.of(exchange.path(), given);
        if (decodeLocal.applies(key)) {
            decodeLocal.forward(exchange, given, rids.getFirst(), key, rooms);
            return;
        }
        pool.missing().ifPresent(error -> {
            throw error;
        });
        Pair pair = pair(rids, ridList, rooms, pool.acquirePrefill(key), key);
        Routed routed = new Routed(rids, pair, start);
        if (!routed.register()) {
            pair.prefill().release();
            pair.decode().release(pair.decodePages());
            throw ApiError.conflict("duplicate_rid", "rid", "a request with rid '" + pair.rid() + "' is already in flight through this router; give each request its own rid");
        }
        String rid = rids.getFirst();
        RequestTimeline timeline = timelines.begin(rid, TimelineEvent.RECEIVED, "path=" + exchange.path());
        timeline.record(TimelineEvent.PAIRED, "prefill=" + pair.prefill().url() + " decode=" + pair.decode().url() + " room=" + pair.room() + " generation=" + pair.generation());
        try {
            attempts(exchange, routed, body, pair, key);
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
            routed.finish();
        }
    }

    /** Runs {@code pair}'s attempt, and after each that fails for a retryable cause the next one, while the plan allows. */
    private void attempts(Exchange exchange, Routed routed, JsonFields body, Pair pair, RouteKey key)
            throws IOException, InterruptedException
    {
        Retry first = null;
        for (int attempt = 1; ; attempt++) {
            try {
                new Forwarding(exchange, routed, pair, first, attempt, retries.last(attempt)).run(body.copy());
                return;
            }
            catch (Retry failed) {
                first = first == null ? failed : first;
                pair = next(routed, failed, attempt + 1, key);
            }
        }
    }

    /** Attempt {@code attempt}'s pair, after the one before failed as {@code failed} (a retryable cause), and its backoff. */
    private Pair next(Routed routed, Retry failed, int attempt, RouteKey key)
            throws InterruptedException
    {
        metrics.retried(failed.cause);
        log.info("rid {}: {}; retrying it in a new room (attempt {} of {})", routed.rid, failed.getMessage(), attempt, retries.maxAttempts());
        retries.pauseBefore(attempt);
        Pair next;
        try {
            next = pair(routed.rids.stream().map(rid -> RetryPlan.rid(rid, attempt)).toList(), failed.pair.ridList(), failed.pair.rooms(),
                    pool.acquirePrefillOtherThan(failed.pair.prefill(), key), key);
        }
        catch (ApiError e) {
            throw ApiError.transferFailed(failed.cause.label(), failed.getMessage() + "; no server was free to retry it: " + e.getMessage());
        }
        timelines.of(routed.rid).record(TimelineEvent.PAIRED, "retry after " + failed.cause.label() + ": rid=" + next.rid() + " prefill=" + next.prefill().url()
                + " decode=" + next.decode().url() + " room=" + next.room() + " generation=" + next.generation());
        if (!routed.moveTo(next)) {
            next.prefill().release();
            next.decode().release(next.decodePages());
            throw ApiError.transferFailed(failed.cause.label(), failed.getMessage() + "; aborted before it was retried");
        }
        return next;
    }

    /** Pairs {@code prefill} with a decode, in a new block of {@code count} rooms; the decode is charged the request's estimated pages. */
    private Pair pair(List<String> serverRids, boolean ridList, int count, Backend prefill, RouteKey key)
    {
        try {
            long pages = key.pages(pool.decodePageSize(), count);
            return new Pair(serverRids, ridList, rooms.next(count), count, 0, prefill, pool.acquireDecode(key, pages), pages);
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

    /** The client's rid (a string, or a list of them for a batch; the servers check the list against the prompts), or a new one. */
    private static List<String> rids(JsonNode rid)
    {
        if (rid == null || rid.isNull()) {
            return List.of(newRid());
        }
        if (rid.isTextual()) {
            return List.of(rid.textValue());
        }
        if (!rid.isArray() || rid.isEmpty() || rid.size() > OutputCount.MAX_OUTPUTS) {
            throw ApiError.invalid("invalid_type", "rid", "rid must be a string, or a list of 1 to " + OutputCount.MAX_OUTPUTS
                    + " strings (one per prompt of a batch)");
        }
        List<String> rids = new ArrayList<>();
        for (int i = 0; i < rid.size(); i++) {
            if (!rid.get(i).isTextual() || rid.get(i).textValue().isEmpty()) {
                throw ApiError.invalid("invalid_type", "rid", "rid[" + i + "] must be a non-empty string");
            }
            rids.add(rid.get(i).textValue());
        }
        return rids;
    }

    /** {@code POST /abort_request} for a rid in flight here: aborts it on both of its servers; false when the rid is not in flight. */
    boolean abort(String rid)
    {
        Routed routed = inFlight.get(rid);
        if (routed == null) {
            return decodeLocal.abort(rid);
        }
        Pair pair = routed.abort();
        Refused refused = abortBoth(pair);
        if (refused.any() && routed.missedAbort(refused)) {
            // the decode answered the request meanwhile: it has the rid now
            abortBoth(pair);
        }
        return true;
    }

    /** Which servers answered an abort with "no such rid": the request was still on its way there. */
    private record Refused(boolean prefill, boolean decode)
    {
        boolean any()
        {
            return prefill || decode;
        }
    }

    /** Aborts the pair's rid on both servers. */
    private Refused abortBoth(Pair pair)
    {
        CompletableFuture<Integer> prefill = abortOn(pair.prefill(), pair);
        CompletableFuture<Integer> decode = abortOn(pair.decode(), pair);
        CompletableFuture.allOf(prefill, decode).join();
        return new Refused(prefill.join() == 404, decode.join() == 404);
    }

    /** Aborts every rid of the pair on {@code backend} (each names all of its generations there); 404 when one was unknown. */
    private CompletableFuture<Integer> abortOn(Backend backend, Pair pair)
    {
        List<CompletableFuture<Integer>> calls = pair.rids().stream().map(rid -> status(upstream.abortAsync(backend, rid))).toList();
        return CompletableFuture.allOf(calls.toArray(CompletableFuture[]::new))
                .thenApply(ignored -> calls.stream().map(CompletableFuture::join).filter(code -> code == 404).findFirst()
                        .orElse(calls.getFirst().join()));
    }

    private static CompletableFuture<Integer> status(CompletableFuture<? extends HttpResponse<?>> call)
    {
        return call.handle((response, failure) -> response == null ? -1 : response.statusCode());
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
        List<Routed> left = List.copyOf(inFlight.values());
        left.forEach(routed -> abortBoth(routed.abort()));
        awaitEmpty(abortBy);
        return left.size();
    }

    private void awaitEmpty(long deadline)
    {
        while (!inFlight.isEmpty() && System.nanoTime() < deadline) {
            LockSupport.parkNanos(20_000_000);
        }
    }

    /** One client request in this router's books, across its attempts. */
    private final class Routed
    {
        final List<String> rids;
        final String rid;
        final long start;
        private final AtomicBoolean finished = new AtomicBoolean();
        // Guarded by this: the attempt an abort must reach, and whether one came (then no retry starts).
        private Pair pair;
        private boolean aborted;
        // Guarded by this, for the current attempt: a server refused an abort as "no such rid" / the decode has answered since.
        private boolean decodeMissedAbort;
        private boolean prefillMissedAbort;
        private boolean decodeAnswered;

        Routed(List<String> rids, Pair pair, long start)
        {
            this.rids = List.copyOf(rids);
            this.rid = rids.getFirst();
            this.pair = pair;
            this.start = start;
        }

        /** Enters this router's books under each of its rids; false (entering none) when one is in flight already. */
        boolean register()
        {
            for (int i = 0; i < rids.size(); i++) {
                if (inFlight.putIfAbsent(rids.get(i), this) != null) {
                    rids.subList(0, i).forEach(taken -> inFlight.remove(taken, this));
                    return false;
                }
            }
            return true;
        }

        synchronized Pair abort()
        {
            aborted = true;
            return pair;
        }

        /**
         * A server answered an abort of this request with "no such rid": it was still on its way there. True when the
         * decode has answered the request since, so the caller must say the abort again.
         */
        synchronized boolean missedAbort(Refused refused)
        {
            decodeMissedAbort |= refused.decode();
            prefillMissedAbort |= refused.prefill();
            return decodeAnswered;
        }

        /** The decode answered this attempt; true when a server refused an abort before, so the caller must say it again. */
        synchronized boolean decodeAnswered()
        {
            decodeAnswered = true;
            return decodeMissedAbort || prefillMissedAbort;
        }

        synchronized boolean prefillMissedAbort()
        {
            return prefillMissedAbort;
        }

        /** Makes {@code next} the attempt aborts reach; false when the request was aborted already. */
        synchronized boolean moveTo(Pair next)
        {
            if (aborted) {
                return false;
            }
            pair = next;
            decodeMissedAbort = false;
            prefillMissedAbort = false;
            decodeAnswered = false;
            return true;
        }

        /**
         * The request leaves this router's books: called before the last bytes go to the client, so a client
         * that has its response finds the rid gone and the request counted (the same for a test).
         */
        void finish()
        {
            if (finished.compareAndSet(false, true)) {
                rids.forEach(each -> inFlight.remove(each, this));
                metrics.forwarded(System.nanoTime() - start);
            }
        }
    }

    /** A failed attempt whose cause says running it again may succeed. */
    private static final class Retry
            extends Exception
    {
        final FailureCause cause;
        final Pair pair;

        Retry(FailureCause cause, Pair pair, String message)
        {
            super(message, null, false, false);
            this.cause = cause;
            this.pair = pair;
        }
    }

    /** One attempt of a client request on its way through a prefill and a decode. */
    private final class Forwarding
    {
        private final Exchange exchange;
        private final Routed routed;
        private final Pair pair;
        // the failed first attempt when this is a retry, else null; this attempt's number; whether no retry may follow it
        private final Retry first;
        private final int attempt;
        private final boolean last;
        private final AtomicBoolean decodeReleased = new AtomicBoolean();
        private volatile CompletableFuture<?> prefillCall;
        // Guarded by this: whether the client has been sent the decode's stream, or the prefill's failure came first.
        private boolean streamStarted;
        private boolean prefillFailedFirst;

        Forwarding(Exchange exchange, Routed routed, Pair pair, Retry first, int attempt, boolean last)
        {
            this.exchange = exchange;
            this.routed = routed;
            this.pair = pair;
            this.first = first;
            this.attempt = attempt;
            this.last = last;
        }

        void finish()
        {
            routed.finish();
        }

        void run(ObjectNode body)
                throws IOException, InterruptedException, Retry
        {
            try {
                attempt(body);
            }
            finally {
                CompletableFuture<?> prefillCall = this.prefillCall;
                if (prefillCall != null && !prefillCall.isDone() && routed.prefillMissedAbort()) {
                    // The client's abort reached the prefill before this request did; by now (the decode has ended it) the
                    // prefill has it, and would otherwise run it alone until its bootstrap deadline.
                    abortOn(pair.prefill(), pair);
                }
            }
        }

        private void attempt(ObjectNode body)
                throws IOException, InterruptedException, Retry
        {
            String path = exchange.path();
            ObjectNode prefillBody = body.deepCopy();
            prefillBody.set("rid", pair.ridNode());
            prefillBody.put("stream", false);
            prefillBody.remove("stream_options"); // a stream's options: chat refuses them on a request that does not stream
            prefillBody.put("bootstrap_room", pair.room());
            prefillBody.put("bootstrap_generation", pair.generation());
            ObjectNode decodeBody = body.deepCopy();
            decodeBody.set("rid", pair.ridNode());
            decodeBody.put("bootstrap_room", pair.room());
            decodeBody.put("bootstrap_generation", pair.generation());
            decodeBody.put("bootstrap_host", pair.prefill().control().orElseThrow());

            CompletableFuture<HttpResponse<byte[]>> prefillCall = upstream.post(pair.prefill(), path, prefillBody, HttpResponse.BodyHandlers.ofByteArray());
            this.prefillCall = prefillCall;
            timelines.of(routed.rid).record(TimelineEvent.SENT, "to=prefill url=" + pair.prefill().url());
            prefillCall.whenComplete((response, failure) -> {
                timelines.of(routed.rid).record(TimelineEvent.RESPONSE, "from=prefill " + (response != null ? "status=" + response.statusCode() : "error=" + failure));
                pair.prefill().release();
                ended(pair.prefill(), response == null ? -1 : response.statusCode(), failure,
                        response == null ? Optional.empty() : FailureBody.cause(response.body()));
            });
            CompletableFuture<HttpResponse<InputStream>> decodeCall = upstream.post(pair.decode(), path, decodeBody, HttpResponse.BodyHandlers.ofInputStream());
            timelines.of(routed.rid).record(TimelineEvent.SENT, "to=decode url=" + pair.decode().url());

            CompletableFuture.anyOf(prefillCall, decodeCall).handle((ignored, failure) -> null).join();
            if (!decodeCall.isDone() && !succeeded(prefillCall)) {
                // The decode would wait for KV that never comes (until its own deadline): end it now.
                abortOn(pair.decode(), pair).join();
                discard(decodeCall);
                relayPrefillFailure(prefillCall);
                return;
            }
            HttpResponse<InputStream> decoded;
            try {
                decoded = decodeCall.join();
                timelines.of(routed.rid).record(TimelineEvent.RESPONSE, "from=decode status=" + decoded.statusCode());
            }
            catch (CompletionException e) {
                timelines.of(routed.rid).record(TimelineEvent.RESPONSE, "from=decode error=" + Upstream.describe(e.getCause()));
                releaseDecode();
                ended(pair.decode(), -1, e);
                abortPrefillIfRunning(prefillCall);
                throw upstream.failure(pair.decode(), e);
            }
            if (routed.decodeAnswered()) {
                // The client's abort reached the decode before this request did, and was refused as unknown; the decode
                // has the rid now (it answered), so both servers hear it again (the prefill may have missed it too).
                abortBoth(pair);
            }
            if (decoded.statusCode() / 100 != 2) {
                byte[] error = readBody(decoded, prefillCall);
                releaseDecode();
                ended(pair.decode(), decoded.statusCode(), null, FailureBody.cause(error));
                abortPrefillIfRunning(prefillCall);
                retryOrThrow(FailureBody.cause(error), pair.decode(), error);
                relay(decoded.statusCode(), decoded.headers(), error);
                return;
            }
            relayDecode(decoded, prefillCall);
        }

        /**
         * When {@code cause} is retryable: before the last attempt, asks for a retry; on the last, ends the request with a
         * 502 naming the cause (and the first attempt's). Otherwise returns, and the caller relays the failure as it came.
         */
        private void retryOrThrow(Optional<FailureCause> cause, Backend failedOn, byte[] error)
                throws Retry
        {
            if (cause.isEmpty() || !cause.get().retryable()) {
                return;
            }
            String what = failedOn + " failed the request (" + cause.get().label() + "): "
                    + FailureBody.message(error).orElse(new String(error, StandardCharsets.UTF_8).strip());
            if (!last) {
                throw new Retry(cause.get(), pair, what);
            }
            if (first == null) {
                throw ApiError.transferFailed(cause.get().label(), "rid " + routed.rid + ": " + what + " (handoff.router.retry.max-attempts is 1: not retried)");
            }
            throw ApiError.transferFailed(cause.get().label(), "rid " + routed.rid + ": the KV transfer failed " + (attempt == 2 ? "twice" : attempt + " times")
                    + ". First " + first.getMessage() + "; then, retried in a new room" + (attempt == 2 ? ", " : " " + (attempt - 1) + " times, last ") + what);
        }

        private void relayDecode(HttpResponse<InputStream> decoded, CompletableFuture<HttpResponse<byte[]>> prefillCall)
                throws IOException, InterruptedException, Retry
        {
            String contentType = decoded.headers().firstValue("Content-Type").orElse("application/json");
            if (!contentType.toLowerCase(Locale.ROOT).startsWith("text/event-stream")) {
                byte[] body = readBody(decoded, prefillCall);
                releaseDecode();
                ended(pair.decode(), decoded.statusCode(), null);
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
                abortOn(pair.decode(), pair);
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
            // Nothing has gone to the client yet: a stream that opens with a transfer failure can still be retried.
            Optional<FailureCause> failedFirst = FailureBody.eventCause(first);
            if (failedFirst.isPresent() && failedFirst.get().retryable()) {
                in.close();
                releaseDecode();
                ended(pair.decode(), 500, null, failedFirst);
                abortPrefillIfRunning(prefillCall);
                String event = new String(first, StandardCharsets.UTF_8).strip();
                retryOrThrow(failedFirst, pair.decode(), event.substring(Math.min(event.length(), "data:".length())).strip().getBytes(StandardCharsets.UTF_8));
            }
            OutputStream out = exchange.stream(decoded.statusCode(), contentType);
            SseRelay.Result result = relay.relay(first, out);
            switch (result.ending()) {
                case COMPLETE -> {
                    in.close();
                    releaseDecode();
                    ended(pair.decode(), decoded.statusCode(), null);
                    timelines.of(routed.rid).record(TimelineEvent.ROUTED, "status=" + decoded.statusCode() + " stream events=" + result.events());
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
                    timelines.of(routed.rid).record(TimelineEvent.ROUTED, "status=" + decoded.statusCode() + " stream broke after " + result.events() + " event(s): " + error.getMessage());
                    finish();
                    out.write(DONE);
                    out.close();
                }
                case CLIENT_GONE -> {
                    metrics.clientDisconnected();
                    timelines.of(routed.rid).record(TimelineEvent.ROUTED, "client_gone after " + result.events() + " event(s)");
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
                throws IOException, Retry
        {
            log.debug("rid {}: {} failed before {} answered; the decode was aborted", pair.rid(), pair.prefill(), pair.decode());
            HttpResponse<byte[]> response;
            try {
                response = prefillCall.join();
            }
            catch (CompletionException e) {
                if (!last && pool.anotherPrefill(pair.prefill())) {
                    // the prefill went away (or never took the request): another one can run it
                    throw new Retry(FailureCause.PEER_LOST, pair, pair.prefill() + " did not answer: " + Upstream.describe(e));
                }
                throw upstream.failure(pair.prefill(), e);
            }
            retryOrThrow(FailureBody.cause(response.body()), pair.prefill(), response.body());
            relay(response.statusCode(), response.headers(), response.body());
        }

        private void relay(int status, HttpHeaders headers, byte[] body)
                throws IOException
        {
            headers.firstValue("Retry-After").ifPresent(value -> exchange.setHeader("Retry-After", value));
            timelines.of(routed.rid).record(TimelineEvent.ROUTED, "status=" + status);
            finish();
            exchange.send(status, headers.firstValue("Content-Type").orElse("application/json"), body);
        }

        private void abortPrefillIfRunning(CompletableFuture<?> prefillCall)
                throws InterruptedException
        {
            if (!prefillCall.isDone()) {
                abortOn(pair.prefill(), pair).join();
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
                pair.decode().release(pair.decodePages());
            }
        }

        private void ended(Backend backend, int status, Throwable failure)
        {
            ended(backend, status, failure, Optional.empty());
        }

        /**
         * Tells the breakers how {@code backend} answered. A failure is counted against what its cause blames: the server
         * that answered, the prefill (a decode's report of a prefill that never drained), the link between the pair (the
         * KV did not arrive intact or in time: both servers are well, and a lone decode must not be cut off for it), or
         * nobody (the client ended it). A failure without a cause (no answer, a 5xx that names none) is the server's.
         */
        private void ended(Backend backend, int status, Throwable failure, Optional<FailureCause> cause)
        {
            if (failure == null && status < 500) {
                backend.succeeded();
                return;
            }
            FailureCause.Blame blame = failure == null ? cause.map(FailureCause::blame).orElse(FailureCause.Blame.SERVER) : FailureCause.Blame.SERVER;
            switch (blame) {
                case LINK -> {
                    backend.succeeded();
                    metrics.linkFailed(pair.prefill(), pair.decode(), cause.orElseThrow());
                    return;
                }
                case PREFILL -> {
                    backend.succeeded();
                    if (backend != pair.prefill()) {
                        pair.prefill().failed();
                    }
                    return;
                }
                case NOBODY -> {
                    backend.succeeded();
                    if (cause.orElse(null) == FailureCause.DRAINING) {
                        // shutting down or switching role: out until a poll finds it serving again
                        HealthCheck.down(backend, "it refused a request: it is draining (shutting down, or switching its role)");
                    }
                    return;
                }
                case SERVER -> { }
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
