package io.handoff.testkit.transfer;

import io.handoff.core.security.ClusterHandshake;
import io.handoff.core.security.ClusterSecret;
import io.handoff.core.security.ClusterSecurity;
import io.handoff.core.security.ConnectionCaps;
import io.handoff.spi.transfer.FrameTags;
import io.handoff.spi.transfer.MemoryRegion;
import io.handoff.spi.transfer.PoolDescription;
import io.handoff.spi.transfer.SharedPoolMapping;
import io.handoff.spi.transfer.TransferContext;

import java.io.IOException;
import java.net.InetAddress;
import java.net.Socket;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CopyOnWriteArrayList;

import static java.util.Objects.requireNonNull;

/**
 * A {@link RecordingContext} under the engine's cluster security rules ({@link ClusterSecurity}): with a secret, a
 * backend's own connections authenticate with the core's handshake for transfer connections
 * ({@link ClusterHandshake#transfer}, as the engine's context does) and get the session's {@link FrameTags}, and it may
 * listen anywhere; without one, nothing authenticates and it may listen on loopback addresses only. A listener's
 * connections without a hello are capped as the engine caps them ({@link ConnectionCaps}). Every refusal the backend
 * reports is kept, for a test to read.
 */
public final class ClusterContext
        implements TransferContext
{
    private static final Duration HANDSHAKE_TIMEOUT = Duration.ofSeconds(5);

    private final RecordingContext plain;
    private final Optional<ClusterSecret> secret;
    private final ClusterSecurity security;
    private final String backendId;
    private final List<String> refusals = new CopyOnWriteArrayList<>();
    private final ConnectionCaps caps;

    /** @param secret the cluster's secret, or empty for a cluster without one (loopback listeners only) */
    public ClusterContext(RecordingContext plain, Optional<ClusterSecret> secret, String backendId)
    {
        this(plain, secret, backendId, ClusterSecurity.DEFAULT_MAX_UNAUTHENTICATED, ClusterSecurity.DEFAULT_MAX_UNAUTHENTICATED_PER_ADDRESS);
    }

    /** With other caps on the connections without a hello, in total and per address. */
    public ClusterContext(RecordingContext plain, Optional<ClusterSecret> secret, String backendId, int maxUnauthenticated, int perAddress)
    {
        this.caps = new ConnectionCaps(maxUnauthenticated, perAddress);
        this.plain = requireNonNull(plain, "plain is null");
        this.secret = requireNonNull(secret, "secret is null");
        this.security = secret.map(ClusterSecurity::withSecret).orElseGet(ClusterSecurity::loopbackOnly);
        this.backendId = requireNonNull(backendId, "backendId is null");
    }

    public ClusterContext(RecordingContext plain, ClusterSecret secret, String backendId)
    {
        this(plain, Optional.of(secret), backendId);
    }

    /** What {@link #refused} was told, as "peer: reason", in order. */
    public List<String> refusals()
    {
        return refusals;
    }

    @Override
    public String hostId()
    {
        return plain.hostId();
    }

    @Override
    public Path sharedMemoryDirectory()
    {
        return plain.sharedMemoryDirectory();
    }

    @Override
    public byte[] describePool(List<MemoryRegion> regions, Path sharedFile)
    {
        return plain.describePool(regions, sharedFile);
    }

    @Override
    public PoolDescription readPool(byte[] description)
    {
        return plain.readPool(description);
    }

    @Override
    public SharedPoolMapping mapSharedPool(byte[] description)
    {
        return plain.mapSharedPool(description);
    }

    @Override
    public void checkListen(InetAddress address)
    {
        security.checkListen("transfer backend '" + backendId + "'", address);
    }

    @Override
    public void authenticate(Socket socket, boolean connecting)
            throws IOException
    {
        authenticateConnection(socket, connecting);
    }

    @Override
    public FrameTags authenticateConnection(Socket socket, boolean connecting)
            throws IOException
    {
        if (secret.isEmpty()) {
            return FrameTags.NONE;
        }
        return ClusterHandshake.transfer(socket, secret.get(), backendId, connecting, HANDSHAKE_TIMEOUT).frameTags();
    }

    @Override
    public void refused(String peerAddress, String reason)
    {
        refusals.add(peerAddress + ": " + reason);
    }

    /** Kept as "peer: kind: reason". */
    @Override
    public void refused(String peerAddress, String kind, String reason)
    {
        refusals.add(peerAddress + ": " + kind + ": " + reason);
    }

    @Override
    public Optional<Admission> admit(String peerAddress)
    {
        return caps.admit(peerAddress, why -> refused(peerAddress, "limit", why));
    }
}
