package io.handoff.core.disagg.peer;

import io.handoff.core.disagg.control.ControlSecurity;
import io.handoff.core.disagg.control.PeerProcess;
import io.handoff.core.fault.FaultInjector;
import io.handoff.core.fault.FaultPoint;
import io.handoff.core.security.AuthenticationException;
import io.handoff.core.security.ClusterHandshake;
import io.handoff.core.security.ClusterSecret;
import io.handoff.core.security.ConnectionCaps;
import io.handoff.core.security.RunDirectory;
import io.handoff.core.transfer.PoolDescriptions;
import io.handoff.core.transfer.TransferHooks;
import io.handoff.spi.transfer.FrameTags;
import io.handoff.spi.transfer.MemoryRegion;
import io.handoff.spi.transfer.PoolDescription;
import io.handoff.spi.transfer.RoomKey;
import io.handoff.spi.transfer.SharedPoolMapping;
import io.handoff.spi.transfer.TransferContext;

import java.io.IOException;
import java.net.InetAddress;
import java.net.Socket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Optional;

import static java.util.Objects.requireNonNull;

/**
 * The core's side of a transfer backend: this host's identity (two processes share memory exactly when
 * their host ids are equal: same host name and same boot), where shared files go, and the transfer
 * path's fault-injection points.
 */
public final class EngineTransferContext
        implements TransferContext, TransferHooks
{
    private static final String HOST_ID = PeerProcess.localHostId();

    /** Hears when a backend starts moving a chunk's pages, for transfer timing. */
    public interface Activity
    {
        Activity NONE = (room, chunk) -> {};

        void movingChunk(RoomKey room, int chunk);
    }

    private final FaultInjector faults;
    private final RunDirectory runDirectory;
    private final ControlSecurity security;
    private final String backendId;
    // the backend's listener's connections that have not said their hello yet
    private final ConnectionCaps caps;
    private volatile Activity activity = Activity.NONE;

    /**
     * @param runDirectory this process's private folder: shared files go there, and peers' pool files are mapped only from its root
     * @param security what the backend's own connections authenticate with, and where refusals are counted
     */
    public EngineTransferContext(FaultInjector faults, RunDirectory runDirectory, ControlSecurity security, String backendId)
    {
        this.faults = requireNonNull(faults, "faults is null");
        this.runDirectory = requireNonNull(runDirectory, "runDirectory is null");
        this.security = requireNonNull(security, "security is null");
        this.backendId = requireNonNull(backendId, "backendId is null");
        this.caps = ConnectionCaps.of(security.settings());
    }

    /** Where this engine's private folders go: /dev/shm when this machine has it, else the temporary folder. */
    public static Path sharedMemoryBase()
    {
        Path shm = Path.of("/dev/shm");
        return Files.isDirectory(shm) && Files.isWritable(shm) ? shm : Path.of(System.getProperty("java.io.tmpdir"));
    }

    /** The process's fault plan, for the decode's point before a landed page is verified. */
    public FaultInjector faults()
    {
        return faults;
    }

    public void listen(Activity listener)
    {
        this.activity = requireNonNull(listener, "listener is null");
    }

    @Override
    public String hostId()
    {
        return HOST_ID;
    }

    /** This process's private folder (mode 0700) in the run directory. */
    @Override
    public Path sharedMemoryDirectory()
    {
        return runDirectory.path();
    }

    @Override
    public byte[] describePool(List<MemoryRegion> regions, Path sharedFile)
    {
        return PoolDescriptions.describe(HOST_ID, regions, sharedFile);
    }

    @Override
    public PoolDescription readPool(byte[] description)
    {
        return PoolDescriptions.read(description);
    }

    @Override
    public SharedPoolMapping mapSharedPool(byte[] description)
    {
        return PoolDescriptions.map(HOST_ID, description, runDirectory.root());
    }

    @Override
    public void checkListen(InetAddress address)
    {
        security.settings().checkListen("transfer backend '" + backendId + "'", address);
    }

    @Override
    public void authenticate(Socket socket, boolean connecting)
            throws IOException
    {
        authenticateConnection(socket, connecting);
    }

    /**
     * The control channel's handshake, with a purpose of its own: a proof for one backend's connection is worthless
     * elsewhere, and so are the frame tags of its session.
     */
    @Override
    public FrameTags authenticateConnection(Socket socket, boolean connecting)
            throws IOException
    {
        requireNonNull(socket, "socket is null");
        Optional<ClusterSecret> secret = security.settings().secret();
        if (secret.isEmpty()) {
            return FrameTags.NONE;
        }
        Duration timeout = security.settings().handshakeTimeout();
        try {
            return ClusterHandshake.transfer(socket, secret.get(), backendId, connecting, timeout).frameTags();
        }
        catch (AuthenticationException e) {
            if (!connecting) {
                // the accepting backend reports it through refused(), which counts it
                throw e;
            }
            security.failures().failed();
            throw new AuthenticationException(e.failure(), "cluster authentication of the " + backendId + " connection failed: "
                    + e.getMessage(), e);
        }
    }

    @Override
    public void refused(String peerAddress, String reason)
    {
        refused(peerAddress, "refused", reason);
    }

    @Override
    public void refused(String peerAddress, String kind, String reason)
    {
        security.failures().refused("transfer", String.valueOf(peerAddress), String.valueOf(kind), backendId + ": " + reason);
    }

    @Override
    public Optional<Admission> admit(String peerAddress)
    {
        String host = String.valueOf(peerAddress);
        return caps.admit(host, why -> refused(host, "limit", "closed on arrival: " + why));
    }

    @Override
    public void beforeReadingChunk(RoomKey room, int chunk)
    {
        faults.hit(FaultPoint.TRANSFER_BEFORE_CHUNK, room.roomId(), chunk);
        activity.movingChunk(room, chunk);
    }

    @Override
    public void afterPage(RoomKey room, int pageIndex)
    {
        faults.hit(FaultPoint.TRANSFER_AFTER_PAGE, room.roomId(), pageIndex);
    }

    @Override
    public boolean watchesPage(RoomKey room, int pageIndex)
    {
        return faults.watches(FaultPoint.TRANSFER_AFTER_PAGE, room.roomId(), pageIndex);
    }
}
