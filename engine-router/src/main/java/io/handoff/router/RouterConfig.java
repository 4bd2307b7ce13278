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
 * @param fallback where a request goes when no prefill can take it ({@code handoff.router.fallback*})
 * @param planner whether and how the router sets its servers' roles ({@code handoff.router.planner*})
 */
public record RouterConfig(Duration healthInterval, Duration healthTimeout, int unhealthyAfterTimeouts, Duration connectTimeout,
        Duration requestTimeout, Routing routing, Retry retry, Breaker breaker, Fallback fallback, Planner planner)
{
    /**
     * @param prefill the prefills' policy
     * @param decode the decodes' policy (cache-aware: the decode whose prefix cache probably holds the conversation)
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

    /** Where a request goes when no prefill can take it. */
    public enum FallbackMode
    {
        /** To a decode, which computes the prompt itself ({@code bootstrap_local}). */
        DECODE_LOCAL,
        /** Nowhere: 503, as when a side has no healthy server. */
        NONE;

        public String label()
        {
            return name().toLowerCase(java.util.Locale.ROOT).replace('_', '-');
        }

        static FallbackMode parse(String key, String value)
        {
            for (FallbackMode mode : values()) {
                if (mode.label().equals(value)) {
                    return mode;
                }
            }
            throw new IllegalArgumentException(key + " = '" + value + "': expected decode-local or none");
        }
    }

    /**
     * @param mode decode-local or none
     * @param belowPromptChars with decode-local, prompts shorter than this (chars, or ids) go to a decode alone even with
     *         prefills available; 0: only when no prefill is
     */
    public record Fallback(FallbackMode mode, int belowPromptChars)
    {
        public static final Fallback NONE = new Fallback(FallbackMode.NONE, 0);

        public Fallback
        {
            requireNonNull(mode, "mode is null");
            if (belowPromptChars < 0) {
                throw new IllegalArgumentException("handoff.router.fallback-below-prompt-chars must be at least 0, was " + belowPromptChars);
            }
        }
    }

    /**
     * The SLO planner's settings ({@code handoff.router.planner-*}).
     *
     * @param enabled {@code slo}: the router switches its servers' roles to keep TTFT and ITL within target; {@code off}: never
     * @param ttftTarget the time-to-first-token target (the decodes' p90 of their last 30 s)
     * @param itlTarget the inter-token latency target (likewise)
     * @param interval how often the planner looks at what the servers report
     * @param hysteresis how many looks in a row must point the same way before a switch
     * @param cooldown the least time between two switches
     */
    public record Planner(boolean enabled, Duration ttftTarget, Duration itlTarget, Duration interval, int hysteresis, Duration cooldown)
    {
        public static final Planner OFF = new Planner(false, Duration.ofSeconds(2), Duration.ofMillis(100), Duration.ofSeconds(5), 3,
                Duration.ofSeconds(60));

        public Planner
        {
            positive(ttftTarget, "handoff.router.planner-ttft-target");
            positive(itlTarget, "handoff.router.planner-itl-target");
            positive(interval, "handoff.router.planner-interval");
            requireNonNull(cooldown, "cooldown is null");
            if (hysteresis < 1) {
                throw new IllegalArgumentException("handoff.router.planner-hysteresis must be at least 1, was " + hysteresis);
            }
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
        requireNonNull(fallback, "fallback is null");
        requireNonNull(planner, "planner is null");
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
        return new RouterConfig(healthInterval, healthTimeout, unhealthyAfterTimeouts, connectTimeout, requestTimeout, routing, retry, breaker, fallback, planner);
    }

    public RouterConfig withFallback(Fallback fallback)
    {
        return new RouterConfig(healthInterval, healthTimeout, unhealthyAfterTimeouts, connectTimeout, requestTimeout, routing, retry, breaker, fallback, planner);
    }

    public RouterConfig withPlanner(Planner planner)
    {
        return new RouterConfig(healthInterval, healthTimeout, unhealthyAfterTimeouts, connectTimeout, requestTimeout, routing, retry, breaker, fallback, planner);
    }

    public RouterConfig withRetry(Retry retry)
    {
        return new RouterConfig(healthInterval, healthTimeout, unhealthyAfterTimeouts, connectTimeout, requestTimeout, routing, retry, breaker, fallback, planner);
    }

    public RouterConfig withBreaker(Breaker breaker)
    {
        return new RouterConfig(healthInterval, healthTimeout, unhealthyAfterTimeouts, connectTimeout, requestTimeout, routing, retry, breaker, fallback, planner);
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
                new Breaker(config.getInt(prefix + "circuit-breaker.failure-threshold"), config.getDuration(prefix + "circuit-breaker.open-duration")),
                new Fallback(FallbackMode.parse(prefix + "fallback", config.getString(prefix + "fallback")),
                        config.getInt(prefix + "fallback-below-prompt-chars")),
                new Planner(plannerOn(config.getString(prefix + "planner")), config.getDuration(prefix + "planner-ttft-target"),
                        config.getDuration(prefix + "planner-itl-target"), config.getDuration(prefix + "planner-interval"),
                        config.getInt(prefix + "planner-hysteresis"),
                        config.getDuration(prefix + "planner-cooldown")));
    }

    private static boolean plannerOn(String value)
    {
        return switch (value) {
            case "slo" -> true;
            case "off" -> false;
            default -> throw new IllegalArgumentException("handoff.router.planner = '" + value + "': expected off or slo");
        };
    }
}
