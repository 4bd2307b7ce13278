package io.handoff.http.base;

import io.handoff.http.base.security.ApiKeys;
import io.handoff.http.base.security.RateLimiter;

import java.net.InetAddress;
import java.util.Locale;

import static java.util.Objects.requireNonNull;

/**
 * What a request must pass before its route runs: the per-address rate limit, then the API key. The rate limit
 * comes first so that guessing keys is throttled too. Neither a refusal nor the key is logged per request (a
 * flood would flood the log); {@code handoff_http_requests_total} counts the 401s and 429s.
 */
public final class RequestGuard
{
    static final RequestGuard OPEN = new RequestGuard(ApiKeys.NONE, RateLimiter.off());

    private final ApiKeys keys;
    private final RateLimiter limiter;

    public RequestGuard(ApiKeys keys, RateLimiter limiter)
    {
        this.keys = requireNonNull(keys, "keys is null");
        this.limiter = requireNonNull(limiter, "limiter is null");
    }

    static RequestGuard of(ServerConfig config)
    {
        RequestLimits limits = config.limits();
        return new RequestGuard(config.access().apiKeys(), new RateLimiter(limits.rateLimit(), limits.rateLimitBurst(), System::nanoTime));
    }

    /** Throws the 429 or 401 this request gets, with its headers set on {@code exchange}. */
    void check(Exchange exchange, InetAddress client, String authorization)
    {
        limiter.acquire(client).ifPresent(after -> {
            throw ApiError.rateLimited(String.format(Locale.ROOT, "too many requests from %s: at most %s per second, %d at once"
                    + " (handoff.server.rate-limit, rate-limit-burst); retry after %d s", client.getHostAddress(), rate(limiter.perSecond()),
                    limiter.burst(), Math.max(1, Math.ceilDiv(after.toMillis(), 1000))), after);
        });
        if (!keys.required()) {
            return;
        }
        switch (keys.check(authorization)) {
            case ACCEPTED -> { }
            case MISSING -> {
                exchange.setHeader("WWW-Authenticate", "Bearer realm=\"handoff\"");
                throw ApiError.unauthorized("missing_api_key", "this server requires an API key: send the header 'Authorization: Bearer <key>'");
            }
            case WRONG -> {
                exchange.setHeader("WWW-Authenticate", "Bearer realm=\"handoff\", error=\"invalid_token\"");
                throw ApiError.unauthorized("invalid_api_key", "the API key sent is not one of this server's keys (handoff.server.api-keys)");
            }
        }
    }

    private static String rate(double perSecond)
    {
        return perSecond == Math.rint(perSecond) ? Long.toString((long) perSecond) : Double.toString(perSecond);
    }
}
