package io.handoff.plugin.nixl;

import io.handoff.spi.transfer.MemoryRegion;
import io.handoff.spi.transfer.PageGeometry;
import io.handoff.spi.transfer.SliceMap;
import io.handoff.spi.transfer.SourceRegions;
import io.handoff.spi.transfer.TransferBackend;
import io.handoff.spi.transfer.TransferCapability;
import io.handoff.spi.transfer.TransferContext;
import io.handoff.spi.transfer.TransferPeer;
import io.handoff.spi.transfer.WriteGuard;

import java.lang.System.Logger;
import java.net.InetAddress;
import java.net.UnknownHostException;
import java.lang.foreign.MemorySegment;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;

import static java.lang.System.Logger.Level.INFO;
import static java.lang.System.Logger.Level.WARNING;
import static java.util.Objects.requireNonNull;

/**
 * The nixl backend of one process: one UCX context (its transports chosen by {@code tls}). A decode exposes its
 * pool (registered regions, a worker and the thread that progresses it); a prefill registers its pool as sources and
 * connects one {@link NixlPeer} per decode, each with its own worker, endpoint and staging buffer (staging mode), or
 * registers the source pool with UCX once and has every peer put from it (direct mode, {@code staging = false}).
 */
final class NixlBackend
        implements TransferBackend
{
    private static final Logger log = System.getLogger(NixlBackend.class.getName());
    private static final AtomicInteger PEER_IDS = new AtomicInteger();

    private final TransferContext context;
    private final NixlConfig config;
    private final Set<TransferCapability> capabilities;
    private final Ucp ucp;
    private final MemorySegment ucpContext;
    private final List<NixlPeer> peers = new CopyOnWriteArrayList<>();
    private Exposure exposure;
    private WriteGuard exposedGuard;
    private SourceRegions sources;
    // Direct mode: the source regions' UCX registrations, which every peer's puts name; released after the peers.
    private List<MemorySegment> sourceRegistrations = List.of();
    private boolean closed;

    NixlBackend(TransferContext context, NixlConfig config, Set<TransferCapability> capabilities, Ucp ucp)
    {
        this.context = requireNonNull(context, "context is null");
        this.config = requireNonNull(config, "config is null");
        this.capabilities = Set.copyOf(capabilities);
        this.ucp = requireNonNull(ucp, "ucp is null");
        try {
            this.ucpContext = ucp.createContext(config.tls(), netDevices(context, config));
        }
        catch (UcxException e) {
            throw new IllegalStateException("nixl: " + e.getMessage() + "; check handoff.plugins.nixl.tls (" + config.tlsName()
                    + ") against the transports `ucx_info -d` lists on this machine", e);
        }
    }

    /**
     * Registers the regions with UCX and returns the descriptor senders connect with. The guard is kept but never
     * asked: puts land without the receiver's involvement (ONE_SIDED), so the core releases pages on drain acks or by
     * fencing the peer, not on permits. The core exposes a pool once and keeps the descriptor; a second call is refused.
     */
    @Override
    public synchronized byte[] expose(List<MemoryRegion> regions, Path sharedFile, WriteGuard guard)
    {
        requireNonNull(regions, "regions is null");
        requireNonNull(guard, "guard is null");
        checkOpen();
        if (exposure != null) {
            throw new IllegalStateException("nixl: this backend exposed its pool already; the core exposes a pool once");
        }
        PageGeometry.of(regions); // refuses regions out of index order
        if (regions.isEmpty()) {
            throw new IllegalArgumentException("nixl: no regions to expose");
        }
        exposure = Exposure.start(ucp, ucpContext, regions, context.hostId());
        exposedGuard = guard;
        return exposure.descriptor();
    }

    @Override
    public synchronized void registerSources(List<MemoryRegion> regions)
    {
        requireNonNull(regions, "regions is null");
        checkOpen();
        if (sources != null) {
            throw new IllegalStateException("nixl: this backend registered its sources already; the core registers them once");
        }
        SourceRegions registered = SourceRegions.of(regions);
        if (!config.staging()) {
            List<MemorySegment> memhs = new ArrayList<>(regions.size());
            try {
                for (MemoryRegion region : registered.regions()) {
                    memhs.add(ucp.memMap(ucpContext, region.segment()));
                }
            }
            catch (RuntimeException e) {
                memhs.forEach(memh -> ucp.memUnmap(ucpContext, memh));
                throw e;
            }
            sourceRegistrations = List.copyOf(memhs);
        }
        sources = registered;
    }

    @Override
    public synchronized TransferPeer connect(String peerHostId, byte[] descriptor)
    {
        if (sources == null) {
            throw new IllegalStateException("nixl: registerSources must come before connect");
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
            throw new IllegalStateException("nixl: registerSources must come before connect");
        }
        Descriptor remote = Descriptor.decode(descriptor);
        if (slices.isIdentity()) {
            sources.geometry().checkReceiver("nixl", remote.geometry());
        }
        else {
            slices.check("nixl", sources.geometry(), remote.geometry());
        }
        String name = peerHostId + "#" + PEER_IDS.incrementAndGet();
        UcxLink link = config.staging()
                ? UcxLink.connect(ucp, ucpContext, remote, config.stagingBytes(), List.of())
                : UcxLink.connect(ucp, ucpContext, remote, 0, sourceRegistrations);
        NixlPeer peer;
        try {
            peer = new NixlPeer(name, "ucx:" + config.tlsName(), capabilities, sources.regions(), slices, remote, link, config);
        }
        catch (RuntimeException e) {
            link.release(config.flushTimeout().toMillis());
            throw e;
        }
        peers.add(peer);
        return peer;
    }

    /**
     * Releases the peers the core has not closed yet (the core closes each peer's link first, which releases it on its
     * transfer thread), stops the progress thread, then cleans up the UCX context. If a peer is still sending or a
     * thread could not be stopped, the context is left alone: cleaning it up under a live worker aborts the process.
     */
    @Override
    public void close()
    {
        Exposure exposed;
        synchronized (this) {
            if (closed) {
                return;
            }
            closed = true;
            exposed = exposure;
        }
        boolean released = true;
        for (NixlPeer peer : peers) {
            peer.close();
            released &= peer.released();
        }
        if (exposed != null) {
            released &= exposed.close(config.flushTimeout().toMillis() + 1_000);
        }
        if (released) {
            sourceRegistrations.forEach(memh -> ucp.memUnmap(ucpContext, memh));
            ucp.cleanup(ucpContext);
        }
        else {
            log.log(WARNING, "nixl: a UCX thread did not stop; the UCX context is not cleaned up");
        }
    }

    /**
     * What network devices UCX may use: loopback only ({@code lo}; shared-memory transports are not network devices and
     * stay), since UCX's transports listen on the devices they use and authenticate nobody; any only when the operator
     * opted in ({@code allow-unauthenticated-network}) and the cluster lets listeners face the network (a cluster secret,
     * or allow-insecure-remote). UCX reads it per context, so the process's UCX_NET_DEVICES is overridden here, never
     * widened.
     */
    static String netDevices(TransferContext context, NixlConfig config)
    {
        if (!config.unauthenticatedNetwork()) {
            log.log(INFO, "nixl: UCX uses loopback and shared memory only (UCX_NET_DEVICES=lo for this backend): its own connections "
                    + "authenticate nobody; handoff.plugins.nixl.allow-unauthenticated-network = true lets it use the network");
            return "lo";
        }
        try {
            context.checkListen(InetAddress.getByAddress(new byte[4]));
        }
        catch (IllegalStateException | UnknownHostException e) {
            log.log(INFO, "nixl: no cluster secret, so UCX uses loopback and shared memory only (UCX_NET_DEVICES=lo for this backend), "
                    + "although handoff.plugins.nixl.allow-unauthenticated-network is on");
            return "lo";
        }
        log.log(WARNING, "nixl: UCX uses the network devices it finds (handoff.plugins.nixl.allow-unauthenticated-network; "
                + "UCX_NET_DEVICES narrows them), and its own connections authenticate nobody: a host that reaches its ports and "
                + "speaks UCX can write into this process's memory (docs/security.md, UCX). Firewall them to the cluster's hosts");
        return "";
    }

    private void checkOpen()
    {
        if (closed) {
            throw new IllegalStateException("nixl backend is closed");
        }
    }
}
