package io.handoff.http.base;

import java.time.Duration;

import static java.util.Objects.requireNonNull;

/**
 * How much one client may ask of the HTTP API ({@code handoff.server.*}; reference.conf documents each).
 *
 * @param maxConnections open connections at once; more are closed as they arrive; 0 means no limit
 * @param requestReadTimeout how long a request's headers and body may take to arrive; zero means no limit
 * @param idleTimeout how long a connection may stay open with no request on it
 * @param rateLimit requests per second per client address; 0 turns the limit off
 * @param rateLimitBurst requests an address may send at once
 * @param maxPromptTokens longest prompt accepted; 0 means the model's context
 */
public record RequestLimits(int maxConnections, Duration requestReadTimeout, Duration idleTimeout, double rateLimit, int rateLimitBurst,
        int maxPromptTokens)
{
    /** The defaults of reference.conf. */
    public static final RequestLimits DEFAULT = new RequestLimits(1024, Duration.ofSeconds(30), Duration.ofSeconds(60), 0, 10, 0);

    public RequestLimits
    {
        requireNonNull(requestReadTimeout, "requestReadTimeout is null");
        requireNonNull(idleTimeout, "idleTimeout is null");
        if (maxConnections < 0) {
            throw new IllegalArgumentException("handoff.server.max-connections must be at least 0, was " + maxConnections);
        }
        if (requestReadTimeout.isNegative()) {
            throw new IllegalArgumentException("handoff.server.request-read-timeout must not be negative, was " + requestReadTimeout);
        }
        if (idleTimeout.isNegative() || idleTimeout.toSeconds() < 1) {
            throw new IllegalArgumentException("handoff.server.idle-timeout must be at least 1s, was " + idleTimeout);
        }
        if (!(rateLimit >= 0) || Double.isInfinite(rateLimit)) {
            throw new IllegalArgumentException("handoff.server.rate-limit must be a finite number at least 0, was " + rateLimit);
        }
        if (rateLimitBurst < 1) {
            throw new IllegalArgumentException("handoff.server.rate-limit-burst must be at least 1, was " + rateLimitBurst);
        }
        if (maxPromptTokens < 0) {
            throw new IllegalArgumentException("handoff.server.max-prompt-tokens must be at least 0, was " + maxPromptTokens);
        }
    }

    public RequestLimits withRateLimit(double perSecond, int burst)
    {
        return new RequestLimits(maxConnections, requestReadTimeout, idleTimeout, perSecond, burst, maxPromptTokens);
    }

    public RequestLimits withMaxPromptTokens(int tokens)
    {
        return new RequestLimits(maxConnections, requestReadTimeout, idleTimeout, rateLimit, rateLimitBurst, tokens);
    }
}
