package io.handoff.core.disagg;

import io.handoff.core.config.HandoffConfig;
import io.handoff.core.disagg.control.Compatibility;
import io.handoff.core.disagg.control.ControlSecurity;
import io.handoff.core.disagg.peer.DisaggregationConfig;
import io.handoff.core.disagg.peer.EngineTransferContext;
import io.handoff.core.disagg.peer.Incarnation;
import io.handoff.core.disagg.peer.TransferStats;
import io.handoff.core.disagg.room.EarlySend;
import io.handoff.core.disagg.room.PageChecksums;
import io.handoff.core.fault.FaultInjector;
import io.handoff.core.kv.KvGeometry;
import io.handoff.core.kv.KvPool;
import io.handoff.core.kv.KvRegion;
import io.handoff.core.plugin.PluginEntry;
import io.handoff.core.plugin.PluginRegistry;
import io.handoff.core.scheduler.KvHandoff;
import io.handoff.core.scheduler.Scheduler;
import io.handoff.core.security.ClusterSecurity;
import io.handoff.core.security.RunDirectory;
import io.handoff.spi.PluginSettings;
import io.handoff.core.transfer.RankLayout;
import io.handoff.spi.attention.AttentionGeometry;
import io.handoff.spi.attention.KvLayout;
import io.handoff.spi.transfer.MemoryRegion;
import io.handoff.spi.transfer.PageGeometry;
import io.handoff.spi.transfer.TransferBackend;
import io.handoff.spi.transfer.TransferBackendProvider;
import io.handoff.spi.transfer.TransferCapability;
import org.apache.logging.log4j.LogManager;
import org.apache.logging.log4j.Logger;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.Set;

import static java.util.Objects.requireNonNull;

/**
 * One process's part in disaggregation: the transfer backend chosen among the plugins, the KV pool it
 * needs (a shared file mapping on a decode whose backend writes one-sided on the same host), and the
 * prefill or decode handoff that drives rooms over it.
 */
