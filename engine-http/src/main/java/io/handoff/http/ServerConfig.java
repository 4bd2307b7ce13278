package io.handoff.http;

import com.typesafe.config.Config;

import java.time.Duration;

import static java.util.Objects.requireNonNull;

/**
 * The HTTP API's settings ({@code handoff.server.*}; reference.conf documents each).
 *
 * @param port 0 picks a free port
 * @param gracePeriod how long a graceful shutdown may take in all
 * @param retryAfter what a 503 for a full waiting queue tells the client to wait
 */
public record ServerConfig(String host, int port, Duration gracePeriod, long maxBodyBytes, Duration retryAfter, Duration healthGenerateTimeout)
{
    public ServerConfig
    {
        requireNonNull(host, "host is null");
        requireNonNull(gracePeriod, "gracePeriod is null");
        requireNonNull(retryAfter, "retryAfter is null");
        requireNonNull(healthGenerateTimeout, "healthGenerateTimeout is null");
        if (port < 0 || port > 65535) {
            throw new IllegalArgumentException("port must be in 0..65535, was " + port);
        }
        if (maxBodyBytes < 1) {
            throw new IllegalArgumentException("maxBodyBytes must be positive, was " + maxBodyBytes);
        }
    }

    public static ServerConfig from(Config config)
    {
        return new ServerConfig(
                config.getString("handoff.server.host"),
                config.getInt("handoff.server.port"),
                config.getDuration("handoff.server.grace-period"),
                config.getBytes("handoff.server.max-body-bytes"),
                config.getDuration("handoff.server.retry-after"),
                config.getDuration("handoff.server.health-generate-timeout"));
    }

    /** A loopback server on a free port, for tests. */
    public static ServerConfig loopback()
    {
        return new ServerConfig("127.0.0.1", 0, Duration.ofSeconds(10), 1 << 20, Duration.ofSeconds(1), Duration.ofSeconds(20));
    }
}
