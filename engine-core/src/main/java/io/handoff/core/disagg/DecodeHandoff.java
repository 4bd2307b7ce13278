package io.handoff.core.disagg;

import io.handoff.core.disagg.ControlMessage.RoomMessage;
import io.handoff.core.fault.FaultInjector;
import io.handoff.core.fault.FaultPoint;
import io.handoff.core.kv.ReleaseProof;
import io.handoff.core.scheduler.FailureCause;
import io.handoff.core.scheduler.FinishReason;
import io.handoff.core.scheduler.HandoffRequest;
import io.handoff.core.scheduler.KvHandoff;
import io.handoff.core.scheduler.Scheduler;
import io.handoff.spi.transfer.MemoryRegion;
import io.handoff.spi.transfer.RoomKey;
import io.handoff.spi.transfer.TransferBackend;
import org.apache.logging.log4j.LogManager;
import org.apache.logging.log4j.Logger;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.function.IntUnaryOperator;

import static java.util.Objects.requireNonNull;

/**
 * The decode side of disaggregation: one {@link ReceiverRoom} per request, over the connections
 * {@link PrefillLinks} keeps to the prefills (one per prefill, regions registered once). A room's prompt
 * pages were marked RECEIVING by the scheduler at admission; a valid aux record hands the request back
 * to the scheduler with its first token, a failure fails it, and the room's release policy decides when
 * its pages may be reused (invariant I2).
 */
public final class DecodeHandoff
        implements KvHandoff, AutoCloseable
{
    private static final Logger log = LogManager.getLogger(DecodeHandoff.class);

    /** A room and what its request's release depends on. */
    private static final class Room
    {
        final ReceiverRoom machine;
        final String rid;
        final PrefillLinks.Link<Room> link;
        final CompletableFuture<ReleaseProof> proof = new CompletableFuture<>();
        Release release;
        boolean schedulerKnowsOutcome;

        Room(ReceiverRoom machine, String rid, PrefillLinks.Link<Room> link)
        {
            this.machine = machine;
            this.rid = rid;
            this.link = link;
        }
    }

    /** What the links to the prefills tell this decode's rooms. */
    private final class LinkEvents
            implements PrefillLinks.Rooms<Room>
    {
        @Override
        public void received(RoomMessage message)
        {
            rooms.route(message).ifPresentOrElse(room -> drive(room, new RoomEvent.Received(message)), stats::ignored);
        }

        @Override
        public void ready(Room room, ReleasePolicy policy)
        {
            drive(room, new RoomEvent.PeerReady(policy));
        }

        @Override
        public void lost(Room room, String reason)
        {
            drive(room, new RoomEvent.PeerLost(reason));
        }

        @Override
        public void fenced(Room room, String how)
        {
            drive(room, new RoomEvent.PeerFenced(how));
        }

        @Override
        public List<Room> on(PrefillLinks.Link<Room> link)
        {
            List<Room> on = new ArrayList<>();
            for (Room room : rooms.rooms()) {
                if (room.link == link) {
                    on.add(room);
                }
            }
            return on;
        }
    }

    private final DisaggregationConfig config;
    private final PageChecksums checksums;
    private final FaultInjector faults;
    private final MemoryRegion firstRegion;
    private final DeadlineClock clock = DeadlineClock.system();
    private final TransferStats stats = new TransferStats();
    private final RoomTable<Room> rooms = new RoomTable<>(1024, 4096);
    // the same rooms' machines, for the write guard a receiver-validating backend asks
    private final RoomTable<ReceiverRoom> machines = new RoomTable<>(0, 4096);
    private final PrefillLinks<Room> links;
    private final ScheduledExecutorService ticker;
    private volatile Scheduler scheduler;

    public DecodeHandoff(DisaggregationConfig config, Compatibility compatibility, String backendId, TransferBackend backend,
            List<MemoryRegion> regions, Path sharedFile, PageChecksums checksums, ControlSecurity security, FaultInjector faults)
    {
        this.config = requireNonNull(config, "config is null");
        this.checksums = requireNonNull(checksums, "checksums is null");
        this.faults = requireNonNull(faults, "faults is null");
        this.firstRegion = regions.getFirst();
        this.links = new PrefillLinks<>(config, compatibility, backendId, backend, regions, sharedFile, ReceiverRoom.writeGuard(machines),
                clock, stats, security, new LinkEvents());
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
        return links.transport();
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
        PrefillLinks.Link<Room> link = links.to(request.ticket().get().bootstrap());
        int[] promptPages = Arrays.copyOf(request.pages(), request.promptPages());
        ReceiverRoom machine = new ReceiverRoom(key, request.rid(), request.promptIds().length, promptPages, link.address(),
                config.deadlines(), config.checksums() ? Optional.of(verifier(key)) : Optional.empty(), clock.nanos());
        Room room = new Room(machine, request.rid(), link);
        machine.onWritesSettled(() -> drive(room, new RoomEvent.WritesSettled()));
        List<RoomMessage> early;
        try {
            early = rooms.register(key, room);
            machines.register(key, machine);
        }
        catch (IllegalStateException e) {
            scheduler.promptKvFailed(request.rid(), FailureCause.ENGINE, "room " + key + " cannot be opened: " + e.getMessage());
            return;
        }
        for (RoomMessage message : early) {
            drive(room, new RoomEvent.Received(message));
        }
        links.join(link, room);
    }

    // a fault plan may corrupt a landed page right before its check, as a bit flipped in flight would (tests, soaks)
    private IntUnaryOperator verifier(RoomKey key)
    {
        if (faults == FaultInjector.NONE) {
            return checksums::checksum;
        }
        return page -> {
            faults.hit(FaultPoint.DECODE_BEFORE_VERIFY, key.roomId(), page, firstRegion.page(page));
            return checksums.checksum(page);
        };
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

    private void tick()
    {
        try {
            long now = clock.nanos();
            links.tick();
            for (Room room : rooms.rooms()) {
                if (now - room.machine.deadlineNanos() >= 0) {
                    drive(room, new RoomEvent.Tick());
                }
            }
        }
        catch (RuntimeException | OutOfMemoryError e) {
            // a tick that throws would cancel every later one, and with them the room deadlines and peer timeouts
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
                if (!room.link.send(send.message())) {
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
                    // until rooms name their causes themselves: a failed check is the one cause told apart here
                    FailureCause cause = fail.reason().contains("KV checksum mismatch") ? FailureCause.CHECKSUM_MISMATCH : FailureCause.TRANSPORT_FAILURE;
                    scheduler.promptKvFailed(room.rid, cause, fail.reason());
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
        links.close();
    }
}