public final class Disaggregation
        implements AutoCloseable
{
    private static final Logger log = LogManager.getLogger(Disaggregation.class);

    public enum Role
    {
        PREFILL,
        DECODE
    }

    /**
     * How to open. {@code bypassEarlySendGateForTesting} turns early send on whatever the backend declares:
     * it exists only so a test can show what the gate prevents (torn KV), and nothing in the distribution
     * sets it. {@code releaseOnDrainDeadlineForTesting} makes a decode release a suspect prefill's quarantined
     * pages when the drain deadline passes, as the field's timer-based fixes do: it breaks invariant I2 on
     * purpose, so a test can show the corruption the rule prevents. Neither is a setting: no configuration reaches
     * them.
     */
    public record Options(boolean bypassEarlySendGateForTesting, boolean releaseOnDrainDeadlineForTesting)
    {
        public static final Options DEFAULT = new Options(false, false);

        public Options(boolean bypassEarlySendGateForTesting)
        {
            this(bypassEarlySendGateForTesting, false);
        }
    }

    private final Role role;
    private final DisaggregationConfig config;
    private final String backendId;
    private final TransferBackend backend;
    private final Set<TransferCapability> capabilities;
    private final EarlySend earlySend;
    private final EngineTransferContext context;
    private final ControlSecurity security;
    private final RunDirectory runDirectory;
    private final Options options;
    private final String incarnation = Incarnation.next();
    private Path sharedFile;
    private PrefillHandoff prefill;
    private DecodeHandoff decode;

    private Disaggregation(Role role, DisaggregationConfig config, String backendId, TransferBackend backend,
            Set<TransferCapability> capabilities, EarlySend earlySend, EngineTransferContext context, ControlSecurity security,
            RunDirectory runDirectory, Options options)
    {
        this.options = options;
        this.context = context;
        this.security = security;
        this.runDirectory = runDirectory;
        this.role = role;
        this.config = config;
        this.backendId = backendId;
        this.backend = backend;
        this.capabilities = Set.copyOf(capabilities);
        this.earlySend = earlySend;
    }

    /**
     * Opens the configured transfer backend for {@code role}. Fails with a message naming the backend when
     * it is missing, unavailable, has no data path, or when early send is forced on without the
     * capabilities that make it safe.
     */
    public static Disaggregation open(Role role, HandoffConfig handoffConfig, ClusterSecurity clusterSecurity, PluginRegistry plugins,
            FaultInjector faults)
    {
        return open(role, handoffConfig, clusterSecurity, plugins, faults, Options.DEFAULT);
    }

    /** @param clusterSecurity the process's one copy of the security settings and secret ({@code Engine#security}) */
    public static Disaggregation open(Role role, HandoffConfig handoffConfig, ClusterSecurity clusterSecurity, PluginRegistry plugins,
            FaultInjector faults, Options options)
    {
        requireNonNull(role, "role is null");
        DisaggregationConfig config = DisaggregationConfig.from(handoffConfig.config());
        String id = config.transferBackend();
        PluginEntry entry = plugins.require(id, "transfer", "handoff.disaggregation.transfer-backend");
        TransferBackendProvider provider = (TransferBackendProvider) entry.provider().orElseThrow();
        PluginSettings settings = handoffConfig.pluginSettings(id);
        Set<TransferCapability> capabilities = provider.capabilities(settings);
        EarlySend earlySend = options.bypassEarlySendGateForTesting()
                ? EarlySend.forcedForTesting(config.earlySend(), id, capabilities)
                : EarlySend.decide(config.earlySend(), id, capabilities);
        ControlSecurity security = ControlSecurity.of(requireNonNull(clusterSecurity, "clusterSecurity is null"));
        log.info("{}: {}", role.name().toLowerCase(java.util.Locale.ROOT), security.settings().describe());
        RunDirectory runDirectory = RunDirectory.create(EngineTransferContext.sharedMemoryBase());
        EngineTransferContext context = new EngineTransferContext(faults, runDirectory, security, id);
        TransferBackend backend;
        try {
            backend = PluginRegistry.inContext(plugins.loaderOf(entry), () -> provider.open(context, settings));
        }
        catch (RuntimeException e) {
            runDirectory.close();
            throw new IllegalArgumentException("transfer backend '" + id + "' failed to open: " + e.getMessage(), e);
        }
        catch (Exception e) {
            runDirectory.close();
            throw new IllegalStateException("transfer backend '" + id + "' failed to open: " + e, e);
        }
        log.info("{}: transfer backend {} with {}; early send of the cached prefix {} ({})", role.name().toLowerCase(java.util.Locale.ROOT),
                id, capabilities, earlySend.enabled() ? "enabled" : "disabled", earlySend.reason());
        return new Disaggregation(role, config, id, backend, capabilities, earlySend, context, security, runDirectory, options);
    }

    /**
     * The KV pool this role needs: anonymous memory, or on a decode a shared file same-host peers of the same user can
     * map, in this process's private folder of the run directory. A tensor-parallel server ({@code ranks} > 1) always
     * keeps its pools in one such file, rank by rank, which its other ranks map their slices of: a transfer then moves
     * every rank's pages from the leader, rank {@code r}'s pages into the peer's rank {@code r}.
     */
    public KvPool allocatePool(KvGeometry geometry, int pages, int ranks)
    {
        return allocatePool(geometry, pages, ranks, 1);
    }

    /**
     * The same for a server of {@code dataParallel} > 1 data-parallel ranks ({@code pages} each): their pools in one file,
     * region by region ({@link KvPool#mapDataParallel}), so that a transfer writes a request's KV into its own rank's part.
     */
    public KvPool allocatePool(KvGeometry geometry, int pages, int ranks, int dataParallel)
    {
        if (dataParallel > 1) {
            sharedFile = runDirectory.path().resolve("handoff-kv.pool");
            try {
                return KvPool.mapDataParallel(geometry, pages, sharedFile, dataParallel);
            }
            catch (IOException e) {
                throw new UncheckedIOException("cannot map the KV pool to " + sharedFile + ": " + e.getMessage(), e);
            }
        }
        if (ranks > 1 || (role == Role.DECODE && backend.wantsSharedFileMemory())) {
            // in this process's 0700 folder, itself 0600: no other user reads a request's KV
            sharedFile = runDirectory.path().resolve("handoff-kv.pool");
            try {
                return KvPool.mapShared(geometry, pages, sharedFile, ranks);
            }
            catch (IOException e) {
                throw new UncheckedIOException("cannot map the KV pool to " + sharedFile + ": " + e.getMessage(), e);
            }
        }
        return KvPool.allocate(geometry, pages);
    }

    /** Builds the handoff the scheduler drives; call {@link #attach} once the scheduler exists. */
    public KvHandoff handoff(KvPool pool, Compatibility compatibility)
    {
        return handoff(pool, compatibility, null);
    }

    /**
     * The same for a pool whose regions are those of {@code pool.ranks()} tensor-parallel ranks of a model with these KV heads
     * ({@code model}: the whole model's attention), which pairs with decodes of any layout of the model.
     */
    public KvHandoff handoff(KvPool pool, Compatibility compatibility, AttentionGeometry model)
    {
        List<MemoryRegion> regions = regions(pool);
        RankLayout layout = model == null ? null
                : RankLayout.of(pool.ranks(), model.numKvHeads(), model.layout() == KvLayout.MLA, pool.geometry().pageSize(), regions);
        PageChecksums checksums = new PageChecksums(regions, layout);
        if (role == Role.PREFILL) {
            backend.registerSources(regions);
            try {
                prefill = new PrefillHandoff(config, compatibility, backendId, backend, checksums, pool.geometry().pageSize(), earlySend,
                        PageGeometry.of(regions), layout, context, security, incarnation);
            }
            catch (IOException e) {
                throw new UncheckedIOException("cannot start the prefill control endpoint: " + e.getMessage(), e);
            }
            context.listen(prefill::movingChunk);
            log.info("prefill control endpoint on {}", prefill.controlAddress());
            return prefill;
        }
        decode = new DecodeHandoff(config, compatibility, backendId, backend, regions, pool.ranks(), pool.pagePool().partitions(),
                pool.sharedFile().orElse(null), checksums, security,
                options.releaseOnDrainDeadlineForTesting(), context.faults());
        return decode;
    }

    public void attach(Scheduler scheduler)
    {
        if (prefill != null) {
            prefill.attach(scheduler);
        }
        if (decode != null) {
            decode.attach(scheduler);
        }
    }

    public static List<MemoryRegion> regions(KvPool pool)
    {
        List<MemoryRegion> regions = new ArrayList<>();
        for (KvRegion region : pool.regions()) {
            regions.add(new MemoryRegion(regions.size(), region.segment(), region.pageStride(), region.fileOffset()));
        }
        return regions;
    }

    public TransferBackend backend()
    {
        return backend;
    }

    public DisaggregationConfig config()
    {
        return config;
    }

    /** This process's private folder of the run directory (0700): where its shared files go. */
    public Path privateFolder()
    {
        return runDirectory.path();
    }

    public Role role()
    {
        return role;
    }

    public String backendId()
    {
        return backendId;
    }

    public Set<TransferCapability> capabilities()
    {
        return capabilities;
    }

    public EarlySend earlySend()
    {
        return earlySend;
    }

    /**
     * This process's incarnation: a random id drawn when the server started, published in {@code /bootstrap} and in
     * its membership record. A server restarted under the same name has another one.
     */
    public String incarnation()
    {
        return incarnation;
    }

    /** The prefill's control address, which decodes connect to. */
    public Optional<String> controlAddress()
    {
        return Optional.ofNullable(prefill).map(PrefillHandoff::controlAddress);
    }

    /** The transport of the most recent peer connection (e.g. tcp, shm). */
    public String transport()
    {
        return prefill != null ? prefill.transport() : decode != null ? decode.transport() : "none";
    }

    public TransferStats stats()
    {
        return prefill != null ? prefill.stats() : decode.stats();
    }

    /** Decode: the KV bytes each tensor-parallel rank's pool received in rooms that succeeded, by rank; empty on a prefill. */
    public long[] receivedBytesByRank()
    {
        return decode != null ? decode.receivedBytesByRank() : new long[0];
    }

    /** Decode: prompt tokens of routed requests its prefix cache held, so that they were not received; 0 on a prefill. */
    public long prefixHitTokens()
    {
        return decode != null ? decode.prefixHitTokens() : 0;
    }

    public long droppedMessages()
    {
        return prefill != null ? prefill.droppedMessages() : decode.droppedMessages();
    }

    /**
     * Decode: the prefills (bootstrap addresses) that are suspect, for {@code /health} and the router; empty on a
     * prefill, and before any decode handoff exists.
     */
    public List<String> suspectPeers()
    {
        return decode != null ? decode.suspectPeers() : List.of();
    }

    /** Replaced prefill processes whose quarantined pages nothing proved releasable (decode only); see {@code DecodeHandoff}. */
    public List<String> unprovenRestarts()
    {
        return decode != null ? decode.unprovenRestarts() : List.of();
    }

    /**
     * Rooms not final yet by the release rules: still transferring, draining, owing or awaiting a drain ack, or (on a decode)
     * holding quarantined pages that wait for their proof. 0 on an idle server whose rooms all settled.
     */
    public int unsettledRooms()
    {
        return prefill != null ? prefill.unsettledRooms() : decode != null ? decode.unsettledRooms() : 0;
    }

    /**
     * Waits until every room settled ({@link #unsettledRooms} is 0) or {@code deadlineNanos} (on {@link System#nanoTime})
     * passed, while the links keep running: drain acks arrive, lost peers are fenced. A graceful shutdown calls it after
     * its last request ended and before it closes the links. Returns the rooms still unsettled.
     */
    public int awaitSettled(long deadlineNanos)
            throws InterruptedException
    {
        while (true) {
            int unsettled = unsettledRooms();
            long left = deadlineNanos - System.nanoTime();
            if (unsettled == 0 || left <= 0) {
                return unsettled;
            }
            // rooms settle on other threads (control readers, transfer completions): look again shortly, up to the deadline
            Thread.sleep(Math.max(1, Math.min(50, left / 1_000_000)));
        }
    }

    /** Peers refused for failing cluster authentication (or speaking before their hello), and this node's own failed attempts. */
    public long authFailures()
    {
        return security.failures().total();
    }

    /** Every connection this process's cluster listeners (control, transfer) dropped or refused, by listener and reason. */
    public io.handoff.trace.ConnectionRefusals refusals()
    {
        return security.failures().refusals();
    }

    /** The security settings this process runs with (the HTTP side signs and checks with the same secret). */
    public ClusterSecurity security()
    {
        return security.settings();
    }

    @Override
    public void close()
    {
        if (prefill != null) {
            prefill.close();
        }
        else if (decode != null) {
            decode.close();
        }
        else {
            backend.close();
        }
        if (sharedFile != null) {
            try {
                Files.deleteIfExists(sharedFile);
            }
            catch (IOException e) {
                log.warn("cannot remove the shared KV file {}: {}", sharedFile, e.getMessage());
            }
        }
        runDirectory.close();
    }
}
