package io.handoff.testkit.transfer;

import io.handoff.core.security.ClusterHandshake;
import io.handoff.core.security.ClusterSecret;
import io.handoff.spi.transfer.FrameTags;
import io.handoff.spi.transfer.MemoryRegion;
import io.handoff.spi.transfer.PoolDescription;
import io.handoff.spi.transfer.SharedPoolMapping;
import io.handoff.spi.transfer.TransferContext;

import java.io.IOException;
import java.net.Socket;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;

import static java.util.Objects.requireNonNull;

/**
 * A {@link RecordingContext} of a cluster with a secret: a backend's own connections authenticate with the core's
 * handshake for transfer connections ({@link ClusterHandshake#transfer}, as the engine's context does) and get the
 * session's {@link FrameTags}; every refusal the backend reports is kept, for a test to read.
 */
public final class AuthenticatingContext
        implements TransferContext
{
    private static final Duration HANDSHAKE_TIMEOUT = Duration.ofSeconds(5);

    private final RecordingContext plain;
    private final ClusterSecret secret;
    private final String backendId;
    private final List<String> refusals = new CopyOnWriteArrayList<>();

    public AuthenticatingContext(RecordingContext plain, ClusterSecret secret, String backendId)
    {
        this.plain = requireNonNull(plain, "plain is null");
        this.secret = requireNonNull(secret, "secret is null");
        this.backendId = requireNonNull(backendId, "backendId is null");
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
    public void authenticate(Socket socket, boolean connecting)
            throws IOException
    {
        authenticateConnection(socket, connecting);
    }

    @Override
    public FrameTags authenticateConnection(Socket socket, boolean connecting)
            throws IOException
    {
        return ClusterHandshake.transfer(socket, secret, backendId, connecting, HANDSHAKE_TIMEOUT).frameTags();
    }

    @Override
    public void refused(String peerAddress, String reason)
    {
        refusals.add(peerAddress + ": " + reason);
    }
}
