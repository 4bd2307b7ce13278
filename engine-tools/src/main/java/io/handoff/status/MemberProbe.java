package io.handoff.status;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.handoff.cluster.BoundedBody;
import io.handoff.cluster.Member;
import io.handoff.demo.NodeMetrics;
import io.handoff.demo.PrometheusSamples;
import io.handoff.http.base.StrictJson;
import io.handoff.http.base.security.RouterCredentials;
import io.handoff.router.NoAnswer;
import io.handoff.status.MemberStatus.Health;
import io.handoff.status.MemberStatus.Load;

import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalDouble;
import java.util.OptionalInt;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

import static java.util.Objects.requireNonNull;

/**
 * Asks one member {@code GET /health}, {@code /bootstrap} and {@code /metrics} at once, all three within one timeout,
 * with the deployment's credentials. Every answer is hostile until read: bounded in size, parsed defensively, and a
 * body that is not what a Handoff server sends makes the member unreachable rather than its fields guessed.
 */
final class MemberProbe
{
    /** The largest answer read from a member; a server's {@code /metrics} is a few tens of KiB. */
    static final int MAX_ANSWER_BYTES = 1 << 20;
    /** The share of prompt tokens served from the prefix cache (see the server's ServerMetrics). */
    static final String HIT_RATE = "handoff_prefix_cache_hit_rate";
    /** A member's answers are network bytes: duplicate keys and trailing tokens refused, nesting bounded. */
    private static final ObjectMapper JSON = StrictJson.mapper(64);
    private static final byte[] NO_BODY = new byte[0];

    private final HttpClient client;
    private final RouterCredentials credentials;
    private final Duration timeout;

    MemberProbe(HttpClient client, RouterCredentials credentials, Duration timeout)
    {
        this.client = requireNonNull(client, "client is null");
        this.credentials = requireNonNull(credentials, "credentials is null");
        this.timeout = requireNonNull(timeout, "timeout is null");
    }

    /** One HTTP answer: its status and body, or why there was none. */
    private record Answer(String path, int status, byte[] body, Optional<String> failure)
    {
        boolean ok()
        {
            return failure.isEmpty() && status == 200;
        }

        /** Why it is not a 200 with a body: no answer, or another status (with the server's message). */
        String trouble()
        {
            return failure.map(why -> "GET " + path + ": " + why)
                    .orElseGet(() -> "GET " + path + " answered " + status + message(body).map(text -> ": " + text).orElse(""));
        }
    }

    MemberStatus probe(Member member)
            throws InterruptedException
    {
        long deadline = System.nanoTime() + timeout.toNanos();
        CompletableFuture<HttpResponse<byte[]>> health = get(member, "/health");
        CompletableFuture<HttpResponse<byte[]>> bootstrap = get(member, "/bootstrap");
        CompletableFuture<HttpResponse<byte[]>> metrics = get(member, "/metrics");
        return status(member, await("/health", health, deadline), await("/bootstrap", bootstrap, deadline), await("/metrics", metrics, deadline));
    }

    private CompletableFuture<HttpResponse<byte[]>> get(Member member, String path)
    {
        URI uri = URI.create(member.http() + path);
        HttpRequest.Builder request = HttpRequest.newBuilder(uri).timeout(timeout).GET();
        return client.sendAsync(credentials.apply(request, "GET", uri, NO_BODY).build(), BoundedBody.handler(MAX_ANSWER_BYTES));
    }

