package io.handoff.router;

import com.typesafe.config.Config;

import java.time.Duration;

import static java.util.Objects.requireNonNull;

/**
 * The router's own settings ({@code handoff.router.*}; reference.conf documents each). Where it listens, its
 * body limit, grace period and Retry-After are the HTTP server's ({@code handoff.server.*}).
 *
 * @param healthInterval how often every server's {@code /health} is polled
 * @param healthTimeout bound on one {@code /health}, {@code /bootstrap} or {@code /abort_request} call
 * @param unhealthyAfterTimeouts polls in a row without an answer in time before a healthy server is taken out
 * @param connectTimeout bound on opening a connection to a server
 * @param requestTimeout bound on waiting for a server's response to start
 * @param routing how a prefill and a decode are chosen ({@code handoff.router.policy.*}, {@code .cache-aware.*})
 * @param retry how often and after what pause a failed transfer is retried ({@code handoff.router.retry.*})
 * @param breaker when a failing server is taken out of choice ({@code handoff.router.circuit-breaker.*})
 */
public record RouterConfig(Duration healthInterval, Duration healthTimeout, int unhealthyAfterTimeouts, Duration connectTimeout,
        Duration requestTimeout, Routing routing, Retry retry, Breaker breaker)
{
    /**
     * @param prefill the prefills' policy
     * @param decode the decodes' policy (never cache-aware: a decode's cache is the prefill's transfer, not its history)
     * @param decodePageSize the page size a decode's outstanding KV pages are estimated in
     * @param keyChars the most prompt symbols a request's key keeps
     * @param cacheAware the cache-aware policy's settings
     */
    public record Routing(RoutingPolicyName prefill, RoutingPolicyName decode, int decodePageSize, int keyChars, CacheAware cacheAware)
    {
        public Routing
        {
            requireNonNull(prefill, "prefill is null");
            requireNonNull(decode, "decode is null");
            requireNonNull(cacheAware, "cacheAware is null");
            if (decode == RoutingPolicyName.CACHE_AWARE) {
                throw new IllegalArgumentException("handoff.router.policy.decode = cache-aware is not supported: a decode's KV comes from the "
                        + "prefill's transfer, so no routing history predicts a cache hit there; use least-load (fewest outstanding KV pages), "
                        + "power-of-two or round-robin");
            }
            if (decodePageSize < 1 || keyChars < 1) {
                throw new IllegalArgumentException("decodePageSize and keyChars must be at least 1, were " + decodePageSize + " and " + keyChars);
            }
        }
    }

    /**
     * The cache-aware policy's settings ({@code handoff.router.cache-aware.*}).
     *
     * @param treeChars the most prompt symbols (chars or token ids) one prefill's tree holds
     * @param loadWeight what one request in flight on a prefill costs, in uncached prompt symbols
     * @param balanceAbsThreshold loads (requests in flight) are unbalanced only when the most and least loaded differ by more
     * @param balanceRelThreshold ... and the most loaded has more than this many times the least's
     * @param cacheThreshold the share of a prompt a prefill's tree must hold for the cache to decide (0 to 1)
     */
    public record CacheAware(long treeChars, double loadWeight, int balanceAbsThreshold, double balanceRelThreshold, double cacheThreshold)
    {
        public CacheAware
        {
            if (treeChars < 1 || loadWeight < 0 || balanceAbsThreshold < 0 || balanceRelThreshold < 1 || cacheThreshold < 0 || cacheThreshold > 1) {
                throw new IllegalArgumentException("handoff.router.cache-aware settings out of range: tree-chars " + treeChars + " (at least 1), "
                        + "load-weight " + loadWeight + " (at least 0), balance-abs-threshold " + balanceAbsThreshold + " (at least 0), "
                        + "balance-rel-threshold " + balanceRelThreshold + " (at least 1), cache-threshold " + cacheThreshold + " (0 to 1)");
            }
        }
    }

    /**
     * @param maxAttempts attempts of a request in all, the first included (1: no retry)
     * @param initialBackoff the pause before the first retry (doubled for each one after, jittered)
     * @param maxBackoff the longest pause before a retry
     */
    public record Retry(int maxAttempts, Duration initialBackoff, Duration maxBackoff)
    {
        public Retry
        {
            if (maxAttempts < 1) {
                throw new IllegalArgumentException("handoff.router.retry.max-attempts must be at least 1, was " + maxAttempts);
            }
            requireNonNull(initialBackoff, "initialBackoff is null");
            requireNonNull(maxBackoff, "maxBackoff is null");
            if (initialBackoff.isNegative() || maxBackoff.compareTo(initialBackoff) < 0) {
                throw new IllegalArgumentException("handoff.router.retry: initial-backoff (" + initialBackoff + ") must be at least 0 and at most "
                        + "max-backoff (" + maxBackoff + ")");
            }
        }
    }

    /**
     * @param failureThreshold failed requests in a row that open a server's breaker (0: never)
     * @param openDuration how long an open breaker keeps the server out before one trial request
     */
    public record Breaker(int failureThreshold, Duration openDuration)
    {
        public Breaker
        {
            if (failureThreshold < 0) {
                throw new IllegalArgumentException("handoff.router.circuit-breaker.failure-threshold must be at least 0, was " + failureThreshold);
            }
            positive(openDuration, "openDuration");
        }
    }

    public RouterConfig
    {
        positive(healthInterval, "healthInterval");
        positive(healthTimeout, "healthTimeout");
        if (unhealthyAfterTimeouts < 1) {
            throw new IllegalArgumentException("unhealthyAfterTimeouts must be at least 1, was " + unhealthyAfterTimeouts);
        }
        positive(connectTimeout, "connectTimeout");
        positive(requestTimeout, "requestTimeout");
        requireNonNull(routing, "routing is null");
        requireNonNull(retry, "retry is null");
        requireNonNull(breaker, "breaker is null");
    }

    private static void positive(Duration duration, String name)
    {
        requireNonNull(duration, name + " is null");
        if (duration.isNegative() || duration.isZero()) {
            throw new IllegalArgumentException(name + " must be positive, was " + duration);
        }
    }

    public RouterConfig withRouting(Routing routing)
    {
        return new RouterConfig(healthInterval, healthTimeout, unhealthyAfterTimeouts, connectTimeout, requestTimeout, routing, retry, breaker);
    }

    public RouterConfig withRetry(Retry retry)
    {
        return new RouterConfig(healthInterval, healthTimeout, unhealthyAfterTimeouts, connectTimeout, requestTimeout, routing, retry, breaker);
    }

    public RouterConfig withBreaker(Breaker breaker)
    {
        return new RouterConfig(healthInterval, healthTimeout, unhealthyAfterTimeouts, connectTimeout, requestTimeout, routing, retry, breaker);
    }

    public static RouterConfig from(Config config)
    {
        String prefix = "handoff.router.";
        Routing routing = new Routing(
                RoutingPolicyName.parse(prefix + "policy.prefill", config.getString(prefix + "policy.prefill")),
                RoutingPolicyName.parse(prefix + "policy.decode", config.getString(prefix + "policy.decode")),
                config.getInt(prefix + "policy.decode-page-size"),
                config.getInt(prefix + "cache-aware.key-chars"),
                new CacheAware(
                        config.getLong(prefix + "cache-aware.tree-chars"),
                        config.getDouble(prefix + "cache-aware.load-weight"),
                        config.getInt(prefix + "cache-aware.balance-abs-threshold"),
                        config.getDouble(prefix + "cache-aware.balance-rel-threshold"),
                        config.getDouble(prefix + "cache-aware.cache-threshold")));
        return new RouterConfig(
                config.getDuration(prefix + "health-interval"),
                config.getDuration(prefix + "health-timeout"),
                config.getInt(prefix + "unhealthy-after-timeouts"),
                config.getDuration(prefix + "connect-timeout"),
                config.getDuration(prefix + "request-timeout"),
                routing,
                new Retry(config.getInt(prefix + "retry.max-attempts"), config.getDuration(prefix + "retry.initial-backoff"),
                        config.getDuration(prefix + "retry.max-backoff")),
                new Breaker(config.getInt(prefix + "circuit-breaker.failure-threshold"), config.getDuration(prefix + "circuit-breaker.open-duration")));
    }
}
