package io.handoff.router;

import com.fasterxml.jackson.databind.JsonNode;
import io.handoff.cluster.Member;

import java.net.URI;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.LongAdder;

import static java.util.Objects.requireNonNull;

/**
 * One prefill or decode server as the router sees it: the membership record it stands for (one incarnation of one
 * member: a restart under the same id is another {@code Backend}), its health (from polling {@code /health}), what its
 * {@code /bootstrap} said when it last became healthy, the requests this router has in flight on it (and the KV pages
 * they are estimated to hold), and its {@link CircuitBreaker}.
 */
final class Backend
{
    /**
     * What the router knows of the server's health.
     *
     * @param bootstrap its {@code /bootstrap} answer, read when it became healthy; null while unhealthy
     * @param reason why it is unhealthy; null while healthy
     */
    private record Health(JsonNode bootstrap, String reason)
    {
        boolean healthy()
        {
            return bootstrap != null;
        }
    }

    private final URI url;
    private final BackendRole role;
    private final CircuitBreaker breaker;
    // the membership record: its draining flag and capacity may change while the incarnation stays
    private volatile Member member;
    private final AtomicInteger inFlight = new AtomicInteger();
    // the KV pages this router's requests in flight here hold, as estimated (RouteKey.pages): a decode's load
    private final AtomicLong pages = new AtomicLong();
    private final LongAdder requests = new LongAdder();
    private final LongAdder failures = new LongAdder();
    private final AtomicInteger unansweredPolls = new AtomicInteger();
    private volatile Health health = new Health(null, "not polled yet");
    // a decode's suspect prefills (their KV-transfer control endpoints), from its last /health
    private volatile Set<String> suspectPeers = Set.of();
    // its queue and recent latencies, from its last /health (what the SLO planner weighs)
    private volatile ReportedLoad reported = ReportedLoad.NONE;

    /**
     * What a server's {@code /health} says of its load: requests waiting and running, and the p90 of its last 30 s of
     * time to first token and inter-token latency (negative when it measured none).
     */
    record ReportedLoad(int waiting, int running, double ttftP90Seconds, double itlP90Seconds)
    {
        static final ReportedLoad NONE = new ReportedLoad(0, 0, -1, -1);
    }

    Backend(Member member)
    {
        this(member, CircuitBreaker.disabled());
    }

    Backend(Member member, CircuitBreaker breaker)
    {
        this.breaker = requireNonNull(breaker, "breaker is null");
        this.member = requireNonNull(member, "member is null");
        this.url = member.http();
        this.role = BackendRole.of(member.role());
    }

    CircuitBreaker breaker()
    {
        return breaker;
    }

    Member member()
    {
        return member;
    }

    /** A newer record of the same incarnation (draining, capacity). */
    void update(Member newer)
    {
        if (!newer.id().equals(member.id()) || newer.role() != member.role() || !newer.http().equals(url)) {
            throw new IllegalArgumentException("a record of member " + newer.id() + " at " + newer.http() + " cannot update " + describe());
        }
        this.member = newer;
    }

    /** Whether membership says it is on its way out: it finishes what it has and gets nothing new. */
    boolean draining()
    {
        return member.draining();
    }

    /** Healthy and not draining: it may get new requests. */
    boolean routable()
    {
        return healthy() && !draining();
    }

    /**
     * The incarnation this router knows it by: the membership record's, or where the source does not know it (static
     * discovery) what its {@code /bootstrap} reported; empty before either.
     */
    String incarnation()
    {
        if (!member.incarnation().isEmpty()) {
            return member.incarnation();
        }
        JsonNode reported = bootstrap().map(bootstrap -> bootstrap.path("incarnation")).orElse(null);
        return reported != null && reported.isTextual() ? reported.textValue() : "";
    }

    URI url()
    {
        return url;
    }

    BackendRole role()
    {
        return role;
    }

    /** The endpoint {@code path} (e.g. {@code /generate}) of this server. */
    URI resolve(String path)
    {
        String base = url.toString();
        return URI.create((base.endsWith("/") ? base.substring(0, base.length() - 1) : base) + path);
    }

    boolean healthy()
    {
        return health.healthy();
    }

    /** Why it gets no requests, or empty while healthy. */
    Optional<String> unhealthyReason()
    {
        return Optional.ofNullable(health.reason());
    }

    Optional<JsonNode> bootstrap()
    {
        return Optional.ofNullable(health.bootstrap());
    }

    /** A prefill's KV-transfer control endpoint {@code HOST:PORT}, as its {@code /bootstrap} gave it. */
    Optional<String> control()
    {
        return bootstrap().map(bootstrap -> bootstrap.path("control")).filter(JsonNode::isTextual).map(JsonNode::textValue);
    }

    /** A decode's suspect prefills, by KV-transfer control endpoint, as its last {@code /health} listed them. */
    Set<String> suspectPeers()
    {
        return suspectPeers;
    }

    void suspectPeers(Set<String> peers)
    {
        this.suspectPeers = Set.copyOf(peers);
    }

    ReportedLoad reported()
    {
        return reported;
    }

    void reported(ReportedLoad load)
    {
        this.reported = requireNonNull(load, "load is null");
    }

    /** A poll got its answer in time. */
    void answered()
    {
        unansweredPolls.set(0);
    }

    /** A poll got no answer in time; returns how many in a row have not. */
    int unanswered()
    {
        return unansweredPolls.incrementAndGet();
    }

    /** Returns whether it was unhealthy before. */
    boolean up(JsonNode bootstrap)
    {
        requireNonNull(bootstrap, "bootstrap is null");
        boolean was = health.healthy();
        unansweredPolls.set(0);
        health = new Health(bootstrap, null);
        return !was;
    }

    /** Returns whether it was healthy before. */
    boolean down(String reason)
    {
        requireNonNull(reason, "reason is null");
        boolean was = health.healthy();
        health = new Health(null, reason);
        return was;
    }

    void acquire()
    {
        acquire(0);
    }

    /** One more request in flight, holding {@code pages} KV pages here (an estimate; 0 for a prefill). */
    void acquire(long pages)
    {
        inFlight.incrementAndGet();
        this.pages.addAndGet(pages);
        requests.increment();
        breaker.chosen();
    }

    void release()
    {
        release(0);
    }

    /** A request acquired with {@code pages} ended here. */
    void release(long pages)
    {
        inFlight.decrementAndGet();
        this.pages.addAndGet(-pages);
    }

    /** A request failed here (a 5xx or no answer): counted, and told to the breaker. */
    void failed()
    {
        failures.increment();
        breaker.failed();
    }

    /** A request was answered here (other than with a 5xx): the breaker closes. */
    void succeeded()
    {
        breaker.succeeded();
    }

    /** Requests this router has sent to it that have not ended. */
    int inFlight()
    {
        return inFlight.get();
    }

    /** The KV pages this router's requests in flight here hold, as estimated. */
    long pages()
    {
        return pages.get();
    }

    long requests()
    {
        return requests.sum();
    }

    long failures()
    {
        return failures.sum();
    }

    String describe()
    {
        return role.label() + " server " + url + (member.id().equals(url.toString()) ? "" : " (" + member.id() + ")");
    }

    @Override
    public String toString()
    {
        return describe();
    }
}
