package io.handoff.http.base;

import com.typesafe.config.Config;
import com.typesafe.config.ConfigException;
import io.handoff.http.base.security.ApiKeyFile;
import io.handoff.http.base.security.ApiKeys;
import io.handoff.http.base.security.ClusterMac;
import io.handoff.http.base.security.RouterSignature;

import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

import static java.util.Objects.requireNonNull;

/**
 * The HTTP API's settings ({@code handoff.server.*}; reference.conf documents each).
 *
 * @param port 0 picks a free port
 * @param gracePeriod how long a graceful shutdown may take in all
 * @param retryAfter what a 503 for a full waiting queue tells the client to wait
 * @param access who may call it
 * @param limits how much one client may ask of it
 */
public record ServerConfig(String host, int port, Duration gracePeriod, long maxBodyBytes, Duration retryAfter, Duration healthGenerateTimeout,
        ApiAccess access, RequestLimits limits)
{
    public ServerConfig
    {
        requireNonNull(host, "host is null");
        requireNonNull(gracePeriod, "gracePeriod is null");
        requireNonNull(retryAfter, "retryAfter is null");
        requireNonNull(healthGenerateTimeout, "healthGenerateTimeout is null");
        requireNonNull(access, "access is null");
        requireNonNull(limits, "limits is null");
        if (port < 0 || port > 65535) {
            throw new IllegalArgumentException("port must be in 0..65535, was " + port);
        }
        if (maxBodyBytes < 1) {
            throw new IllegalArgumentException("maxBodyBytes must be positive, was " + maxBodyBytes);
        }
    }

    /** Open to every client, with the default limits. */
    public ServerConfig(String host, int port, Duration gracePeriod, long maxBodyBytes, Duration retryAfter, Duration healthGenerateTimeout)
    {
        this(host, port, gracePeriod, maxBodyBytes, retryAfter, healthGenerateTimeout, ApiAccess.OPEN, RequestLimits.DEFAULT);
    }

    /** @param routerMac the MAC the router's calls are signed and checked with (see {@link RouterSignature}); none without a cluster secret */
    public static ServerConfig from(Config config, Optional<ClusterMac> routerMac)
    {
        return new ServerConfig(
                config.getString("handoff.server.host"),
                config.getInt("handoff.server.port"),
                config.getDuration("handoff.server.grace-period"),
                config.getBytes("handoff.server.max-body-bytes"),
                config.getDuration("handoff.server.retry-after"),
                config.getDuration("handoff.server.health-generate-timeout"),
                new ApiAccess(apiKeys(config), DebugEndpoints.enabled(config), routerMac),
                new RequestLimits(
                        config.getInt("handoff.server.max-connections"),
                        config.getDuration("handoff.server.request-read-timeout"),
                        config.getDuration("handoff.server.idle-timeout"),
                        config.getDouble("handoff.server.rate-limit"),
                        config.getInt("handoff.server.rate-limit-burst"),
                        config.getInt("handoff.server.max-prompt-tokens")));
    }

    /** {@code api-keys} and the keys of {@code api-key-file}, together. */
    private static ApiKeys apiKeys(Config config)
    {
        List<String> keys;
        try {
            keys = new ArrayList<>(config.getStringList("handoff.server.api-keys"));
        }
        catch (ConfigException.WrongType e) {
            // the message would show the value, which is a secret
            throw new IllegalArgumentException("handoff.server.api-keys must be a list of strings, e.g. [\"key-1\", \"key-2\"]", e);
        }
        String file = config.getString("handoff.server.api-key-file");
        if (!file.isBlank()) {
            keys.addAll(ApiKeyFile.read(Path.of(file)));
        }
        return ApiKeys.of(keys);
    }

    /** A loopback server on a free port, for tests. */
    public static ServerConfig loopback()
    {
        return new ServerConfig("127.0.0.1", 0, Duration.ofSeconds(10), 1 << 20, Duration.ofSeconds(1), Duration.ofSeconds(20));
    }

    public ServerConfig withAccess(ApiAccess newAccess)
    {
        return new ServerConfig(host, port, gracePeriod, maxBodyBytes, retryAfter, healthGenerateTimeout, newAccess, limits);
    }

    /** The same on {@code newPort} (a server started again where one listened on port 0 takes the port that one got). */
    public ServerConfig withPort(int newPort)
    {
        return new ServerConfig(host, newPort, gracePeriod, maxBodyBytes, retryAfter, healthGenerateTimeout, access, limits);
    }

    public ServerConfig withLimits(RequestLimits newLimits)
    {
        return new ServerConfig(host, port, gracePeriod, maxBodyBytes, retryAfter, healthGenerateTimeout, access, newLimits);
    }
}
