package io.handoff.plugin.mori;

import io.handoff.spi.transfer.MemoryRegion;
import io.handoff.spi.transfer.PoolDescription;
import io.handoff.spi.transfer.SliceMap;
import io.handoff.spi.transfer.SourceRegions;
import io.handoff.spi.transfer.TransferBackend;
import io.handoff.spi.transfer.TransferContext;
import io.handoff.spi.transfer.TransferPeer;
import io.handoff.spi.transfer.WriteGuard;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;

import static java.util.Objects.requireNonNull;

/**
 * The mori backend of one process. A decode keeps its KV pool in a shared file and exposes where each
 * region lies in it; a prefill on the same host maps that file and writes pages into it directly from its
 * own pool ({@link SharedMemoryPeer}), with no staging copy and without the decode taking part. Between
 * hosts mori would use RDMA WRITEs; {@link RdmaTransport} says why that path is not there, and a peer on
 * another host is refused with that reason.
 */
final class MoriBackend
        implements TransferBackend
{
    private final TransferContext context;
    private final MoriConfig config;
    private final RdmaTransport.Probe rdma;
    private final List<SharedMemoryPeer> peers = new CopyOnWriteArrayList<>();
    private SourceRegions sources;
    private boolean closed;

    MoriBackend(TransferContext context, MoriConfig config, RdmaTransport.Probe rdma)
    {
        this.context = requireNonNull(context, "context is null");
        this.config = requireNonNull(config, "config is null");
        this.rdma = requireNonNull(rdma, "rdma is null");
        Path directory = context.sharedMemoryDirectory();
        if (directory == null || !Files.isDirectory(directory) || !Files.isWritable(directory)) {
            throw new IllegalStateException("mori keeps the decode KV pool in a file under the shared-memory directory " + directory
                    + ", which is not a writable directory, and its RDMA path is " + rdma.summary()
                    + "; create the directory, or use another transfer backend");
        }
    }

    /** Always: the shared file is the only memory a same-host sender can write into. */
    @Override
    public boolean wantsSharedFileMemory()
    {
        return true;
    }

    /**
     * Describes the pool file and its regions. Nothing is registered: same-host writes need only the file.
     * {@code guard} is not asked: writes are one-sided, and the core releases pages after a drain ack.
     */
    @Override
    public synchronized byte[] expose(List<MemoryRegion> regions, Path sharedFile, WriteGuard guard)
    {
        requireNonNull(regions, "regions is null");
        requireNonNull(guard, "guard is null");
        checkOpen();
        if (sharedFile == null) {
            throw new IllegalArgumentException("mori writes into the decode KV pool's shared file, but the pool was exposed as anonymous "
                    + "memory, and the RDMA path is " + rdma.summary());
        }
        // the core's pool description is the whole descriptor: the host, the pool file, every region's place in it
        return context.describePool(regions, sharedFile);
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
            throw new IllegalStateException("mori: registerSources must come before connect");
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
            throw new IllegalStateException("mori: registerSources must come before connect");
        }
        PoolDescription remote = context.readPool(descriptor);
        if (!remote.hostId().equals(context.hostId())) {
            throw new IllegalArgumentException("mori cannot reach the decode on host " + remote.hostId() + " from host " + context.hostId()
                    + ": shared memory works only on one host, and the RDMA path is " + rdma.summary()
                    + "; run prefill and decode on one host, or use a transfer backend that works between hosts (mooncake, nixl)");
        }
        if (slices.isIdentity()) {
            sources.geometry().checkReceiver("mori", remote.geometry());
        }
        else {
            slices.check("mori", sources.geometry(), remote.geometry());
        }
        String name = peerHostId + ":" + remote.sharedFile().map(file -> file.getFileName().toString()).orElse("anonymous");
        SharedMemoryPeer peer = new SharedMemoryPeer(name, config, sources.regions(), slices, context.mapSharedPool(descriptor));
        peers.add(peer);
        return peer;
    }

    @Override
    public void close()
    {
        synchronized (this) {
            if (closed) {
                return;
            }
            closed = true;
        }
        for (SharedMemoryPeer peer : peers) {
            peer.close();
        }
    }

    private void checkOpen()
    {
        if (closed) {
            throw new IllegalStateException("mori backend is closed");
        }
    }
}
