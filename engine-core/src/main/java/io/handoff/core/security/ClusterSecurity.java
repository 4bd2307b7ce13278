package io.handoff.core.security;

import com.typesafe.config.Config;

import java.net.InetAddress;
import java.net.UnknownHostException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Optional;

import static java.util.Objects.requireNonNull;

/**
 * The {@code handoff.security} settings, read once per process: the cluster secret (loaded from its file here, so a
 * bad file stops the start with what to fix), whether listeners may face the network without one, and the limits
 * that keep unauthenticated connections cheap.
 *
 * <p>Three modes. With a secret, every cluster connection authenticates ({@link ClusterHandshake}) before anything
 * else happens on it, and listeners may bind any address. Without one, cluster listeners bind loopback addresses
 * only: every local process is trusted as a peer. With {@code allow-insecure-remote = true} and no secret, they may
 * bind any address and anyone who reaches them is a peer, which the startup log says.
 */
public record ClusterSecurity(
        Optional<ClusterSecret> secret,
        String secretSource,
        boolean allowInsecureRemote,
        Duration handshakeTimeout,
        long frameBytesInFlight,
        int maxUnauthenticatedConnections,
        int maxUnauthenticatedPerAddress)
{
    public static final Duration DEFAULT_HANDSHAKE_TIMEOUT = Duration.ofSeconds(5);
    public static final long DEFAULT_FRAME_BYTES_IN_FLIGHT = 64L << 20;
    public static final int DEFAULT_MAX_UNAUTHENTICATED = 256;
    public static final int DEFAULT_MAX_UNAUTHENTICATED_PER_ADDRESS = 32;

    public ClusterSecurity
    {
        requireNonNull(secret, "secret is null");
        requireNonNull(secretSource, "secretSource is null");
        requireNonNull(handshakeTimeout, "handshakeTimeout is null");
        if (handshakeTimeout.isNegative() || handshakeTimeout.isZero()) {
            throw new IllegalArgumentException("handshake timeout must be positive, was " + handshakeTimeout);
        }
        if (frameBytesInFlight < 1 || maxUnauthenticatedConnections < 1 || maxUnauthenticatedPerAddress < 1) {
            throw new IllegalArgumentException("frame budget and connection limits must be positive: " + frameBytesInFlight + ", "
                    + maxUnauthenticatedConnections + ", " + maxUnauthenticatedPerAddress);
        }
    }

    /** No secret, loopback only, default limits: what a configuration without {@code handoff.security} settings means. */
    public static ClusterSecurity loopbackOnly()
    {
        return new ClusterSecurity(Optional.empty(), "", false, DEFAULT_HANDSHAKE_TIMEOUT, DEFAULT_FRAME_BYTES_IN_FLIGHT,
                DEFAULT_MAX_UNAUTHENTICATED, DEFAULT_MAX_UNAUTHENTICATED_PER_ADDRESS);
    }

    /** {@code secret}, default limits (tests, and embedders that hold the key themselves). */
    public static ClusterSecurity withSecret(ClusterSecret secret)
    {
        return new ClusterSecurity(Optional.of(secret), "a key given in code", false, DEFAULT_HANDSHAKE_TIMEOUT,
                DEFAULT_FRAME_BYTES_IN_FLIGHT, DEFAULT_MAX_UNAUTHENTICATED, DEFAULT_MAX_UNAUTHENTICATED_PER_ADDRESS);
    }

    public ClusterSecurity withHandshakeTimeout(Duration timeout)
    {
        return new ClusterSecurity(secret, secretSource, allowInsecureRemote, timeout, frameBytesInFlight, maxUnauthenticatedConnections,
                maxUnauthenticatedPerAddress);
    }

    public ClusterSecurity withFrameBytesInFlight(long bytes)
    {
        return new ClusterSecurity(secret, secretSource, allowInsecureRemote, handshakeTimeout, bytes, maxUnauthenticatedConnections,
                maxUnauthenticatedPerAddress);
    }

    /** These settings with other caps on unauthenticated connections (tests of the caps). */
    public ClusterSecurity withUnauthenticatedCaps(int total, int perAddress)
    {
        return new ClusterSecurity(secret, secretSource, allowInsecureRemote, handshakeTimeout, frameBytesInFlight, total, perAddress);
    }

    /** Reads {@code handoff.security}, loading the secret file when one is set. */
    public static ClusterSecurity from(Config config)
    {
        Config s = config.getConfig("handoff.security");
        String file = s.getString("cluster-secret-file").strip();
        Optional<ClusterSecret> secret = file.isEmpty() ? Optional.empty() : Optional.of(ClusterSecret.read(Path.of(file)));
        return new ClusterSecurity(secret, file, s.getBoolean("allow-insecure-remote"), s.getDuration("handshake-timeout"),
                s.getBytes("frame-bytes-in-flight"), s.getInt("max-unauthenticated-connections"), s.getInt("max-unauthenticated-per-address"));
    }

    /** Whether peers must prove the cluster secret. */
    public boolean authenticates()
    {
        return secret.isPresent();
    }

    /**
     * Refuses a cluster listener ({@code what}, e.g. "the prefill control endpoint") on {@code host} when that would
     * let unauthenticated peers reach it from the network: a non-loopback address without a secret, unless
     * allow-insecure-remote is set.
     */
    public void checkListen(String what, String host)
    {
        requireNonNull(host, "host is null");
        InetAddress address;
        try {
            address = InetAddress.getByName(host);
        }
        catch (UnknownHostException e) {
            throw new IllegalArgumentException(what + " cannot listen on '" + host + "': no such address", e);
        }
        checkListen(what, address);
    }

    public void checkListen(String what, InetAddress address)
    {
        requireNonNull(what, "what is null");
        requireNonNull(address, "address is null");
        if (address.isLoopbackAddress() || authenticates() || allowInsecureRemote) {
            return;
        }
        throw new IllegalStateException(what + " would listen on " + address.getHostAddress() + ", which is not a loopback address, "
                + "without a cluster secret: anyone who can reach it could join the cluster and write into its KV memory. Set "
                + "handoff.security.cluster-secret-file (the same file on every node), listen on a loopback address, or set "
                + "handoff.security.allow-insecure-remote = true to accept unauthenticated peers");
    }

    /** The mode, for the startup log. */
    public String describe()
    {
        if (secret.isPresent()) {
            return "cluster connections authenticate with the cluster secret from " + secretSource + " (fingerprint "
                    + secret.get().fingerprint() + "); every node must hold the same secret";
        }
        if (allowInsecureRemote) {
            return "INSECURE: no cluster secret and handoff.security.allow-insecure-remote = true: cluster listeners accept "
                    + "unauthenticated peers on whatever address they bind";
        }
        return "no cluster secret: cluster listeners bind loopback addresses only and trust every local process "
                + "(set handoff.security.cluster-secret-file to authenticate peers)";
    }

    @Override
    public String toString()
    {
        return "ClusterSecurity[" + describe() + "]";
    }
}
