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
 */
public record RouterConfig(Duration healthInterval, Duration healthTimeout, int unhealthyAfterTimeouts, Duration connectTimeout,
        Duration requestTimeout)
{
    public RouterConfig
    {
        positive(healthInterval, "healthInterval");
        positive(healthTimeout, "healthTimeout");
        if (unhealthyAfterTimeouts < 1) {
            throw new IllegalArgumentException("unhealthyAfterTimeouts must be at least 1, was " + unhealthyAfterTimeouts);
        }
        positive(connectTimeout, "connectTimeout");
        positive(requestTimeout, "requestTimeout");
    }

    private static void positive(Duration duration, String name)
    {
        requireNonNull(duration, name + " is null");
        if (duration.isNegative() || duration.isZero()) {
            throw new IllegalArgumentException(name + " must be positive, was " + duration);
        }
    }

    public static RouterConfig from(Config config)
    {
        return new RouterConfig(
                config.getDuration("handoff.router.health-interval"),
                config.getDuration("handoff.router.health-timeout"),
                config.getInt("handoff.router.unhealthy-after-timeouts"),
                config.getDuration("handoff.router.connect-timeout"),
                config.getDuration("handoff.router.request-timeout"));
    }
}
