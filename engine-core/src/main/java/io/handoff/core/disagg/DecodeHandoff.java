package io.handoff.core.disagg;

import io.handoff.core.disagg.ControlMessage.HelloResult;
import io.handoff.core.disagg.ControlMessage.RegionsRegistered;
import io.handoff.core.disagg.ControlMessage.RoomMessage;
import io.handoff.core.kv.ReleaseProof;
import io.handoff.core.scheduler.FinishReason;
import io.handoff.core.scheduler.HandoffRequest;
import io.handoff.core.scheduler.KvHandoff;
import io.handoff.core.scheduler.Scheduler;
import io.handoff.spi.transfer.MemoryRegion;
import io.handoff.spi.transfer.RoomKey;
import io.handoff.spi.transfer.TransferBackend;
import org.apache.logging.log4j.LogManager;
import org.apache.logging.log4j.Logger;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;

import static java.util.Objects.requireNonNull;

/**
 * The decode side of disaggregation: one control connection per prefill (handshake with the
 * compatibility check, regions registered once), one {@link ReceiverRoom} per request. A room's prompt
 * pages were marked RECEIVING by the scheduler at admission; a valid aux record hands the request back
 * to the scheduler with its first token, a failure fails it, and the room's release policy decides when
 * its pages may be reused (invariant I2).
 */
