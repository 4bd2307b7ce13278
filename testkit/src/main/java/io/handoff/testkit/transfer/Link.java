package io.handoff.testkit.transfer;

import io.handoff.core.security.ClusterSecret;
import io.handoff.core.transfer.TransferHooks;
import io.handoff.core.transfer.TransferLink;
import io.handoff.spi.PluginSettings;
import io.handoff.spi.transfer.MemoryRegion;
import io.handoff.spi.transfer.PageGeometry;
import io.handoff.spi.transfer.SliceMap;
import io.handoff.spi.transfer.RoomKey;
import io.handoff.spi.transfer.TransferBackend;
import io.handoff.spi.transfer.TransferBackendProvider;
import io.handoff.spi.transfer.TransferContext;
import io.handoff.spi.transfer.TransferPeer;
import io.handoff.spi.transfer.TransferPlan;
import io.handoff.spi.transfer.WriteGuard;

import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.function.UnaryOperator;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;

import static java.util.Objects.requireNonNull;

/**
 * A prefill and a decode backend in one JVM, opened through the provider the way the engine opens them and
 * connected: the sender's source pool holds pattern 0, the receiver's pool the canary. The receiver's pool is a
 * shared file mapping exactly when the backend {@linkplain TransferBackend#wantsSharedFileMemory() wants one}.
 * The sender's peer is driven the way the engine drives it: by the core's {@link TransferLink}, which checks each
 * plan against both pools, waits on the fence for a connection without FORWARD_SYNC, delivers each outcome once and
 * answers drains. The core's hooks on the data path ({@link RecordingHooks}) and every plan's outcome go to one
 * event list, in the order they happened.
 */
