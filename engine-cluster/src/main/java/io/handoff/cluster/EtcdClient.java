package io.handoff.cluster;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.handoff.http.base.StrictJson;

import org.apache.logging.log4j.LogManager;
import org.apache.logging.log4j.Logger;

import java.io.IOException;
import java.io.InputStream;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

import static java.util.Objects.requireNonNull;

/**
 * The few etcd v3 calls membership needs, over etcd's JSON gateway ({@code /v3/...}) with the JDK HTTP client. Each
 * call tries the endpoints in turn (starting with the last one that answered), is bounded by the request timeout,
 * and reads at most {@link #MAX_ANSWER} bytes; an answer that is not what etcd sends is an {@link IOException} naming
 * the endpoint and what was wrong.
 */
final class EtcdClient
        implements AutoCloseable
{
    /** Longest answer (or watch message) read from etcd. */
    static final int MAX_ANSWER = 4 << 20;
    /** Longest value accepted under the prefix; a longer one is reported as oversized, not returned. */
    static final int MAX_VALUE = 1 << 20;
    /** gRPC status etcd answers with when a lease or key is not there. */
    static final int NOT_FOUND = 5;

    static final ObjectMapper MAPPER = StrictJson.mapper(32, MAX_ANSWER);
    private static final int START_ATTEMPTS = 3;
    private static final Logger log = LogManager.getLogger(EtcdClient.class);

    private final List<URI> endpoints;
    private final Duration timeout;
    private final Duration retryInterval;
    private final HttpClient http;
    private volatile int preferred;

    /** One key under the prefix: its value, or {@code null} when the value exceeded {@link #MAX_VALUE}. */
    record KeyValue(String key, byte[] value, long lease, long modRevision)
    {
        KeyValue
        {
            requireNonNull(key, "key is null");
        }
    }

    /** The keys under a prefix at one revision. */
    record Range(long revision, List<KeyValue> kvs)
    {
        Range
        {
            kvs = List.copyOf(kvs);
        }
    }

    /**
     * A lease's time to live: {@code remaining} whole seconds left (negative: the lease is gone) of {@code granted}.
     */
    record LeaseTtl(long remaining, long granted)
    {
        boolean gone()
        {
            return remaining < 0;
        }
    }

    /** etcd answered, and said no (an unknown lease, a refused request): trying another endpoint would not help. */
    static final class Refused
            extends IOException
    {
        final int code;

        Refused(String message, int code)
        {
            super(message);
            this.code = code;
        }
    }

    EtcdClient(ClusterConfig.Etcd config)
    {
        requireNonNull(config, "config is null");
        this.endpoints = List.copyOf(config.endpoints());
        if (endpoints.isEmpty()) {
            throw new IllegalArgumentException("no etcd endpoints: set handoff.cluster.etcd.endpoints");
        }
        this.timeout = config.requestTimeout();
        this.retryInterval = config.retryInterval();
        // HTTP/1.1: etcd's port multiplexes gRPC and the gateway; an h2c upgrade attempt would only add a round trip.
        this.http = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).connectTimeout(timeout).build();
    }

    /** A call to etcd, for {@link #atStart}. */
    interface Call<T>
    {
        T run()
                throws IOException, InterruptedException;
    }

    /**
     * Runs {@code call}, and twice more after {@code retry-interval} when no endpoint answered it: etcd just started,
     * or a host loaded by servers starting beside it, should not fail a start that a second try would pass.
     */
    <T> T atStart(String what, Call<T> call)
            throws IOException, InterruptedException
    {
        for (int attempt = 1; ; attempt++) {
            try {
                return call.run();
            }
            catch (Refused | BoundedBody.TooLarge e) {
                throw e;
            }
            catch (IOException e) {
                if (attempt == START_ATTEMPTS) {
                    throw e;
                }
                log.warn("{}: {} (attempt {} of {}); trying again in {}", what, e.getMessage(), attempt, START_ATTEMPTS, retryInterval);
                Thread.sleep(retryInterval);
            }
        }
    }

    /** Grants a lease of {@code ttl} (whole seconds) and returns its id. */
    long grant(Duration ttl)
            throws IOException, InterruptedException
    {
        ObjectNode body = MAPPER.createObjectNode().put("TTL", Math.max(1, ttl.toSeconds()));
        Answer answer = call("/v3/lease/grant", body);
        long id = answer.longField(answer.node, "ID", 0);
        if (id == 0) {
            throw answer.malformed("a lease grant without a lease ID");
        }
        return id;
    }

    /** Renews {@code lease}; false when etcd no longer has it (expired, revoked, or etcd lost its data). */
    boolean keepAlive(long lease)
            throws IOException, InterruptedException
    {
        Answer answer = call("/v3/lease/keepalive", MAPPER.createObjectNode().put("ID", Long.toString(lease)));
        // A streaming call: the gateway wraps the answer in "result", or an "error" when etcd refused.
        JsonNode error = answer.node.get("error");
        if (error != null) {
            throw new Refused("etcd at " + answer.endpoint + " refused a lease keepalive: " + excerpt(error.toString()), 0);
        }
        JsonNode result = answer.node.get("result");
        if (!(result instanceof ObjectNode)) {
            throw answer.malformed("a lease keepalive answer without a result object");
        }
        return answer.longField(result, "TTL", 0) > 0;
    }

    /** Revokes {@code lease}, deleting the keys attached to it; a lease already gone is not an error. */
    void revoke(long lease)
            throws IOException, InterruptedException
    {
        try {
            call("/v3/lease/revoke", MAPPER.createObjectNode().put("ID", Long.toString(lease)));
        }
        catch (Refused e) {
            if (e.code != NOT_FOUND) {
                throw e;
            }
        }
    }

    LeaseTtl timeToLive(long lease)
            throws IOException, InterruptedException
    {
        Answer answer = call("/v3/lease/timetolive", MAPPER.createObjectNode().put("ID", Long.toString(lease)));
        return new LeaseTtl(answer.longField(answer.node, "TTL", -1), answer.longField(answer.node, "grantedTTL", 0));
    }

    /** Puts {@code key} → {@code value}, attached to {@code lease} (0: none). */
    void put(String key, byte[] value, long lease)
            throws IOException, InterruptedException
    {
        call("/v3/kv/put", putRequest(key, value, lease));
    }

    /**
     * Puts {@code key} → {@code value} under {@code lease} unless another lease holds the key: it is put when the key
     * is absent or already attached to {@code lease}. Returns the key as found when it was not put.
     */
    Optional<KeyValue> putUnlessHeld(String key, byte[] value, long lease)
            throws IOException, InterruptedException
    {
        Outcome own = putIf(key, value, lease, "LEASE", "lease", lease);
        if (own.put() || own.found().isPresent()) {
            return own.found();
        }
        Outcome absent = putIf(key, value, lease, "CREATE", "create_revision", 0);
        if (absent.put() || absent.found().isPresent()) {
            return absent.found();
        }
        throw new IOException("etcd key " + key + " was deleted and created again while it was being put; trying again");
    }

    /** What a conditional put did: put the value, or found the key as it was (absent when it did not exist). */
    private record Outcome(boolean put, Optional<KeyValue> found) {}

    /** One transaction: if the key's {@code target} equals {@code expected}, put; otherwise read the key. */
    private Outcome putIf(String key, byte[] value, long lease, String target, String field, long expected)
            throws IOException, InterruptedException
    {
        ObjectNode body = MAPPER.createObjectNode();
        body.putArray("compare").addObject().put("result", "EQUAL").put("target", target).put("key", base64(key)).put(field, Long.toString(expected));
        body.putArray("success").addObject().set("request_put", putRequest(key, value, lease));
        body.putArray("failure").addObject().putObject("request_range").put("key", base64(key));
        Answer answer = call("/v3/kv/txn", body);
        if (answer.node.path("succeeded").asBoolean(false)) {
            return new Outcome(true, Optional.empty());
        }
        JsonNode kvs = answer.node.path("responses").path(0).path("response_range").path("kvs");
        if (kvs.isMissingNode() || kvs.isEmpty()) {
            return new Outcome(false, Optional.empty());
        }
        if (!kvs.isArray() || kvs.size() != 1) {
            throw answer.malformed("a read of one key that is not one key-value");
        }
        return new Outcome(false, Optional.of(keyValue(answer.endpoint, kvs.get(0), key, true)));
    }

    private static ObjectNode putRequest(String key, byte[] value, long lease)
    {
        ObjectNode put = MAPPER.createObjectNode().put("key", base64(key)).put("value", Base64.getEncoder().encodeToString(value));
        if (lease != 0) {
            put.put("lease", Long.toString(lease));
        }
        return put;
    }

    void delete(String key)
            throws IOException, InterruptedException
    {
        call("/v3/kv/deleterange", MAPPER.createObjectNode().put("key", base64(key)));
    }

    /** Whether {@code key} exists. */
    boolean exists(String key)
            throws IOException, InterruptedException
    {
        Answer answer = call("/v3/kv/range", MAPPER.createObjectNode().put("key", base64(key)).put("count_only", true));
        return answer.longField(answer.node, "count", 0) > 0;
    }

    /**
     * Every key under {@code prefix}, with the revision it was read at. When one answer would exceed
     * {@link #MAX_ANSWER}, the keys are listed alone and each value is read by itself at that revision; a value that
     * alone exceeds it is reported as oversized, so one huge key does not make the prefix unreadable.
     */
    Range range(String prefix)
            throws IOException, InterruptedException
    {
        ObjectNode body = MAPPER.createObjectNode().put("key", base64(prefix)).put("range_end", base64(prefixEnd(prefix)));
        try {
            return range(call("/v3/kv/range", body), prefix, true);
        }
        catch (BoundedBody.TooLarge e) {
            Range keys = range(call("/v3/kv/range", body.put("keys_only", true)), prefix, false);
            List<KeyValue> values = new ArrayList<>();
            for (KeyValue key : keys.kvs()) {
                ObjectNode one = MAPPER.createObjectNode().put("key", base64(key.key())).put("revision", Long.toString(keys.revision()));
                try {
                    values.addAll(range(call("/v3/kv/range", one), prefix, true).kvs());
                }
                catch (BoundedBody.TooLarge tooLarge) {
                    values.add(new KeyValue(key.key(), null, key.lease(), key.modRevision()));
                }
            }
            return new Range(keys.revision(), values);
        }
    }

    private static Range range(Answer answer, String prefix, boolean withValues)
            throws IOException
    {
        JsonNode header = answer.node.get("header");
        if (!(header instanceof ObjectNode)) {
            throw answer.malformed("a range answer without a header");
        }
        long revision = answer.longField(header, "revision", -1);
        if (revision < 0) {
            throw answer.malformed("a range answer without a revision");
        }
        JsonNode kvs = answer.node.get("kvs");
        List<KeyValue> values = new ArrayList<>();
        if (kvs != null) {
            if (!kvs.isArray()) {
                throw answer.malformed("'kvs' is not an array");
            }
            for (JsonNode kv : kvs) {
                values.add(keyValue(answer.endpoint, kv, prefix, withValues));
            }
        }
        return new Range(revision, values);
    }

    /** Opens a watch of every key under {@code prefix}, from {@code revision} on. */
    EtcdWatch watch(String prefix, long revision)
            throws IOException, InterruptedException
    {
        ObjectNode create = MAPPER.createObjectNode().put("key", base64(prefix)).put("range_end", base64(prefixEnd(prefix)))
                .put("start_revision", Long.toString(revision));
        ObjectNode body = MAPPER.createObjectNode();
        body.set("create_request", create);
        return onFirstAnswering("opened a watch of " + prefix, (endpoint, failures) -> {
            HttpResponse<InputStream> response = send(endpoint, "/v3/watch", body, HttpResponse.BodyHandlers.ofInputStream(), failures);
            if (response == null) {
                return null;
            }
            if (response.statusCode() != 200) {
                try (InputStream answer = response.body()) {
                    failures.add(endpoint + ": HTTP " + response.statusCode() + " " + excerpt(new String(answer.readNBytes(4096), StandardCharsets.UTF_8)));
                }
                return null;
            }
            return new EtcdWatch(endpoint.toString(), response.body(), prefix, revision);
        });
    }

    @Override
    public void close()
    {
        http.shutdownNow();
    }

    /** The end of the key range that holds exactly the keys starting with {@code prefix}. */
    static String prefixEnd(String prefix)
    {
        // Prefixes are validated ASCII ending in '/', so incrementing the last character stays within one byte.
        return prefix.substring(0, prefix.length() - 1) + (char) (prefix.charAt(prefix.length() - 1) + 1);
    }

    /** A key-value of a range answer or a watch event; {@code withValue}: a put (a delete carries no value). */
    static KeyValue keyValue(String endpoint, JsonNode kv, String prefix, boolean withValue)
            throws IOException
    {
        if (!(kv instanceof ObjectNode)) {
            throw new IOException("etcd at " + endpoint + " sent a key-value that is not an object: " + excerpt(String.valueOf(kv)));
        }
        String key = new String(decode(endpoint, kv.get("key"), "key", 4096), StandardCharsets.UTF_8);
        if (!key.startsWith(prefix)) {
            throw new IOException("etcd at " + endpoint + " sent key '" + excerpt(key) + "', outside the watched prefix " + prefix);
        }
        byte[] value = null;
        JsonNode encoded = kv.get("value");
        // An oversized value is reported as such (null), so one hostile key does not make the whole answer unreadable.
        if (withValue && !(encoded != null && encoded.isTextual() && encoded.textValue().length() > (MAX_VALUE / 3 + 1) * 4)) {
            value = encoded == null ? new byte[0] : decode(endpoint, encoded, "value of " + key, Integer.MAX_VALUE);
            value = value.length > MAX_VALUE ? null : value;
        }
        return new KeyValue(key, value, number(endpoint, kv.get("lease"), "lease"), number(endpoint, kv.get("mod_revision"), "mod_revision"));
    }

    /** An int64 field, which the gateway writes as a string; absent: {@code 0}. */
    static long number(String endpoint, JsonNode node, String name)
            throws IOException
    {
        if (node == null || node.isNull()) {
            return 0;
        }
        try {
            if (node.isTextual()) {
                return Long.parseLong(node.textValue());
            }
            if (node.canConvertToExactIntegral() && node.canConvertToLong()) {
                return node.longValue();
            }
        }
        catch (NumberFormatException e) {
            // reported below
        }
        throw new IOException("etcd at " + endpoint + " sent '" + name + "' = " + excerpt(node.toString()) + ", not an int64");
    }

    static String excerpt(String text)
    {
        String clean = text.codePoints().limit(200).map(c -> c < 0x20 || c == 0x7f ? '?' : c)
                .collect(StringBuilder::new, StringBuilder::appendCodePoint, StringBuilder::append).toString();
        return text.length() > 200 ? clean + "..." : clean;
    }

    private static byte[] decode(String endpoint, JsonNode node, String what, int limit)
            throws IOException
    {
        if (node == null || !node.isTextual()) {
            throw new IOException("etcd at " + endpoint + " sent a " + what + " that is not a base64 string");
        }
        byte[] bytes;
        try {
            bytes = Base64.getDecoder().decode(node.textValue());
        }
        catch (IllegalArgumentException e) {
            throw new IOException("etcd at " + endpoint + " sent a " + what + " that is not base64: " + e.getMessage());
        }
        if (bytes.length > limit) {
            throw new IOException("etcd at " + endpoint + " sent a " + what + " of " + bytes.length + " bytes, over the limit of " + limit);
        }
        return bytes;
    }

    private static String base64(String text)
    {
        return Base64.getEncoder().encodeToString(text.getBytes(StandardCharsets.UTF_8));
    }

    /** Posts {@code body} to each endpoint in turn until one answers 200 with a JSON object, or refuses. */
    private Answer call(String path, JsonNode body)
            throws IOException, InterruptedException
    {
        return onFirstAnswering("answered " + path, (endpoint, failures) -> {
            HttpResponse<byte[]> response = send(endpoint, path, body, info -> new BoundedBody(MAX_ANSWER), failures);
            if (response == null) {
                return null;
            }
            JsonNode node = parse(endpoint.toString(), path, response.body());
            if (response.statusCode() == 200) {
                return new Answer(endpoint.toString(), path, node);
            }
            int code = (int) number(endpoint.toString(), node.get("code"), "code");
            String message = node.path("message").asText(node.path("error").asText(""));
            // 503 (gRPC UNAVAILABLE, e.g. "no leader"): another member may answer.
            if (response.statusCode() == 503 || code == 14) {
                failures.add(endpoint + ": unavailable: " + excerpt(message));
                return null;
            }
            throw new Refused("etcd at " + endpoint + " refused " + path + " (HTTP " + response.statusCode() + ", code " + code + "): " + excerpt(message), code);
        });
    }

    /** One try of a call at one endpoint: its result, or {@code null} after adding to {@code failures} why the next endpoint should be tried. */
    private interface Attempt<T>
    {
        T at(URI endpoint, List<String> failures)
                throws IOException, InterruptedException;
    }

    /** The result of the first endpoint, starting from the last one that answered, whose attempt gives one. */
    private <T> T onFirstAnswering(String what, Attempt<T> attempt)
            throws IOException, InterruptedException
    {
        List<String> failures = new ArrayList<>();
        for (int i = 0; i < endpoints.size(); i++) {
            int index = (preferred + i) % endpoints.size();
            T result = attempt.at(endpoints.get(index), failures);
            if (result != null) {
                preferred = index;
                return result;
            }
        }
        throw new IOException("no etcd endpoint " + what + " within " + timeout.toMillis() + " ms: " + String.join("; ", failures));
    }

    /** The response of {@code endpoint} (its headers within the timeout), or {@code null} after adding why not to {@code failures}. */
    private <T> HttpResponse<T> send(URI endpoint, String path, JsonNode body, HttpResponse.BodyHandler<T> handler, List<String> failures)
            throws IOException, InterruptedException
    {
        HttpRequest request = HttpRequest.newBuilder(URI.create(endpoint + path))
                .timeout(timeout)
                .header("Content-Type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString(body.toString()))
                .build();
        CompletableFuture<HttpResponse<T>> future = http.sendAsync(request, handler);
        try {
            return future.get(timeout.toMillis(), TimeUnit.MILLISECONDS);
        }
        catch (ExecutionException | TimeoutException | CancellationException e) {
            future.cancel(true);
            if (e.getCause() instanceof BoundedBody.TooLarge) {
                // Another member of the same cluster would send the same answer.
                throw new BoundedBody.TooLarge("etcd at " + endpoint + " answered " + path + " with " + e.getCause().getMessage());
            }
            failures.add(endpoint + ": " + reason(e));
            return null;
        }
    }

    private static JsonNode parse(String endpoint, String path, byte[] body)
            throws IOException
    {
        JsonNode node;
        try {
            node = MAPPER.readTree(body);
        }
        catch (JsonProcessingException e) {
            throw new IOException("etcd at " + endpoint + " answered " + path + " with something that is not JSON: " + excerpt(e.getOriginalMessage()));
        }
        if (!(node instanceof ObjectNode)) {
            throw new IOException("etcd at " + endpoint + " answered " + path + " with " + (node == null ? "nothing" : node.getNodeType()) + ", not a JSON object");
        }
        return node;
    }

    private static String reason(Throwable e)
    {
        Throwable cause = e instanceof ExecutionException && e.getCause() != null ? e.getCause() : e;
        if (cause instanceof TimeoutException || cause instanceof java.net.http.HttpTimeoutException) {
            return "timed out";
        }
        if (cause instanceof java.net.ConnectException && cause.getMessage() == null) {
            return "connection refused";
        }
        String message = cause.getMessage();
        return cause.getClass().getSimpleName() + (message == null ? "" : ": " + excerpt(message));
    }

    /** One answer of one endpoint. */
    private record Answer(String endpoint, String path, JsonNode node)
    {
        long longField(JsonNode object, String name, long absent)
                throws IOException
        {
            JsonNode field = object.get(name);
            return field == null ? absent : number(endpoint, field, name);
        }

        IOException malformed(String what)
        {
            return new IOException("etcd at " + endpoint + " answered " + path + " with " + what + ": " + excerpt(node.toString()));
        }
    }
}
