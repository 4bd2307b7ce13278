package io.handoff.bench.transfer;

import io.handoff.core.config.HandoffConfig;
import io.handoff.core.disagg.Disaggregation;
import io.handoff.core.disagg.control.PeerProcess;
import io.handoff.core.fault.FaultInjector;
import io.handoff.core.kv.KvGeometry;
import io.handoff.core.kv.KvPool;
import io.handoff.core.plugin.PluginRegistry;
import io.handoff.core.security.ClusterSecurity;
import io.handoff.core.transfer.TransferHooks;
import io.handoff.core.transfer.TransferLink;
import io.handoff.spi.transfer.MemoryRegion;
import io.handoff.spi.transfer.PageGeometry;
import io.handoff.spi.transfer.SliceMap;
import io.handoff.spi.transfer.TransferPeer;
import io.handoff.spi.transfer.WriteGuard;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Path;
import java.util.List;

import static java.util.Objects.requireNonNull;

/**
 * A transfer backend and its KV pool opened outside the engine, for measuring the data path: the backend comes
 * from {@link Disaggregation#open} (the engine's transfer context: its run directory, pool-file grants and cluster
 * authentication), the pool from {@link Disaggregation#allocatePool} (a shared file on a receiver whose backend
 * wants one), and the peer is driven by the core's {@link TransferLink}, as a prefill drives a decode. There are no
 * rooms, so no page is ever granted or released: every write is allowed.
 */
public final class StandaloneTransfer
        implements AutoCloseable
{
    private final Disaggregation disaggregation;
    private final KvPool pool;
    private final List<MemoryRegion> regions;
    private TransferLink link;

    private StandaloneTransfer(Disaggregation disaggregation, KvPool pool)
    {
        this.disaggregation = disaggregation;
        this.pool = pool;
        this.regions = Disaggregation.regions(pool);
    }

    /** Opens the configured backend for {@code role} and allocates its pool of {@code pages} pages. */
    public static StandaloneTransfer open(Disaggregation.Role role, HandoffConfig config, ClusterSecurity security, PluginRegistry plugins,
            KvGeometry geometry, int pages)
    {
        return open(role, config, security, plugins, geometry, pages, 1);
    }

    /** The same with the pools of {@code ranks} tensor-parallel ranks of {@code geometry} each, rank by rank, as a server of that many ranks keeps them. */
    public static StandaloneTransfer open(Disaggregation.Role role, HandoffConfig config, ClusterSecurity security, PluginRegistry plugins,
            KvGeometry geometry, int pages, int ranks)
    {
        Disaggregation disaggregation = Disaggregation.open(role, config, security, plugins, FaultInjector.NONE);
        try {
            return new StandaloneTransfer(disaggregation, disaggregation.allocatePool(geometry, pages, ranks));
        }
        catch (RuntimeException | Error e) {
            disaggregation.close();
            throw e;
        }
    }

    public String backendId()
    {
        return disaggregation.backendId();
    }

    public KvPool pool()
    {
        return pool;
    }

    public List<MemoryRegion> regions()
    {
        return regions;
    }

    /** Whether a receiver of this backend keeps its pool in a shared file mapping. */
    public boolean wantsSharedFileMemory()
    {
        return disaggregation.backend().wantsSharedFileMemory();
    }

    /** Pages per plan, as the engine's prefill bounds them ({@code handoff.disaggregation.max-pages-per-plan}). */
    public int maxPagesPerPlan()
    {
        return disaggregation.config().maxPagesPerPlan();
    }

    /**
     * A pool of the same shape as this one in a shared file of this process's private folder, for a reference that
     * writes the same kind of memory a receiver's backend writes; the caller closes it and removes its file.
     */
    public KvPool mapScratchPool(String name)
    {
        return mapScratchPool(name, pool.geometry(), 1);
    }

    /** A pool of {@code ranks} ranks of {@code geometry} (a receiver's of another layout) in a shared file, as {@link #mapScratchPool(String)}. */
    public KvPool mapScratchPool(String name, KvGeometry geometry, int ranks)
    {
        Path file = disaggregation.privateFolder().resolve(requireNonNull(name, "name is null"));
        try {
            return KvPool.mapShared(geometry, pool.pages(), file, ranks);
        }
        catch (IOException e) {
            throw new UncheckedIOException("cannot map a scratch pool at " + file + ": " + e.getMessage(), e);
        }
    }

    /** Receiver: makes the pool writable by senders and returns the descriptor they connect with. */
    public byte[] expose()
    {
        return disaggregation.backend().expose(regions, pool.sharedFile().orElse(null), WriteGuard.ALLOW_ALL);
    }

    /**
     * Sender: registers this pool as the source, connects to the receiver that returned {@code descriptor} on this
     * host, and starts the core's transfer link over the connection (no fault points, no timing hooks). Once per
     * instance; {@link #close} closes the link.
     */
    public TransferLink connect(byte[] descriptor)
    {
        return connect(descriptor, null);
    }

    /** The same moving {@code slices} of each page (a receiver of another layout); null for region by region. */
    public TransferLink connect(byte[] descriptor, SliceMap slices)
    {
        requireNonNull(descriptor, "descriptor is null");
        if (link != null) {
            throw new IllegalStateException("already connected");
        }
        disaggregation.backend().registerSources(regions);
        TransferPeer peer = slices == null ? disaggregation.backend().connect(PeerProcess.localHostId(), descriptor)
                : disaggregation.backend().connect(PeerProcess.localHostId(), descriptor, slices);
        try {
            PageGeometry sources = PageGeometry.of(regions);
            if (slices == null) {
                sources.checkReceiver(backendId(), peer.receiverGeometry());
            }
            else {
                slices.check(backendId(), sources, peer.receiverGeometry());
            }
            link = TransferLink.start(backendId(), "receiver", peer, sources, peer.receiverGeometry(), disaggregation.config().linkTimeouts(),
                    TransferHooks.NONE, disaggregation.config().transferWindow());
            return link;
        }
        catch (RuntimeException e) {
            peer.close();
            throw e;
        }
    }

    @Override
    public void close()
    {
        try {
            if (link != null) {
                link.close();
            }
        }
        finally {
            try {
                disaggregation.close();
            }
            finally {
                pool.close();
            }
        }
    }
}