public final class Link
        implements AutoCloseable
{
    public static final String PREFILL_HOST = "prefill-host";
    public static final String DECODE_HOST = "decode-host";
    /**
     * The core's waits for a kit link: the engine's defaults, except that close waits up to 30 seconds for the plan
     * in flight (a test may park the transfer thread in a hook).
     */
    /** Plans in flight on a PIPELINED connection, as {@code handoff.disaggregation.transfer-window} defaults to. */
    public static final int WINDOW = 4;
    public static final TransferLink.Timeouts TIMEOUTS = new TransferLink.Timeouts(Duration.ofSeconds(60), Duration.ofSeconds(60),
            Duration.ofSeconds(30));

    /**
     * How the two backends are wired beyond the kit's defaults.
     *
     * @param security {@code PLAIN}: the kit's {@link RecordingContext} (nothing authenticates, any listener is fine);
     *         {@code AUTHENTICATED}: both sides hold a test cluster secret, so their own connections authenticate and
     *         get frame tags; {@code LOOPBACK_ONLY}: no secret, and the engine's rule that listeners then bind loopback
     *         addresses only (both {@link ClusterContext})
     * @param descriptorOnTheWay what becomes of the receiver's descriptor before the sender connects with it (a test may
     *         route the connection through a proxy of its own); identity by default
     */
    public record Wiring(Security security, UnaryOperator<byte[]> descriptorOnTheWay)
    {
        public enum Security
        {
            PLAIN, AUTHENTICATED, LOOPBACK_ONLY
        }

        public static final Wiring PLAIN = new Wiring(Security.PLAIN, UnaryOperator.identity());
        public static final Wiring AUTHENTICATED = new Wiring(Security.AUTHENTICATED, UnaryOperator.identity());
        public static final Wiring LOOPBACK_ONLY = new Wiring(Security.LOOPBACK_ONLY, UnaryOperator.identity());
        /** The secret both sides of an {@link #AUTHENTICATED} link hold. */
        public static final ClusterSecret SECRET = ClusterSecret.of("the test kit's cluster secret".getBytes(StandardCharsets.UTF_8));

        public Wiring
        {
            requireNonNull(security, "security is null");
            requireNonNull(descriptorOnTheWay, "descriptorOnTheWay is null");
        }

        public Wiring withDescriptorOnTheWay(UnaryOperator<byte[]> route)
        {
            return new Wiring(security, route);
        }

        TransferContext context(String hostId, Path folder, String backendId)
        {
            RecordingContext plain = new RecordingContext(hostId, folder);
            return switch (security) {
                case PLAIN -> plain;
                case AUTHENTICATED -> new ClusterContext(plain, SECRET, backendId);
                case LOOPBACK_ONLY -> new ClusterContext(plain, Optional.empty(), backendId);
            };
        }
    }

    private final List<String> events = new CopyOnWriteArrayList<>();
    private final TransferContext receiverContext;
    private final TransferContext senderContext;
    private final RecordingHooks hooks = new RecordingHooks(events);
    private final TransferBackend receiver;
    private final TransferBackend sender;
    private final Pool destination;
    private final Pool source;
    private final TransferPeer peer;
    private final TransferLink link;

    private Link(TransferBackendProvider provider, PluginSettings settings, Path folder, WriteGuard guard, boolean oneHost,
            TransferLink.Timeouts timeouts, Wiring wiring)
    {
        this(provider, settings, folder, guard, oneHost, timeouts, wiring, Pool.STRIDES, Pool.STRIDES, null);
    }

    /** @param slices what the sender's pages give the receiver's; null for region by region (the identity) */
    private Link(TransferBackendProvider provider, PluginSettings settings, Path folder, WriteGuard guard, boolean oneHost,
            TransferLink.Timeouts timeouts, Wiring wiring, long[] sourceStrides, long[] destinationStrides, SliceMap slices)
    {
        requireNonNull(provider, "provider is null");
        requireNonNull(settings, "settings is null");
        requireNonNull(guard, "guard is null");
        requireNonNull(timeouts, "timeouts is null");
        requireNonNull(wiring, "wiring is null");
        receiverContext = wiring.context(DECODE_HOST, folder, provider.id());
        senderContext = wiring.context(oneHost ? DECODE_HOST : PREFILL_HOST, folder, provider.id());
        receiver = provider.open(receiverContext, settings);
        TransferBackend openedSender = null;
        Pool openedDestination = null;
        Pool openedSource = null;
        TransferPeer connected = null;
        try {
            openedSender = provider.open(senderContext, settings);
            openedDestination = (receiver.wantsSharedFileMemory() ? Pool.mapped(folder.resolve("decode-pool"), Pool.PAGES, destinationStrides)
                    : Pool.anonymous(Pool.PAGES, destinationStrides)).fillCanary();
            openedSource = Pool.anonymous(Pool.PAGES, sourceStrides).fill(0);
            byte[] descriptor = receiver.expose(openedDestination.regions(), openedDestination.file(), guard);
            openedSender.registerSources(openedSource.regions());
            connected = slices == null ? openedSender.connect(DECODE_HOST, wiring.descriptorOnTheWay().apply(descriptor))
                    : openedSender.connect(DECODE_HOST, wiring.descriptorOnTheWay().apply(descriptor), slices);
            // the engine's default window: a PIPELINED backend is tested with plans in flight, as it runs
            link = start(provider.id(), DECODE_HOST, connected, openedSource.regions(), timeouts, hooks, WINDOW);
        }
        catch (RuntimeException | Error e) {
            // Half a link would leak threads, sockets and mappings into the next test.
            TransferPeer unstarted = connected;
            closeAll(unstarted == null ? null : unstarted::close, openedSender, receiver, openedSource, openedDestination);
            throw e;
        }
        peer = connected;
        sender = openedSender;
        destination = openedDestination;
        source = openedSource;
    }

    /**
     * A link whose pools have these regions (one page stride each) and whose plans move {@code slices} of each page: what a
     * prefill and a decode of different tensor-parallel layouts exchange, for a backend that declares HEAD_SLICES.
     */
    public static Link sliced(TransferBackendProvider provider, PluginSettings settings, Path folder, WriteGuard guard, boolean oneHost,
            Wiring wiring, long[] sourceStrides, long[] destinationStrides, SliceMap slices)
    {
        return new Link(provider, settings, folder, guard, oneHost, TIMEOUTS, wiring, sourceStrides, destinationStrides,
                requireNonNull(slices, "slices is null"));
    }

    /** A sender on another host than the receiver (what a backend that declares REMOTE must serve). */
    public static Link acrossHosts(TransferBackendProvider provider, PluginSettings settings, Path folder, WriteGuard guard)
    {
        return new Link(provider, settings, folder, guard, false, TIMEOUTS, Wiring.PLAIN);
    }

    /** A sender on the receiver's host (what a SAME_HOST-only backend serves). */
    public static Link onOneHost(TransferBackendProvider provider, PluginSettings settings, Path folder, WriteGuard guard)
    {
        return new Link(provider, settings, folder, guard, true, TIMEOUTS, Wiring.PLAIN);
    }

    /**
     * Both backends' shared files go to {@code folder}; the receiver admits writes as {@code guard} says.
     *
     * @param oneHost whether the sender's host id is the receiver's
     */
    public static Link open(TransferBackendProvider provider, PluginSettings settings, Path folder, WriteGuard guard, boolean oneHost)
    {
        return new Link(provider, settings, folder, guard, oneHost, TIMEOUTS, Wiring.PLAIN);
    }

    /** As {@link #open(TransferBackendProvider, PluginSettings, Path, WriteGuard, boolean)}, the core waiting as {@code timeouts} say. */
    public static Link open(TransferBackendProvider provider, PluginSettings settings, Path folder, WriteGuard guard, boolean oneHost,
            TransferLink.Timeouts timeouts)
    {
        return new Link(provider, settings, folder, guard, oneHost, timeouts, Wiring.PLAIN);
    }

    /** As {@link #open(TransferBackendProvider, PluginSettings, Path, WriteGuard, boolean, TransferLink.Timeouts)}, wired as {@code wiring} says. */
    public static Link open(TransferBackendProvider provider, PluginSettings settings, Path folder, WriteGuard guard, boolean oneHost,
            TransferLink.Timeouts timeouts, Wiring wiring)
    {
        return new Link(provider, settings, folder, guard, oneHost, timeouts, wiring);
    }

    /**
     * Drives {@code peer}, a connection of backend {@code backend} to the receiver {@code name} that reads from
     * {@code sources}, exactly as the engine does: the core's transfer link, the destination pages being the
     * receiver's as the peer read them from its descriptor. Closing the link closes the peer.
     */
    public static TransferLink start(String backend, String name, TransferPeer peer, List<MemoryRegion> sources, TransferLink.Timeouts timeouts,
            TransferHooks hooks)
    {
        return TransferLink.start(backend, name, peer, PageGeometry.of(sources), peer.receiverGeometry(), timeouts, hooks);
    }

    /** As {@link #start(String, String, TransferPeer, List, TransferLink.Timeouts, TransferHooks)}, with a window of plans in flight for a PIPELINED peer. */
    public static TransferLink start(String backend, String name, TransferPeer peer, List<MemoryRegion> sources, TransferLink.Timeouts timeouts,
            TransferHooks hooks, int window)
    {
        return TransferLink.start(backend, name, peer, PageGeometry.of(sources), peer.receiverGeometry(), timeouts, hooks, window);
    }

    /** {@link #start(String, String, TransferPeer, List, TransferLink.Timeouts, TransferHooks)} with the kit's timeouts and no hooks. */
    public static TransferLink start(String backend, TransferPeer peer, List<MemoryRegion> sources)
    {
        return start(backend, DECODE_HOST, peer, sources, TIMEOUTS, TransferHooks.NONE);
    }

    /** Posts {@code plan} with a new listener that logs its outcome to {@link #events()}. */
    public Outcome post(TransferPlan plan)
    {
        Outcome outcome = new Outcome(events);
        link.post(plan, outcome);
        return outcome;
    }

    /** The core's drain of {@code room} on this link. */
    public CompletableFuture<Void> drain(RoomKey room)
    {
        return link.drain(room);
    }

    /**
     * Closes the core's link as the engine does: fails what is queued, unblocks the peer and waits for the plan in
     * flight to end (so a second report would have come by now); the transfer thread then closes the peer.
     */
    public void closeLink()
    {
        link.close();
    }

    /** The sender's hooks and the outcomes of plans posted with {@link #post}, in order; a test may add its own. */
    public List<String> events()
    {
        return events;
    }

    /** The core's hooks on the sender's data path, as the link calls them through each plan's work. */
    public RecordingHooks hooks()
    {
        return hooks;
    }

    public TransferBackend sender()
    {
        return sender;
    }

    public TransferBackend receiver()
    {
        return receiver;
    }

    /** The context the receiver was opened with (a {@link ClusterContext} unless the wiring is plain). */
    public TransferContext receiverContext()
    {
        return receiverContext;
    }

    public TransferContext senderContext()
    {
        return senderContext;
    }

    public Pool source()
    {
        return source;
    }

    public Pool destination()
    {
        return destination;
    }

    /** The backend's connection, as {@link TransferBackend#connect} returned it; the link drives it. */
    public TransferPeer peer()
    {
        return peer;
    }

    /** The core's side of the connection. */
    public TransferLink transferLink()
    {
        return link;
    }

    @Override
    public void close()
    {
        closeAll(link, sender, receiver, source, destination);
    }

    private static void closeAll(AutoCloseable... resources)
    {
        RuntimeException failure = null;
        for (AutoCloseable resource : resources) {
            try {
                if (resource != null) {
                    resource.close();
                }
            }
            catch (Exception e) {
                if (failure == null) {
                    failure = new IllegalStateException("closing a link failed", e);
                }
                else {
                    failure.addSuppressed(e);
                }
            }
        }
        if (failure != null) {
            throw failure;
        }
    }
}
