package io.handoff.core.disagg.peer;

import io.handoff.core.disagg.control.Compatibility;
import io.handoff.core.disagg.control.ControlChannel;
import io.handoff.core.disagg.control.ControlMessage;
import io.handoff.core.disagg.control.ControlMessage.Hello;
import io.handoff.core.disagg.control.ControlMessage.HelloResult;
import io.handoff.core.disagg.control.ControlMessage.RegionsRegistered;
import io.handoff.core.disagg.control.ControlMessage.RegisterRegions;
import io.handoff.core.disagg.control.ControlMessage.RoomMessage;
import io.handoff.core.disagg.control.ControlMessage.RoomRequest;
import io.handoff.core.disagg.control.ControlSecurity;
import io.handoff.core.disagg.control.ControlServer;
import io.handoff.core.disagg.control.DeadlineClock;
import io.handoff.core.disagg.control.PeerProcess;
import io.handoff.core.disagg.control.ProcessCheck;
import io.handoff.core.disagg.room.EarlySend;
import io.handoff.core.transfer.PoolGrantRefused;
import io.handoff.core.transfer.TransferHooks;
import io.handoff.core.transfer.TransferLink;
import io.handoff.core.transfer.RankLayout;
import io.handoff.spi.transfer.PageGeometry;
import io.handoff.spi.transfer.SliceMap;
import io.handoff.spi.transfer.RoomKey;
import io.handoff.spi.transfer.TransferBackend;
import io.handoff.spi.transfer.TransferPeer;
import io.handoff.trace.PeerText;
import org.apache.logging.log4j.LogManager;
import org.apache.logging.log4j.Logger;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;

import static java.util.Objects.requireNonNull;

/**
 * A prefill's links to its decodes: the control server they connect to (handshake with the compatibility
 * check), one {@link TransferLink} per decode that registers its regions, with that connection's early-send
 * decision, the fencing of a link that broke the transfer protocol, and which connection each room's
 * decode talks on. Room messages and lost connections go to {@link Rooms}; this class drives no room.
 *
 * <p>A connection must say an accepted hello first, within the handshake timeout: anything else before it (a
 * region registration, a room message) gets the generic refusal and the connection closes, counted as a refused
 * peer. Until then no state is kept for it but its arrival time, and no detail of this prefill is sent.
 */
