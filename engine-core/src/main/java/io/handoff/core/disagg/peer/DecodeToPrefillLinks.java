package io.handoff.core.disagg.peer;

import io.handoff.core.disagg.control.Compatibility;
import io.handoff.core.disagg.control.ControlChannel;
import io.handoff.core.disagg.control.ControlMessage;
import io.handoff.core.disagg.control.ControlMessage.HelloResult;
import io.handoff.core.disagg.control.ControlMessage.RegionsRegistered;
import io.handoff.core.disagg.control.ControlMessage.RoomClaim;
import io.handoff.core.disagg.control.ControlMessage.RoomMessage;
import io.handoff.core.disagg.control.ControlSecurity;
import io.handoff.core.disagg.control.DeadlineClock;
import io.handoff.core.disagg.control.PeerProcess;
import io.handoff.core.disagg.room.ReleasePolicy;
import io.handoff.core.security.AuthenticationException;
import io.handoff.core.security.LocalPeer;
import io.handoff.spi.transfer.MemoryRegion;
import io.handoff.spi.transfer.TransferBackend;
import io.handoff.spi.transfer.WriteGuard;
import io.handoff.trace.FailureCause;
import io.handoff.trace.PeerText;
import org.apache.logging.log4j.LogManager;
import org.apache.logging.log4j.Logger;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;

import static java.util.Objects.requireNonNull;

/**
 * A decode's links to its prefills, one per bootstrap (control) address: connecting, the handshake with
 * the compatibility check, registering this decode's regions (exposed once), and the link's failure,
 * after which the next request for that prefill connects afresh. Rooms join a link and hear through
 * {@link Rooms} when it is ready or lost; this class drives no room. {@code R} is the caller's room.
 *
 * <p>With a cluster secret the connection authenticates before the hello; a failure fails the link with a message
 * that says the cluster secrets must match. Nothing but a hello answer is taken from a prefill before it accepted
 * this decode's hello.
 */