    private Answer await(String path, CompletableFuture<HttpResponse<byte[]>> call, long deadline)
            throws InterruptedException
    {
        try {
            HttpResponse<byte[]> response = call.get(Math.max(0, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
            return new Answer(path, response.statusCode(), response.body(), Optional.empty());
        }
        catch (TimeoutException e) {
            // the header may have come in time and the body not: the request timeout alone does not bound that
            call.cancel(true);
            return new Answer(path, -1, NO_BODY, Optional.of("no answer within " + timeout.toMillis() + " ms (--timeout)"));
        }
        catch (ExecutionException e) {
            return new Answer(path, -1, NO_BODY, Optional.of(NoAnswer.describe(e.getCause())));
        }
    }

    /** What the answers say of the member as a whole: its health, and why when it is not ok. */
    private record Verdict(Health health, Optional<String> reason)
    {
        static final Verdict OK = new Verdict(Health.OK, Optional.empty());

        static Verdict unreachable(String why)
        {
            return new Verdict(Health.UNREACHABLE, Optional.of(why));
        }
    }

    private static MemberStatus status(Member member, Answer health, Answer bootstrap, Answer metrics)
    {
        Optional<JsonNode> healthBody = health.ok() ? object(health.body()) : Optional.empty();
        Optional<JsonNode> facts = bootstrap.ok() ? object(bootstrap.body()) : Optional.empty();
        Verdict verdict = verdict(health, healthBody, bootstrap, facts);
        List<String> problems = new ArrayList<>();
        if (verdict.health() == Health.OK && !bootstrap.ok()) {
            problems.add(bootstrap.trouble());
        }
        Optional<String> role = facts.flatMap(json -> Untrusted.field(json, "role"));
        Optional<String> incarnation = facts.flatMap(json -> Untrusted.field(json, "incarnation"));
        role.filter(answered -> !answered.equals(member.role().label()))
                .ifPresent(answered -> problems.add("listed as " + member.role().label() + " but its /bootstrap says role " + answered));
        incarnation.filter(answered -> !member.incarnation().isEmpty() && !answered.equals(member.incarnation()))
                .ifPresent(answered -> problems.add("membership lists incarnation " + member.incarnation() + " but " + answered
                        + " runs (it restarted; the old registration has not gone yet)"));
        Load load = Load.UNKNOWN;
        if (metrics.ok()) {
            load = load(metrics.body(), problems);
        }
        else if (verdict.health() == Health.OK) {
            problems.add(metrics.trouble());
        }
        return new MemberStatus(member, verdict.health(), verdict.reason(), role, incarnation, facts.flatMap(json -> Untrusted.field(json, "control")),
                facts.flatMap(json -> Untrusted.field(json, "transfer_backend")),
                healthBody.map(json -> Untrusted.strings(json, "suspect_peers")).orElse(List.of()), load, problems);
    }

    /** No answer to {@code /health} is unreachable, another status unhealthy; an answer not in a Handoff server's shape is unreachable too. */
    private static Verdict verdict(Answer health, Optional<JsonNode> healthBody, Answer bootstrap, Optional<JsonNode> facts)
    {
        if (health.failure().isPresent()) {
            return Verdict.unreachable(health.failure().get());
        }
        if (health.status() != 200) {
            return new Verdict(Health.UNHEALTHY, Optional.of(health.trouble()));
        }
        if (healthBody.isEmpty()) {
            return Verdict.unreachable("GET /health: not JSON");
        }
        if (bootstrap.ok() && facts.isEmpty()) {
            return Verdict.unreachable("GET /bootstrap: not JSON");
        }
        return Verdict.OK;
    }

    private static Load load(byte[] metrics, List<String> problems)
    {
        PrometheusSamples samples;
        try {
            samples = PrometheusSamples.parse(new String(metrics, StandardCharsets.UTF_8));
        }
        catch (IllegalArgumentException e) {
            problems.add("GET /metrics: not Prometheus text");
            return Load.UNKNOWN;
        }
        return load(samples, problems);
    }

    private static Load load(PrometheusSamples samples, List<String> problems)
    {
        OptionalInt total = count(samples.value(NodeMetrics.POOL_PAGES), NodeMetrics.POOL_PAGES, problems);
        OptionalInt free = count(samples.value(NodeMetrics.PAGES, Map.of("state", "free")), NodeMetrics.PAGES + "{state=\"free\"}", problems);
        OptionalInt used = OptionalInt.empty();
        if (total.isPresent() && free.isPresent()) {
            if (free.getAsInt() <= total.getAsInt()) {
                used = OptionalInt.of(total.getAsInt() - free.getAsInt());
            }
            else {
                problems.add("/metrics reports more free KV pages (" + free.getAsInt() + ") than its pool holds (" + total.getAsInt() + ")");
            }
        }
        OptionalDouble hitRate = samples.value(HIT_RATE);
        if (hitRate.isPresent() && !(hitRate.getAsDouble() >= 0 && hitRate.getAsDouble() <= 1)) {
            problems.add("/metrics reports " + HIT_RATE + " " + hitRate.getAsDouble() + ", not a share between 0 and 1");
            hitRate = OptionalDouble.empty();
        }
        return new Load(count(samples.value(NodeMetrics.RUNNING), NodeMetrics.RUNNING, problems),
                count(samples.value(NodeMetrics.WAITING), NodeMetrics.WAITING, problems), used, total, hitRate);
    }

    /** A gauge that counts something: a whole number from 0 to Integer.MAX_VALUE, else empty (and said why). */
    private static OptionalInt count(OptionalDouble value, String name, List<String> problems)
    {
        if (value.isEmpty()) {
            return OptionalInt.empty();
        }
        double v = value.getAsDouble();
        if (!(v >= 0 && v <= Integer.MAX_VALUE) || v != Math.rint(v)) {
            problems.add("/metrics reports " + name + " " + v + ", not a count");
            return OptionalInt.empty();
        }
        return OptionalInt.of((int) v);
    }

    /** The body as a JSON object, or empty when it is anything else. */
    private static Optional<JsonNode> object(byte[] body)
    {
        try {
            JsonNode node = JSON.readTree(body);
            return node != null && node.isObject() ? Optional.of(node) : Optional.empty();
        }
        catch (IOException e) {
            return Optional.empty();
        }
    }

    /** The message of a Handoff error body ({@code {"error": {"message": ...}}}), else an excerpt of the body. */
    private static Optional<String> message(byte[] body)
    {
        Optional<String> message = object(body).flatMap(json -> Untrusted.field(json.path("error"), "message"));
        if (message.isPresent()) {
            return message;
        }
        String excerpt = Untrusted.excerpt(body);
        return excerpt.isEmpty() ? Optional.empty() : Optional.of(excerpt);
    }
}