public final class DecodeHandoff
        implements KvHandoff, AutoCloseable
{
    private static final Logger log = LogManager.getLogger(DecodeHandoff.class);

    private enum LinkState
    {
        CONNECTING,
        READY,
        FAILED
    }

    /** One prefill, by its bootstrap (control) address. */
    private final class Link
    {
        final String address;
        final List<Room> pending = new ArrayList<>();
        LinkState state = LinkState.CONNECTING;
        ControlChannel channel;
        ReleasePolicy policy;
        String failure;
        /** The prefill process, when it runs on this host: its exit fences it. */
        Optional<ProcessHandle> sameHostProcess = Optional.empty();

        Link(String address)
        {
            this.address = address;
        }
    }

    /** A room and what its request's release depends on. */
    private static final class Room
    {
        final ReceiverRoom machine;
        final String rid;
        final Link link;
        final CompletableFuture<ReleaseProof> proof = new CompletableFuture<>();
        Release release;
        boolean schedulerKnowsOutcome;

        Room(ReceiverRoom machine, String rid, Link link)
        {
            this.machine = machine;
            this.rid = rid;
            this.link = link;
        }
    }

    private final DisaggregationConfig config;
    private final Compatibility compatibility;
    private final String backendId;
    private final TransferBackend backend;
    private final List<MemoryRegion> regions;
    private final Path sharedFile;
    private final PageChecksums checksums;
    private final DeadlineClock clock = DeadlineClock.system();
    private final TransferStats stats = new TransferStats();
    private volatile String transport = "not connected yet";
    private final RoomTable<Room> rooms = new RoomTable<>(1024, 4096);
    private final RoomTable<ReceiverRoom> machines = new RoomTable<>(0, 4096);
    private final Map<String, Link> links = new ConcurrentHashMap<>();
    private final ExecutorService connector = Executors.newVirtualThreadPerTaskExecutor();
    private final ScheduledExecutorService ticker;
    private volatile byte[] descriptor;
    private volatile Scheduler scheduler;

    public DecodeHandoff(DisaggregationConfig config, Compatibility compatibility, String backendId, TransferBackend backend,
            List<MemoryRegion> regions, Path sharedFile, PageChecksums checksums)
    {
        this.config = requireNonNull(config, "config is null");
        this.compatibility = requireNonNull(compatibility, "compatibility is null");
        this.backendId = requireNonNull(backendId, "backendId is null");
        this.backend = requireNonNull(backend, "backend is null");
        this.regions = List.copyOf(regions);
        this.sharedFile = sharedFile;
        this.checksums = requireNonNull(checksums, "checksums is null");
        this.ticker = Executors.newSingleThreadScheduledExecutor(Thread.ofPlatform().name("handoff-decode-ticks").daemon().factory());
        long period = Math.max(50, config.liveness().heartbeatInterval().toMillis() / 2);
        ticker.scheduleAtFixedRate(this::tick, period, period, TimeUnit.MILLISECONDS);
    }

    public void attach(Scheduler scheduler)
    {
        this.scheduler = requireNonNull(scheduler, "scheduler is null");
    }

    public TransferStats stats()
    {
        return stats;
    }

    /** The transport of the most recent peer connection. */
    public String transport()
    {
        return transport;
    }

    public long droppedMessages()
    {
        return rooms.dropped();
    }

    // ---------------------------------------------------------------------------------------------
    // Scheduler hooks (scheduler thread).

    @Override
    public boolean receivesPrompt(HandoffRequest request)
    {
        return request.ticket().isPresent();
    }

    @Override
    public void admitted(HandoffRequest request)
    {
        if (request.ticket().isEmpty()) {
            return;
        }
        RoomKey key = request.ticket().get().room();
        Link link = links.computeIfAbsent(request.ticket().get().bootstrap(), this::connect);
        int[] promptPages = Arrays.copyOf(request.pages(), request.promptPages());
        ReceiverRoom machine = new ReceiverRoom(key, request.rid(), request.promptIds().length, promptPages, link.address,
                config.deadlines(), config.checksums() ? Optional.of(checksums::checksum) : Optional.empty(), clock.nanos());
        Room room = new Room(machine, request.rid(), link);
        machine.onWritesSettled(() -> drive(room, new RoomEvent.WritesSettled()));
        List<RoomMessage> early;
        try {
            early = rooms.register(key, room);
            machines.register(key, machine);
        }
        catch (IllegalStateException e) {
            scheduler.promptKvFailed(request.rid(), "room " + key + " cannot be opened: " + e.getMessage());
            return;
        }
        for (RoomMessage message : early) {
            drive(room, new RoomEvent.Received(message));
        }
        synchronized (link) {
            switch (link.state) {
                case READY -> drive(room, new RoomEvent.PeerReady(link.policy));
                case CONNECTING -> link.pending.add(room);
                case FAILED -> drive(room, new RoomEvent.PeerLost(link.failure));
            }
        }
    }

    @Override
    public Release finished(HandoffRequest request, FinishReason reason, String error)
    {
        Optional<Room> found = request.ticket().flatMap(ticket -> rooms.get(ticket.room()));
        if (found.isEmpty()) {
            return Release.NOW;
        }
        Room room = found.get();
        if (!room.machine.phase().isTerminal()) {
            room.schedulerKnowsOutcome = true;
            drive(room, new RoomEvent.Abort(error != null ? error : "the decode request ended " + reason));
        }
        Release release;
        synchronized (room) {
            if (room.release == null) {
                // the room committed: its pages are ordinary owned pages now
                room.release = Release.NOW;
            }
            release = room.release;
        }
        if (room.machine.isSettled()) {
            rooms.retire(room.machine.room());
            machines.retire(room.machine.room());
        }
        return release;
    }

    // ---------------------------------------------------------------------------------------------
    // Connections.

    private Link connect(String address)
    {
        Link link = new Link(address);
        connector.execute(() -> open(link));
        return link;
    }

    private void open(Link link)
    {
        try {
            InetSocketAddress address = parse(link.address);
            ControlChannel.connect(address, config.connectTimeout(), config.liveness(), clock, new ControlChannel.Listener()
            {
                @Override
                public void opened(ControlChannel channel)
                {
                    link.channel = channel;
                    channel.send(new ControlMessage.Hello(ControlMessage.PROTOCOL_VERSION, EngineTransferContext.localHostId(),
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
                    linkFailed(link, "the control connection to prefill " + link.address + " closed: " + reason);
                }
            });
        }
        catch (IOException | RuntimeException e) {
            linkFailed(link, "cannot connect to prefill " + link.address + ": " + e.getMessage());
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

    private void onMessage(Link link, ControlChannel channel, ControlMessage message)
    {
        switch (message) {
            case HelloResult result when result.accepted() -> {
                if (result.hostId().equals(EngineTransferContext.localHostId()) && result.pid() > 0
                        && result.pid() != ProcessHandle.current().pid()) {
                    link.sameHostProcess = ProcessHandle.of(result.pid());
                }
                channel.send(new ControlMessage.RegisterRegions(backendId, descriptor()));
            }
            case HelloResult result -> {
                log.error("prefill {} refused this decode: {}", link.address, result.reason());
                channel.close("handshake refused: " + result.reason());
                linkFailed(link, "prefill " + link.address + " refused the handshake: " + result.reason());
            }
            case RegionsRegistered registered when registered.accepted() -> {
                ReleasePolicy policy = ReleasePolicy.from(registered.capabilities());
                transport = registered.transport();
                log.info("prefill {} connected over {} ({}); failed rooms are released when {}", link.address, registered.transport(),
                        registered.capabilities(), policy.reason());
                List<Room> ready;
                synchronized (link) {
                    link.policy = policy;
                    link.state = LinkState.READY;
                    ready = List.copyOf(link.pending);
                    link.pending.clear();
                }
                for (Room room : ready) {
                    drive(room, new RoomEvent.PeerReady(policy));
                }
            }
            case RegionsRegistered registered -> {
                channel.close("regions refused: " + registered.reason());
                linkFailed(link, "prefill " + link.address + " refused this decode's regions: " + registered.reason());
            }
            case RoomMessage roomMessage -> rooms.route(roomMessage).ifPresentOrElse(
                    room -> drive(room, new RoomEvent.Received(roomMessage)),
                    stats::ignored);
            case ControlMessage.Heartbeat ignored -> { }
            default -> {
                stats.ignored();
                log.debug("decode ignores {} from {}", message, link.address);
            }
        }
    }

    private synchronized byte[] descriptor()
    {
        if (descriptor == null) {
            descriptor = backend.expose(regions, sharedFile, ReceiverRoom.writeGuard(machines));
        }
        return descriptor;
    }

    private void linkFailed(Link link, String reason)
    {
        List<Room> affected = new ArrayList<>();
        synchronized (link) {
            if (link.state == LinkState.FAILED) {
                return;
            }
            link.state = LinkState.FAILED;
            link.failure = reason;
            affected.addAll(link.pending);
            link.pending.clear();
        }
        // the next request for this prefill connects afresh (a restarted prefill has a new control port)
        links.remove(link.address, link);
        for (Room room : rooms.rooms()) {
            if (room.link == link && !affected.contains(room)) {
                affected.add(room);
            }
        }
        log.warn("{}; failing {} rooms", reason, affected.size());
        for (Room room : affected) {
            drive(room, new RoomEvent.PeerLost(reason));
        }
        // A lost connection alone proves nothing about one-sided writes still in flight; the prefill's exit does.
        link.sameHostProcess.ifPresent(process -> process.onExit().thenRun(() -> {
            for (Room room : affected) {
                drive(room, new RoomEvent.PeerFenced("prefill process " + process.pid() + " exited"));
            }
        }));
    }

    private void tick()
    {
        try {
            long now = clock.nanos();
            for (Link link : links.values()) {
                ControlChannel channel = link.channel;
                if (channel != null && channel.isOpen()) {
                    channel.tick();
                }
            }
            for (Room room : rooms.rooms()) {
                if (now - room.machine.deadlineNanos() >= 0) {
                    drive(room, new RoomEvent.Tick());
                }
            }
        }
        catch (RuntimeException e) {
            log.error("decode tick failed", e);
        }
    }

    // ---------------------------------------------------------------------------------------------
    // Driving rooms.

    private void drive(Room room, RoomEvent.ForReceiver event)
    {
        synchronized (room) {
            for (RoomEffect.ReceiverEffect effect : room.machine.on(event, clock.nanos())) {
                execute(room, effect);
            }
        }
        if (room.machine.isSettled() && room.release != null) {
            RoomKey key = room.machine.room();
            rooms.retire(key);
            machines.retire(key);
        }
    }

    private void execute(Room room, RoomEffect.ReceiverEffect effect)
    {
        RoomKey key = room.machine.room();
        switch (effect) {
            case RoomEffect.Send send -> {
                ControlChannel channel = room.link.channel;
                if (channel == null || !channel.send(send.message())) {
                    log.debug("room {}: no open control connection for {}", key, send.message());
                }
            }
            // the scheduler marked and commits the pages itself; these effects only say when
            case RoomEffect.MarkReceiving ignored -> { }
            case RoomEffect.Commit ignored -> { }
            case RoomEffect.Complete complete -> {
                stats.roomEnded(true);
                scheduler.promptKvArrived(room.rid, complete.firstToken());
            }
            case RoomEffect.Fail fail -> {
                stats.roomEnded(false);
                log.info("room {} (request {}) failed: {}", key, room.rid, fail.reason());
                if (!room.schedulerKnowsOutcome) {
                    room.schedulerKnowsOutcome = true;
                    scheduler.promptKvFailed(room.rid, fail.reason());
                }
            }
            case RoomEffect.Release ignored -> room.release = Release.NOW;
            case RoomEffect.Quarantine ignored -> room.release = new Quarantine(room.proof);
            case RoomEffect.ReleaseQuarantined released -> room.proof.complete(released.proof());
            case RoomEffect.Ignored ignored -> {
                stats.ignored();
                log.debug("room {}: {}", key, ignored.why());
            }
        }
    }

    @Override
    public void close()
    {
        ticker.shutdownNow();
        connector.shutdownNow();
        for (Link link : links.values()) {
            if (link.channel != null) {
                link.channel.close("the decode shut down");
            }
        }
        backend.close();
    }
}