public final class DecodeToPrefillLinks<R>
        implements AutoCloseable
{
    private static final Logger log = LogManager.getLogger(DecodeToPrefillLinks.class);
    private static final PeerProcess UNKNOWN = new PeerProcess("", -1, ControlMessage.HelloResult.UNKNOWN_START, "");
    /** Claims a connecting link holds for the hello answer: four times the default handoff.scheduler.max-queued-requests. */
    static final int MAX_UNSENT_CLAIMS = 4096;

    /** What a link tells its rooms. */
    public interface Rooms<R>
    {
        /** A prefill sent a message about a room over {@code from} (control reader thread). */
        void received(Link<R> from, RoomMessage message);

        /** The link is up: the room may send its pages under {@code policy}. */
        void ready(R room, ReleasePolicy policy);

        /** The link failed or was never up: the room lost its peer, for {@code cause}. */
        void lost(R room, FailureCause cause, String reason);

        /** The prefill can no longer write into this memory. */
        void fenced(R room, String how);

        /** The rooms that joined {@code link} and are still open, in a stable order. */
        List<R> on(Link<R> link);

        /** {@code link} is up (after its waiting rooms heard {@link #ready}): rooms of an earlier link may ask it for their drain. */
        default void linkReady(Link<R> link)
        {
        }

        /** The prefill on {@code from} answered a {@link ControlMessage.ProcessQuery} (only after it accepted this decode's hello). */
        default void attested(Link<R> from, ControlMessage.ProcessAttestation attestation)
        {
        }

        /** {@code link} failed (after its rooms heard {@link #lost}). */
        default void linkFailed(Link<R> link)
        {
        }
    }

    private enum LinkState
    {
        CONNECTING,
        READY,
        FAILED
    }

    /** One prefill, by its bootstrap (control) address. */
    public static final class Link<R>
    {
        private final String address;
        private final List<R> pending = new ArrayList<>();
        private LinkState state = LinkState.CONNECTING;
        private volatile ControlChannel channel;
        private volatile boolean greeted;
        // claims sent before the prefill accepted this decode's hello: they go out right after it did
        private final List<ControlMessage.RoomMessage> unsentClaims = new ArrayList<>();
        private ReleasePolicy policy;
        private String failure;
        private FailureCause failureCause;
        /** The prefill process, when it runs on this host: its exit fences it. */
        private Optional<ProcessHandle> sameHostProcess = Optional.empty();
        /** The prefill process as its hello answer named it; unknown until accepted. */
        private volatile PeerProcess peer = UNKNOWN;

        private Link(String address)
        {
            this.address = address;
        }

        public String address()
        {
            return address;
        }

        /**
         * The prefill process this link reached, {@code hostId/pid}; empty until the hello was accepted. Another process
         * at the same address (a restarted prefill) has another one, and cannot speak for its predecessor's writes.
         */
        public String process()
        {
            return peer.known() ? peer.hostId() + "/" + peer.pid() : "";
        }

        /** The prefill process this link reached (host id, pid, start time, incarnation); not {@link PeerProcess#known} until accepted. */
        public PeerProcess peer()
        {
            return peer;
        }

        /** Whether the link failed (its connection is gone or was refused). */
        public synchronized boolean failed()
        {
            return state == LinkState.FAILED;
        }

        /**
         * Whether {@code other} reached the same prefill process as this link, at the same address: a later connection to
         * a prefill that did not restart. False while either has no accepted hello.
         */
        public boolean sameProcessAs(Link<?> other)
        {
            return !process().isEmpty() && address.equals(other.address) && process().equals(other.process());
        }

        /** Sends to the prefill; false when the control connection is not open (yet or any more). */
        public boolean send(ControlMessage message)
        {
            ControlChannel current = channel;
            return current != null && current.send(message);
        }
    }

    private final DisaggregationConfig config;
    private final Compatibility compatibility;
    private final String backendId;
    private final TransferBackend backend;
    private final List<MemoryRegion> regions;
    private final Path sharedFile;
    private final WriteGuard guard;
    private final DeadlineClock clock;
    private final TransferStats stats;
    private final Rooms<R> rooms;
    private final ControlSecurity security;
    private volatile String transport = "not connected yet";
    private final Map<String, Link<R>> links = new ConcurrentHashMap<>();
    private final ExecutorService connector = Executors.newVirtualThreadPerTaskExecutor();
    private volatile byte[] descriptor;

    public DecodeToPrefillLinks(DisaggregationConfig config, Compatibility compatibility, String backendId, TransferBackend backend,
            List<MemoryRegion> regions, Path sharedFile, WriteGuard guard, DeadlineClock clock, TransferStats stats, Rooms<R> rooms)
    {
        this(config, compatibility, backendId, backend, regions, sharedFile, guard, clock, stats, ControlSecurity.loopbackOnly(), rooms);
    }

    public DecodeToPrefillLinks(DisaggregationConfig config, Compatibility compatibility, String backendId, TransferBackend backend,
            List<MemoryRegion> regions, Path sharedFile, WriteGuard guard, DeadlineClock clock, TransferStats stats, ControlSecurity security,
            Rooms<R> rooms)
    {
        this.security = requireNonNull(security, "security is null");
        this.config = requireNonNull(config, "config is null");
        this.compatibility = requireNonNull(compatibility, "compatibility is null");
        this.backendId = requireNonNull(backendId, "backendId is null");
        this.backend = requireNonNull(backend, "backend is null");
        this.regions = List.copyOf(regions);
        this.sharedFile = sharedFile;
        this.guard = requireNonNull(guard, "guard is null");
        this.clock = requireNonNull(clock, "clock is null");
        this.stats = requireNonNull(stats, "stats is null");
        this.rooms = requireNonNull(rooms, "rooms is null");
    }

    /** The transport of the most recent peer connection. */
    public String transport()
    {
        return transport;
    }

    /** The link to the prefill at {@code address}, connecting when there is none (or the last one failed). */
    public Link<R> to(String address)
    {
        return links.computeIfAbsent(address, this::connect);
    }

    /**
     * Joins {@code room} to its link: it hears {@link Rooms#ready} or {@link Rooms#lost} now, under the
     * link's lock, when the link already is up or failed, and later otherwise.
     */
    public void join(Link<R> link, R room)
    {
        synchronized (link) {
            switch (link.state) {
                case READY -> rooms.ready(room, link.policy);
                case CONNECTING -> link.pending.add(room);
                case FAILED -> rooms.lost(room, link.failureCause, link.failure);
            }
        }
    }

    /**
     * Sends {@code claim} (a {@link RoomClaim}, or the {@link ControlMessage.RoomFailed} of a claimed room that ended before
     * admission) on {@code link}: now when the prefill accepted this decode's hello, right after it does while the link
     * connects (a claim before the hello would be refused), in order, and not at all when the link failed (the room's
     * admission then connects afresh). At most {@link #MAX_UNSENT_CLAIMS} wait per link; beyond that a claim is dropped,
     * and its room's page list still claims it at admission (or the prefill's deadline ends it).
     */
    public void claim(Link<R> link, ControlMessage.RoomMessage claim)
    {
        synchronized (link) {
            if (!link.greeted && link.state == LinkState.CONNECTING) {
                if (link.unsentClaims.size() < MAX_UNSENT_CLAIMS) {
                    link.unsentClaims.add(claim);
                }
                else {
                    stats.ignored();
                }
                return;
            }
        }
        link.send(claim);
    }

    /** Heartbeats and liveness of every open connection. */
    public void tick()
    {
        for (Link<R> link : links.values()) {
            ControlChannel channel = link.channel;
            if (channel != null && channel.isOpen()) {
                channel.tick();
            }
        }
    }

    private Link<R> connect(String address)
    {
        Link<R> link = new Link<>(address);
        connector.execute(() -> open(link));
        return link;
    }

    private void open(Link<R> link)
    {
        try {
            InetSocketAddress address = parse(link.address);
            ControlChannel.connect(address, config.connectTimeout(), config.liveness(), clock, security, new ControlChannel.Listener()
            {
                @Override
                public void opened(ControlChannel channel)
                {
                    link.channel = channel;
                    channel.send(new ControlMessage.Hello(ControlMessage.PROTOCOL_VERSION, PeerProcess.localHostId(),
                            ControlMessage.Role.DECODE, compatibility));
                }

                @Override
                public void received(ControlChannel channel, ControlMessage message)
                {
                    onMessage(link, channel, message);
                }

                @Override
                public void closed(ControlChannel channel, String reason)
                {
                    linkFailed(link, FailureCause.PEER_LOST, "the control connection to prefill " + link.address + " closed: " + reason);
                }
            });
        }
        catch (AuthenticationException e) {
            linkFailed(link, FailureCause.HANDSHAKE_REFUSED, "cannot connect to prefill " + link.address + ": cluster authentication failed: "
                    + e.getMessage());
        }
        catch (IOException | RuntimeException e) {
            linkFailed(link, FailureCause.PEER_LOST, "cannot connect to prefill " + link.address + ": " + e.getMessage());
        }
    }

    private static InetSocketAddress parse(String address)
    {
        int colon = address.lastIndexOf(':');
        if (colon <= 0) {
            throw new IllegalArgumentException("bootstrap address '" + address + "' is not host:port");
        }
        return new InetSocketAddress(address.substring(0, colon), Integer.parseInt(address.substring(colon + 1)));
    }

    private void onMessage(Link<R> link, ControlChannel channel, ControlMessage message)
    {
        if (!link.greeted && !(message instanceof HelloResult)) {
            stats.ignored();
            String why = "prefill " + link.address + " sent " + PeerText.clean(message.toString(), 120) + " before it answered this decode's hello";
            refused(link, channel, why);
            return;
        }
        switch (message) {
            case HelloResult result when link.greeted -> {
                refused(link, channel, "prefill " + link.address + " answered a hello twice");
            }
            case HelloResult result when result.accepted() -> {
                synchronized (link) {
                    link.greeted = true;
                }
                link.peer = result.process();
                if (result.hostId().equals(PeerProcess.localHostId()) && result.pid() > 0
                        && result.pid() != ProcessHandle.current().pid()) {
                    // its exit will be taken as proof that its writes stopped (I2): only if it really is the peer
                    if (LocalPeer.holdsConnection(result.pid(), channel.localAddress(), channel.remoteAddress())) {
                        link.sameHostProcess = ProcessHandle.of(result.pid());
                    }
                    else {
                        log.warn("prefill {} says it is process {}, which does not hold the other end of this connection: its exit "
                                + "will not be taken as proof that the prefill stopped writing", link.address, result.pid());
                    }
                }
                channel.send(new ControlMessage.RegisterRegions(backendId, descriptor()));
                List<ControlMessage.RoomMessage> claims;
                synchronized (link) {
                    claims = List.copyOf(link.unsentClaims);
                    link.unsentClaims.clear();
                }
                claims.forEach(channel::send);
            }
            case HelloResult result -> {
                log.error("prefill {} refused this decode: {}", link.address, PeerText.clean(result.reason(), 2000));
                refused(link, channel, "handshake refused: " + result.reason());
            }
            case RegionsRegistered registered when registered.accepted() -> ready(link, registered);
            case RegionsRegistered registered -> {
                refused(link, channel, "regions refused: " + registered.reason());
            }
            case RoomMessage roomMessage -> rooms.received(link, roomMessage);
            case ControlMessage.ProcessAttestation attestation -> rooms.attested(link, attestation);
            case ControlMessage.Heartbeat ignored -> { }
            default -> {
                stats.ignored();
                log.debug("decode ignores {} from {}", message, link.address);
            }
        }
    }

    private void ready(Link<R> link, RegionsRegistered registered)
    {
        ReleasePolicy policy = ReleasePolicy.from(registered.capabilities());
        transport = registered.transport();
        log.info("prefill {} connected over {} ({}); failed rooms are released when {}", link.address, registered.transport(),
                registered.capabilities(), policy.reason());
        List<R> ready;
        synchronized (link) {
            link.policy = policy;
            link.state = LinkState.READY;
            ready = List.copyOf(link.pending);
            link.pending.clear();
        }
        for (R room : ready) {
            rooms.ready(room, policy);
        }
        rooms.linkReady(link);
    }

    private synchronized byte[] descriptor()
    {
        if (descriptor == null) {
            descriptor = backend.expose(regions, sharedFile, guard);
        }
        return descriptor;
    }

    /**
     * The handshake failed: the link fails with {@link FailureCause#HANDSHAKE_REFUSED} before its connection closes, so
     * its rooms hear the refusal and not the closed connection it causes.
     */
    private void refused(Link<R> link, ControlChannel channel, String why)
    {
        linkFailed(link, FailureCause.HANDSHAKE_REFUSED, "the control connection to prefill " + link.address + " closed: " + why);
        channel.close(why);
    }

    /**
     * Fences the prefill at {@code address}, which is suspect: its rooms fail with {@link FailureCause#DRAIN_DEADLINE}
     * and its control connection closes, so it is sent nothing more; the next request for it connects afresh. Its
     * process's exit still fences the rooms (see {@link #linkFailed}). Nothing to do when its link already failed.
     */
    public void fence(String address, String reason)
    {
        Link<R> link = links.get(address);
        if (link == null) {
            return;
        }
        linkFailed(link, FailureCause.DRAIN_DEADLINE, reason);
        ControlChannel channel = link.channel;
        if (channel != null) {
            channel.close(reason);
        }
    }

    private void linkFailed(Link<R> link, FailureCause cause, String reason)
    {
        List<R> affected = new ArrayList<>();
        synchronized (link) {
            if (link.state == LinkState.FAILED) {
                return;
            }
            link.state = LinkState.FAILED;
            link.failure = reason;
            link.failureCause = cause;
            affected.addAll(link.pending);
            link.pending.clear();
        }
        // the next request for this prefill connects afresh (a restarted prefill has a new control port)
        links.remove(link.address, link);
        for (R room : rooms.on(link)) {
            if (!affected.contains(room)) {
                affected.add(room);
            }
        }
        log.warn("{}; failing {} rooms", PeerText.clean(reason, 2000), affected.size());
        for (R room : affected) {
            rooms.lost(room, cause, reason);
        }
        rooms.linkFailed(link);
        // A lost connection alone proves nothing about one-sided writes still in flight; the prefill's exit does.
        link.sameHostProcess.ifPresent(process -> process.onExit().thenRun(() -> {
            for (R room : affected) {
                rooms.fenced(room, "prefill process " + process.pid() + " exited");
            }
        }));
    }

    @Override
    public void close()
    {
        connector.shutdownNow();
        for (Link<R> link : links.values()) {
            if (link.channel != null) {
                link.channel.close("the decode shut down");
            }
        }
        backend.close();
    }
}