public final class PrefillToDecodeLinks
        implements AutoCloseable
{
    private static final Logger log = LogManager.getLogger(PrefillToDecodeLinks.class);

    /** What the links tell the rooms; called on control reader threads. */
    public interface Rooms
    {
        /** A decode sent a message about a room, on {@code channel}. */
        void received(ControlChannel channel, RoomMessage message);

        /** The connection closed; every room on it (see {@link #carries}) lost its peer. Its link is already gone. */
        void lost(ControlChannel channel, String reason);
    }

    private final DisaggregationConfig config;
    private final Compatibility compatibility;
    private final String backendId;
    private final TransferBackend backend;
    private final EarlySend earlySend;
    private final PageGeometry sources;
    private final RankLayout layout;
    // each admitted decode's tensor-parallel ranks, from its hello
    private final Map<ControlChannel, Integer> decodeRanks = new ConcurrentHashMap<>();
    private final TransferHooks hooks;
    private final TransferStats stats;
    private final Rooms rooms;
    private volatile String transport = "not connected yet";
    private final Map<RoomKey, ControlChannel> roomChannels = new ConcurrentHashMap<>();
    // the link each room's plans went to, kept until the room is forgotten: a drain must find it even after the
    // connection closed, since a plan posted on it may still be reading this prefill's source pages
    private final Map<RoomKey, TransferLink> roomLinks = new ConcurrentHashMap<>();
    private final Map<ControlChannel, TransferLink> peers = new ConcurrentHashMap<>();
    // whether each connection may send early: the engine's setting narrowed by what the connection reports
    private final Map<TransferLink, EarlySend> earlySendByLink = new ConcurrentHashMap<>();
    // connections that have not said an accepted hello yet, with when they opened
    private final Map<ControlChannel, Long> awaitingHello = new ConcurrentHashMap<>();
    private final ControlSecurity security;
    private final PeerProcess self;
    private final ProcessCheck processes;
    private final DeadlineClock clock;
    private final ControlServer server;

    /** Starts listening at once: {@code rooms} may hear from a decode before this constructor returns. */
    public PrefillToDecodeLinks(DisaggregationConfig config, Compatibility compatibility, String backendId, TransferBackend backend, EarlySend earlySend,
            PageGeometry sources, TransferHooks hooks, DeadlineClock clock, TransferStats stats, Rooms rooms)
            throws IOException
    {
        this(config, compatibility, backendId, backend, earlySend, sources, hooks, clock, stats, ControlSecurity.loopbackOnly(), rooms);
    }

    /** Starts listening at once: {@code rooms} may hear from a decode before this constructor returns. */
    public PrefillToDecodeLinks(DisaggregationConfig config, Compatibility compatibility, String backendId, TransferBackend backend, EarlySend earlySend,
            PageGeometry sources, TransferHooks hooks, DeadlineClock clock, TransferStats stats, ControlSecurity security, Rooms rooms)
            throws IOException
    {
        this(config, compatibility, backendId, backend, earlySend, sources, hooks, clock, stats, security, PeerProcess.current(""),
                ProcessCheck.SYSTEM, rooms);
    }

    /**
     * Starts listening at once: {@code rooms} may hear from a decode before this constructor returns. {@code self} is how
     * this prefill answers a hello; {@code processes} answers a decode's question whether a process of this host still runs.
     */
    public PrefillToDecodeLinks(DisaggregationConfig config, Compatibility compatibility, String backendId, TransferBackend backend, EarlySend earlySend,
            PageGeometry sources, TransferHooks hooks, DeadlineClock clock, TransferStats stats, ControlSecurity security, PeerProcess self,
            ProcessCheck processes, Rooms rooms)
            throws IOException
    {
        this(config, compatibility, backendId, backend, earlySend, sources, null, hooks, clock, stats, security, self, processes, rooms);
    }

    /**
     * The same with the layout of this prefill's regions over its tensor-parallel ranks, by which it plans what a decode of
     * another layout receives (null: one rank's regions, which pair with single-rank decodes only).
     */
    public PrefillToDecodeLinks(DisaggregationConfig config, Compatibility compatibility, String backendId, TransferBackend backend, EarlySend earlySend,
            PageGeometry sources, RankLayout layout, TransferHooks hooks, DeadlineClock clock, TransferStats stats, ControlSecurity security,
            PeerProcess self, ProcessCheck processes, Rooms rooms)
            throws IOException
    {
        this.layout = layout;
        this.self = requireNonNull(self, "self is null");
        this.processes = requireNonNull(processes, "processes is null");
        this.security = requireNonNull(security, "security is null");
        this.clock = requireNonNull(clock, "clock is null");
        this.config = requireNonNull(config, "config is null");
        this.compatibility = requireNonNull(compatibility, "compatibility is null");
        this.backendId = requireNonNull(backendId, "backendId is null");
        this.backend = requireNonNull(backend, "backend is null");
        this.earlySend = requireNonNull(earlySend, "earlySend is null");
        this.sources = requireNonNull(sources, "sources is null");
        this.hooks = requireNonNull(hooks, "hooks is null");
        this.stats = requireNonNull(stats, "stats is null");
        this.rooms = requireNonNull(rooms, "rooms is null");
        this.server = ControlServer.start(new InetSocketAddress(config.controlHost(), config.controlPort()), config.liveness(), clock,
                security, new ControlChannel.Listener()
                {
                    @Override
                    public void opened(ControlChannel channel)
                    {
                        onOpened(channel);
                    }

                    @Override
                    public void received(ControlChannel channel, ControlMessage message)
                    {
                        onMessage(channel, message);
                    }

                    @Override
                    public void closed(ControlChannel channel, String reason)
                    {
                        onClosed(channel, reason);
                    }
                });
    }

    /** Where decodes connect: {@code host:port}. */
    public String controlAddress()
    {
        return config.controlHost() + ":" + server.port();
    }

    /** The transport of the most recent peer connection. */
    public String transport()
    {
        return transport;
    }

    /** Sends to the decode of {@code room}; false when it has no open control connection. */
    public boolean send(RoomKey room, ControlMessage message)
    {
        ControlChannel channel = roomChannels.get(room);
        return channel != null && channel.send(message);
    }

    /**
     * The transfer link to the decode of {@code room}, once that decode registered its regions; after its connection
     * closed, still the link the room used (closed: it refuses new plans, and its drain waits for those in flight).
     */
    public Optional<TransferLink> link(RoomKey room)
    {
        ControlChannel channel = roomChannels.get(room);
        TransferLink current = channel == null ? null : peers.get(channel);
        if (current == null) {
            return Optional.ofNullable(roomLinks.get(room));
        }
        TransferLink used = roomLinks.putIfAbsent(room, current);
        return Optional.of(used != null ? used : current);
    }

    /**
     * Whether the link to the decode of {@code room} may be handed a plan before its forward is done: it reports what
     * early send needs (FORWARD_SYNC or STAGING) itself. False while the room has no link.
     */
    public boolean sendsEarly(RoomKey room)
    {
        EarlySend decided = link(room).map(earlySendByLink::get).orElse(null);
        return decided != null && decided.enabled();
    }

    /** Whether {@code room}'s decode talks on {@code channel}. */
    public boolean carries(ControlChannel channel, RoomKey room)
    {
        return roomChannels.get(room) == channel;
    }

    /** The room ended: forget its connection. */
    public void forget(RoomKey room)
    {
        roomChannels.remove(room);
        roomLinks.remove(room);
    }

    /** Heartbeats and liveness of every connection, and the hello deadline and caps of new ones ({@link ControlServer#tick}). */
    public void tick()
    {
        server.tick();
    }

    /** Connections accepted that have not said an accepted hello yet. */
    public int awaitingHello()
    {
        return awaitingHello.size();
    }

    // the control server capped the connections without a hello and drops this one unless it is admitted in time
    private void onOpened(ControlChannel channel)
    {
        awaitingHello.put(channel, clock.nanos());
    }

    /** The generic refusal, counted: nothing of this prefill is told to a peer that did not say an accepted hello. */
    private void refuse(ControlChannel channel, String why)
    {
        if (awaitingHello.remove(channel) == null && !channel.isOpen()) {
            return;
        }
        if (channel.countRefusal()) {
            security.failures().refused(ControlServer.LISTENER, channel.peerHost(), "protocol", why);
        }
        channel.send(HelloResult.refused(ControlSecurity.GENERIC_REFUSAL));
        channel.close("refused: " + why);
    }

    private void onMessage(ControlChannel channel, ControlMessage message)
    {
        if (awaitingHello.containsKey(channel) && !(message instanceof Hello)) {
            refuse(channel, "sent " + PeerText.clean(message.toString(), 120) + " before a hello");
            return;
        }
        switch (message) {
            case Hello hello when !awaitingHello.containsKey(channel) -> refuse(channel, "a second hello on one connection");
            case Hello hello -> {
                HelloResult judged = compatibility.judge(hello, ControlMessage.Role.DECODE);
                if (!judged.accepted()) {
                    // the peer proved the cluster secret (or, without one, is a local process): it may hear what differs
                    awaitingHello.remove(channel);
                    channel.send(judged);
                    log.warn("refused decode {}: {}", channel.peer(), PeerText.clean(judged.reason(), 2000));
                    channel.close("handshake refused: " + judged.reason());
                    return;
                }
                awaitingHello.remove(channel);
                decodeRanks.put(channel, hello.compatibility().tensorRanks());
                channel.admit();
                // only an accepted peer learns who answers: the same-host fencing needs this process's host id and pid
                channel.send(judged.from(self));
            }
            case ControlMessage.ProcessQuery query -> channel.send(attest(channel, query));
            case RegisterRegions register -> channel.send(register(channel, register));
            case RoomMessage roomMessage -> {
                if (roomMessage instanceof RoomRequest) {
                    roomChannels.put(roomMessage.room(), channel);
                }
                else if (roomMessage instanceof ControlMessage.DrainRequest) {
                    // the ack goes back where it was asked for: a decode whose connection for this room closed asks again on a new one
                    roomChannels.put(roomMessage.room(), channel);
                }
                rooms.received(channel, roomMessage);
            }
            case ControlMessage.Heartbeat ignored -> { }
            default -> {
                stats.ignored();
                log.debug("prefill ignores {} from {}", message, channel.peer());
            }
        }
    }

    /**
     * Answers a decode (authenticated: it said an accepted hello) that asks whether a process of this host still runs: the
     * decode takes a "gone" as proof that a lost prefill's writes stopped, so it is said only when certain.
     */
    private ControlMessage.ProcessAttestation attest(ControlChannel channel, ControlMessage.ProcessQuery query)
    {
        boolean gone = query.pid() != self.pid() && !processes.mayRun(query.pid(), query.startMillis());
        log.info("decode {} asked whether process {} (started at {} ms) still runs on this host: {}", channel.peer(), query.pid(),
                query.startMillis(), gone ? "it does not" : "it may");
        return new ControlMessage.ProcessAttestation(query.pid(), query.startMillis(), gone);
    }

    /** A connection refused before a link took it over: nobody else will close it. */
    private void closeRefused(TransferPeer peer)
    {
        try {
            peer.close();
        }
        catch (RuntimeException e) {
            log.warn("closing a refused {} connection failed: {}", backendId, e.getMessage());
        }
    }

    private RegionsRegistered register(ControlChannel channel, RegisterRegions register)
    {
        if (!register.backendId().equals(backendId)) {
            return RegionsRegistered.refused("this prefill transfers with '" + backendId + "' but the decode registered regions for '"
                    + register.backendId() + "': set handoff.disaggregation.transfer-backend the same on both");
        }
        TransferLink link;
        EarlySend linkEarlySend;
        TransferPeer peer = null;
        int receiverRanks = decodeRanks.getOrDefault(channel, 1);
        int senderRanks = layout == null ? 1 : layout.ranks();
        try {
            if (layout == null || layout.ranks() == receiverRanks) {
                // the same layout: every region into the region of the same index
                if (receiverRanks != senderRanks) {
                    throw new IllegalArgumentException("the decode runs " + receiverRanks + " tensor-parallel ranks and this prefill one, "
                            + "whose regions carry no layout to plan head slices by");
                }
                peer = backend.connect(PeerProcess.localHostId(), register.descriptor());
                sources.checkReceiver(backendId, peer.receiverGeometry());
            }
            else {
                SliceMap slices = layout.slicesTo(layout.withRanks(receiverRanks));
                try {
                    peer = backend.connect(PeerProcess.localHostId(), register.descriptor(), slices);
                }
                catch (UnsupportedOperationException e) {
                    throw new IllegalArgumentException("this prefill runs " + senderRanks + " tensor-parallel rank(s) and the decode " + receiverRanks
                            + ": " + backendId + " " + e.getMessage() + "; use a backend that does, or the same tensor-parallel size on both sides", e);
                }
                slices.check(backendId, sources, peer.receiverGeometry());
            }
            link = TransferLink.start(backendId, channel.peer(), peer, sources, peer.receiverGeometry(), config.linkTimeouts(), hooks,
                    config.transferWindow());
            // from what the link enforces: the capabilities it read from the connection once
            linkEarlySend = earlySend.forConnection(backendId, link.capabilities());
        }
        catch (RuntimeException e) {
            if (peer != null) {
                closeRefused(peer);
            }
            if (grantRefused(e)) {
                // a descriptor naming memory this prefill will not map is an attack or a misconfiguration: counted like one
                security.failures().refused("transfer", channel.peerHost(), "grant", e.getMessage());
            }
            log.warn("cannot connect the {} backend to decode {}: {}", backendId, channel.peer(), PeerText.clean(e.getMessage(), 2000));
            return RegionsRegistered.refused("the prefill cannot reach the decode's memory with " + backendId + ": " + e.getMessage());
        }
        link.onFenced(reason -> fenced(channel, link, reason));
        earlySendByLink.put(link, linkEarlySend);
        TransferLink previous = peers.put(channel, link);
        if (previous != null) {
            earlySendByLink.remove(previous);
            previous.close();
        }
        transport = link.transport();
        log.info("decode {} registered its KV regions; transport {} with {}; early send {} ({})", channel.peer(), link.transport(),
                link.capabilities(), linkEarlySend.enabled() ? "enabled" : "disabled", linkEarlySend.reason());
        return new RegionsRegistered(true, link.transport(), link.capabilities(), "");
    }

    private static boolean grantRefused(Throwable failure)
    {
        for (Throwable cause = failure; cause != null; cause = cause.getCause()) {
            if (cause instanceof PoolGrantRefused) {
                return true;
            }
        }
        return false;
    }

    /**
     * The connection broke the transfer protocol: its rooms fail, and the control channel to that decode closes, so
     * the decode fails its side and keeps their pages until it has proof (the link proves no drain any more).
     */
    private void fenced(ControlChannel channel, TransferLink link, String reason)
    {
        if (peers.get(channel) == link) {
            channel.close(backendId + " connection fenced: " + reason);
        }
    }

    private void onClosed(ControlChannel channel, String reason)
    {
        decodeRanks.remove(channel);
        if (awaitingHello.remove(channel) != null) {
            // it never said hello: no room of it exists, nothing to tell anyone
            return;
        }
        TransferLink peer = peers.remove(channel);
        if (peer != null) {
            earlySendByLink.remove(peer);
        }
        // the rooms hear of it while they still map to this channel, but with its link gone (a drain then has nothing to wait for)
        rooms.lost(channel, reason);
        roomChannels.values().removeIf(c -> c == channel);
        if (peer != null) {
            peer.close();
        }
    }

    @Override
    public void close()
    {
        server.close();
        peers.values().forEach(TransferLink::close);
        peers.clear();
        backend.close();
    }
}
