package io.handoff.plugin.mooncake;

import io.handoff.spi.transfer.MemoryRegion;
import io.handoff.spi.transfer.SliceMap;
import io.handoff.spi.transfer.SourceRegions;
import io.handoff.spi.transfer.TransferBackend;
import io.handoff.spi.transfer.TransferContext;
import io.handoff.spi.transfer.TransferPeer;
import io.handoff.spi.transfer.WriteGuard;

import java.io.IOException;
import java.lang.System.Logger;
import java.net.InetAddress;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;

import static java.lang.System.Logger.Level.WARNING;
import static java.util.Objects.requireNonNull;

/**
 * The mooncake backend of one process. A decode exposes its pool: a tcp listener for receiver-validated
 * writes, plus, when the pool is a shared file, what a same-host prefill needs to map it. A prefill
 * registers its pool as sources and connects one {@link MooncakePeer} per decode, choosing the transport per
 * peer.
 */
final class MooncakeBackend
        implements TransferBackend
{
    private static final Logger log = System.getLogger(MooncakeBackend.class.getName());

    private final TransferContext context;
    private final MooncakeConfig config;
    private final boolean sharedFileMemory;
    private final List<MooncakePeer> peers = new CopyOnWriteArrayList<>();
    private TcpReceiver receiver;
    private SourceRegions sources;
    private boolean closed;

    /** What was exposed, so that exposing the same pool again (e.g. once per peer) returns the same descriptor. */

    MooncakeBackend(TransferContext context, MooncakeConfig config)
    {
        this.context = requireNonNull(context, "context is null");
        this.config = requireNonNull(config, "config is null");
        Path directory = context.sharedMemoryDirectory();
        boolean usableDirectory = directory != null && Files.isDirectory(directory) && Files.isWritable(directory);
        if (config.transport() == Transport.SHM && !usableDirectory) {
            throw new IllegalStateException("mooncake transport shm keeps the decode KV pool in a file under the shared-memory directory "
                    + directory + ", which is not a writable directory; create it, or set handoff.plugins.mooncake.transport = tcp");
        }
        if (config.transport() == Transport.AUTO && !usableDirectory) {
            log.log(WARNING, "mooncake: the shared-memory directory " + directory + " is not a writable directory; "
                    + "every peer will use tcp");
        }
        this.sharedFileMemory = config.transport() != Transport.TCP && usableDirectory;
    }

    @Override
    public boolean wantsSharedFileMemory()
    {
        return sharedFileMemory;
    }

    @Override
    public synchronized byte[] expose(List<MemoryRegion> regions, Path sharedFile, WriteGuard guard)
    {
        requireNonNull(regions, "regions is null");
        requireNonNull(guard, "guard is null");
        checkOpen();
        if (receiver != null) {
            throw new IllegalStateException("mooncake: this backend exposed its pool already (port " + receiver.port()
                    + "); the core exposes a pool once");
        }
        if (config.transport() == Transport.SHM && sharedFile == null) {
            throw new IllegalArgumentException("mooncake transport shm needs the KV pool in a shared file, but it was exposed as anonymous memory");
        }
        // Described (and so validated) before listening, so a bad region never leaves a listener behind.
        byte[] pool = context.describePool(regions, sharedFile);
        receiver = TcpReceiver.start(regions, guard, config, context);
        return new Descriptor(config.descriptorHost(MooncakeBackend::localHostName), receiver.port(), receiver.maxFrameBytes(), pool,
                context.readPool(pool)).encode();
    }

    @Override
    public synchronized void registerSources(List<MemoryRegion> regions)
    {
        requireNonNull(regions, "regions is null");
        checkOpen();
        sources = SourceRegions.of(regions);
    }

    @Override
    public synchronized TransferPeer connect(String peerHostId, byte[] descriptor)
    {
        if (sources == null) {
            throw new IllegalStateException("mooncake: registerSources must come before connect");
        }
        return connect(peerHostId, descriptor, SliceMap.identity(sources.geometry()));
    }

    @Override
    public synchronized TransferPeer connect(String peerHostId, byte[] descriptor, SliceMap slices)
    {
        requireNonNull(peerHostId, "peerHostId is null");
        requireNonNull(slices, "slices is null");
        checkOpen();
        if (sources == null) {
            throw new IllegalStateException("mooncake: registerSources must come before connect");
        }
        Descriptor remote = Descriptor.decode(descriptor, context);
        if (slices.isIdentity()) {
            sources.geometry().checkReceiver("mooncake", remote.geometry());
        }
        else {
            slices.check("mooncake", sources.geometry(), remote.geometry());
        }
        Transport transport = choose(remote);
        String name = peerHostId + "@" + remote.host() + ":" + remote.port();
        MooncakePeer peer = switch (transport) {
            case SHM -> new ShmPeer("shm-" + name, sources.regions(), slices, remote, config, context.mapSharedPool(remote.pool()));
            case TCP -> TcpPeer.connect("tcp-" + name, sources.regions(), slices, remote, config, context);
            case AUTO -> throw new IllegalStateException("unreachable: a peer's transport is tcp or shm");
        };
        peers.add(peer);
        return peer;
    }

    /** The transport for one peer: the configured one, or under auto shm exactly when the receiver shares this host and a file. */
    Transport choose(Descriptor remote)
    {
        boolean sameHost = context.hostId().equals(remote.hostId());
        boolean mappable = sameHost && remote.sharedFile().isPresent();
        return switch (config.transport()) {
            case TCP -> Transport.TCP;
            case SHM -> {
                if (!mappable) {
                    throw new IllegalArgumentException("mooncake transport shm cannot reach the receiver on host " + remote.hostId()
                            + (sameHost ? ": it exposed no shared file" : " from host " + context.hostId())
                            + "; set handoff.plugins.mooncake.transport = auto or tcp");
                }
                yield Transport.SHM;
            }
            case AUTO -> mappable ? Transport.SHM : Transport.TCP;
        };
    }

    @Override
    public void close()
    {
        TcpReceiver exposed;
        synchronized (this) {
            if (closed) {
                return;
            }
            closed = true;
            exposed = receiver;
        }
        for (MooncakePeer peer : peers) {
            peer.close();
        }
        if (exposed != null) {
            exposed.close();
        }
    }

    /** The receiver, once exposed; for tests. */
    synchronized TcpReceiver receiver()
    {
        return receiver;
    }

    private void checkOpen()
    {
        if (closed) {
            throw new IllegalStateException("mooncake backend is closed");
        }
    }

    private static String localHostName()
    {
        try {
            return InetAddress.getLocalHost().getHostName();
        }
        catch (IOException e) {
            return "localhost";
        }
    }
}
