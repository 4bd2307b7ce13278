package io.handoff.core.disagg;

import io.handoff.core.disagg.control.Compatibility;
import io.handoff.core.disagg.control.ControlMessage;
import io.handoff.core.disagg.control.ControlMessage.RoomMessage;
import io.handoff.core.disagg.control.ControlSecurity;
import io.handoff.core.disagg.control.DeadlineClock;
import io.handoff.core.disagg.control.PeerProcess;
import io.handoff.core.disagg.peer.DecodeToPrefillLinks;
import io.handoff.core.disagg.peer.DisaggregationConfig;
import io.handoff.core.disagg.peer.DrainAckOrigins;
import io.handoff.core.disagg.peer.RestartProofs;
import io.handoff.core.disagg.peer.SuspectPeers;
import io.handoff.core.disagg.peer.TransferStats;
import io.handoff.core.disagg.room.AuxLogprobs;
import io.handoff.core.disagg.room.PageChecksums;
import io.handoff.core.disagg.room.ReceiverRoom;
import io.handoff.core.disagg.room.ReleasePolicy;
import io.handoff.core.disagg.room.RoomEffect;
import io.handoff.core.disagg.room.RoomEvent;
import io.handoff.core.disagg.room.RoomTable;
import io.handoff.core.disagg.room.RoomTrace;
import io.handoff.core.fault.FaultInjector;
import io.handoff.core.fault.FaultPoint;
import io.handoff.core.kv.ReleaseProof;
import io.handoff.core.scheduler.GenerateRequest;
import io.handoff.core.scheduler.HandoffRequest;
import io.handoff.core.scheduler.KvHandoff;
import io.handoff.core.scheduler.RoomTicket;
import io.handoff.core.scheduler.Scheduler;
import io.handoff.spi.transfer.MemoryRegion;
import io.handoff.spi.transfer.PageGeometry;
import io.handoff.spi.transfer.RoomKey;
import io.handoff.spi.transfer.TransferBackend;
import io.handoff.trace.FailureCause;
import io.handoff.trace.FinishReason;
import org.apache.logging.log4j.LogManager;
import org.apache.logging.log4j.Logger;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicLongArray;
import java.util.function.IntUnaryOperator;

import static java.util.Objects.requireNonNull;

/**
 * The decode side of disaggregation: one {@link ReceiverRoom} per request, over the connections
 * {@link DecodeToPrefillLinks} keeps to the prefills (one per prefill, regions registered once). A room's prompt
 * pages were marked RECEIVING by the scheduler at admission; a valid aux record hands the request back
 * to the scheduler with its first token (and the prefill's log probabilities, when it asked for them), a failure fails it, and the room's release policy decides when
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
        final DecodeToPrefillLinks.Link<Room> link;
        final CompletableFuture<ReleaseProof> proof = new CompletableFuture<>();
        Release release;
        boolean schedulerKnowsOutcome;

        Room(ReceiverRoom machine, String rid, DecodeToPrefillLinks.Link<Room> link)
        {
            this.machine = machine;
            this.rid = rid;
            this.link = link;
        }
    }

    /** What the links to the prefills tell this decode's rooms. */
    private final class LinkEvents
            implements DecodeToPrefillLinks.Rooms<Room>
    {
        @Override
        public void received(DecodeToPrefillLinks.Link<Room> from, RoomMessage message)
        {
            Optional<Room> room = rooms.route(message);
            if (room.isEmpty()) {
                stats.ignored();
            }
            else if (!(message instanceof ControlMessage.DrainAck ack) || ackOrigins.accepts(ack, room.get().link, from)) {
                drive(room.get(), new RoomEvent.Received(message));
            }
        }

        @Override
        public void ready(Room room, ReleasePolicy policy)
        {
            drive(room, new RoomEvent.PeerReady(policy));
        }

        @Override
        public void lost(Room room, FailureCause cause, String reason)
        {
            drive(room, new RoomEvent.PeerLost(cause, reason));
        }

        @Override
        public void fenced(Room room, String how)
        {
            drive(room, new RoomEvent.PeerFenced(how));
        }

        /**
         * A new connection to a prefill: rooms still waiting for that same process's drain ack (their connection closed,
         * or the prefill was fenced as suspect) ask again on it. A restarted prefill is another process: it is not asked.
         */
        @Override
        public void linkReady(DecodeToPrefillLinks.Link<Room> link)
        {
            for (Room room : rooms.rooms()) {
                if (room.link != link && link.sameProcessAs(room.link) && room.machine.awaitsDrainAck()) {
                    log.info("room {}: asking prefill {} again, on a new connection, for the drain ack its quarantined pages wait for",
                            room.machine.room(), link.address());
                    link.send(new ControlMessage.DrainRequest(room.machine.room()));
                }
            }
            restarted(link);
        }

        @Override
        public void attested(DecodeToPrefillLinks.Link<Room> from, ControlMessage.ProcessAttestation attestation)
        {
            Optional<RestartProofs.Finding> finding = restarts.attested(from, attestation);
            if (finding.isEmpty()) {
                stats.ignored();
                log.warn("prefill {} attested about process {} (started at {} ms), which this decode did not ask it about: ignored",
                        from.address(), attestation.pid(), attestation.startMillis());
                return;
            }
            settle(finding.get());
        }

        @Override
        public void linkFailed(DecodeToPrefillLinks.Link<Room> link)
        {
            restarts.forget(link);
        }

        @Override
        public List<Room> on(DecodeToPrefillLinks.Link<Room> link)
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
    // the region a corrupting fault flips a bit of: the last rank's, so that a torn slice of another rank than 0 is caught too
    private final MemoryRegion lastRegion;
    // bytes of one page in each rank's pool, and the KV bytes each rank's pool received in rooms that succeeded
    private final long[] rankPageBytes;
    private final int dataParallel;
    private final int pagesPerRank;
    private final AtomicLongArray receivedByRank;
    // prompt tokens of routed requests that this decode's prefix cache held, so that they were not received
    private final AtomicLong prefixHitTokens = new AtomicLong();
    private final DeadlineClock clock = DeadlineClock.system();
    private final TransferStats stats = new TransferStats();
    private final RoomTable<Room> rooms = new RoomTable<>(1024, 4096);
    // the same rooms' machines, for the write guard a receiver-validating backend asks
    private final RoomTable<ReceiverRoom> machines = new RoomTable<>(0, 4096);
    private final DecodeToPrefillLinks<Room> links;
    private final SuspectPeers suspects;
    private final DrainAckOrigins ackOrigins = new DrainAckOrigins();
    private final RestartProofs<DecodeToPrefillLinks.Link<Room>> restarts = new RestartProofs<>();
    // lost prefill processes with quarantined rooms that a prefill on their host could not prove gone, and why (for /health)
    private final Map<PeerProcess, String> unproven = new ConcurrentHashMap<>();
    private final boolean releaseOnDrainDeadlineForTesting;
    private final ScheduledExecutorService ticker;
    private volatile Scheduler scheduler;
    private volatile RoomTrace trace = RoomTrace.NONE;

    public DecodeHandoff(DisaggregationConfig config, Compatibility compatibility, String backendId, TransferBackend backend,
            List<MemoryRegion> regions, Path sharedFile, PageChecksums checksums, ControlSecurity security, FaultInjector faults)
    {
        this(config, compatibility, backendId, backend, regions, 1, 1, sharedFile, checksums, security, false, faults);
    }

    /**
     * @param regions every rank's regions, rank by rank, as many per rank
     * @param ranks the tensor-parallel ranks whose pools {@code regions} are
     * @param dataParallel the data-parallel ranks whose parts of the pages {@code regions} hold (1 without): page {@code p} of
     *         {@code pages} is in rank {@code p * dataParallel / pages}'s memory
     * @param releaseOnDrainDeadlineForTesting see {@link Disaggregation.Options}: breaks invariant I2, for a test to show it
     */
    public DecodeHandoff(DisaggregationConfig config, Compatibility compatibility, String backendId, TransferBackend backend,
            List<MemoryRegion> regions, int ranks, int dataParallel, Path sharedFile, PageChecksums checksums, ControlSecurity security,
            boolean releaseOnDrainDeadlineForTesting, FaultInjector faults)
    {
        this.dataParallel = dataParallel;
        this.pagesPerRank = dataParallel > 1 ? PageGeometry.of(regions).pages() / dataParallel : 0;
        if (ranks < 1 || regions.size() % ranks != 0) {
            throw new IllegalArgumentException(regions.size() + " regions are not the same number for each of " + ranks + " ranks");
        }
        this.rankPageBytes = new long[ranks];
        for (MemoryRegion region : regions) {
            rankPageBytes[region.index() / (regions.size() / ranks)] += region.pageStride();
        }
        this.receivedByRank = new AtomicLongArray(Math.max(ranks, dataParallel));
        this.releaseOnDrainDeadlineForTesting = releaseOnDrainDeadlineForTesting;
        this.config = requireNonNull(config, "config is null");
        this.checksums = requireNonNull(checksums, "checksums is null");
        this.faults = requireNonNull(faults, "faults is null");
        this.lastRegion = regions.getLast();
        this.suspects = new SuspectPeers(config.drainDeadline());
        this.links = new DecodeToPrefillLinks<>(config, compatibility, backendId, backend, regions, sharedFile, ReceiverRoom.writeGuard(machines),
                clock, stats, security, new LinkEvents());
        this.ticker = Executors.newSingleThreadScheduledExecutor(Thread.ofPlatform().name("handoff-decode-ticks").daemon().factory());
        long period = Math.max(50, config.liveness().heartbeatInterval().toMillis() / 2);
        ticker.scheduleAtFixedRate(this::tick, period, period, TimeUnit.MILLISECONDS);
    }

    public void attach(Scheduler scheduler)
    {
        this.scheduler = requireNonNull(scheduler, "scheduler is null");
        this.trace = new RoomTrace(scheduler.timelines(), checksums.bytesPerPage(), config.checksums());
    }

    public TransferStats stats()
    {
        return stats;
    }

    /**
     * The KV bytes each tensor-parallel rank's pool received, by rank (one entry with one rank), over rooms that
     * succeeded: each rank receives its own KV heads, so the entries split a request's KV.
     */
    public long[] receivedBytesByRank()
    {
        long[] bytes = new long[receivedByRank.length()];
        for (int rank = 0; rank < bytes.length; rank++) {
            bytes[rank] = receivedByRank.get(rank);
        }
        return bytes;
    }

    /** Prompt tokens of routed requests that this decode's prefix cache held, so that the prefill did not send them. */
    public long prefixHitTokens()
    {
        return prefixHitTokens.get();
    }

    /** The transport of the most recent peer connection. */
    public String transport()
    {
        return links.transport();
    }

    /** Messages dropped: for a retired room generation, or a drain ack from another prefill than its room's. */
    public long droppedMessages()
    {
        return rooms.dropped() + ackOrigins.refused();
    }

    /** The prefills (bootstrap addresses) that neither drained nor exited within the drain deadline; see {@link SuspectPeers}. */
    public List<String> suspectPeers()
    {
        return suspects.peers();
    }

    /** Rooms not retired yet: still receiving, or failed with quarantined pages that wait for their proof. */
    public int unsettledRooms()
    {
        return rooms.rooms().size();
    }

    /**
     * Lost prefill processes whose quarantined pages a prefill on their host could not prove released (a restart without
     * proof: the pages stay quarantined), each with why; see {@link RestartProofs}.
     */
    public List<String> unprovenRestarts()
    {
        // a process whose rooms were released since (a drain ack, its exit on this host) is no longer waiting
        Set<PeerProcess> waiting = new HashSet<>();
        for (Room room : rooms.rooms()) {
            if (room.machine.awaitsProof()) {
                waiting.add(room.link.peer());
            }
        }
        unproven.keySet().retainAll(waiting);
        List<String> out = new ArrayList<>();
        unproven.forEach((process, why) -> out.add(process + ": " + why));
        out.sort(null);
        return out;
    }

    /**
     * {@code link} reached a prefill: when it is another incarnation on the host of a lost prefill whose rooms still hold
     * quarantined pages, it may prove that prefill gone (a reboot), or be asked whether its process still runs.
     */
    private void restarted(DecodeToPrefillLinks.Link<Room> link)
    {
        List<PeerProcess> lost = new ArrayList<>();
        for (Room room : rooms.rooms()) {
            if (room.link != link && room.link.failed() && room.machine.awaitsProof()) {
                lost.add(room.link.peer());
            }
        }
        if (lost.isEmpty()) {
            return;
        }
        for (RestartProofs.Finding finding : restarts.reached(link, link.peer(), lost)) {
            if (finding instanceof RestartProofs.Asked asked) {
                log.info("prefill {} ({}) replaced lost {} on its host: asking it whether that process still runs", link.address(),
                        link.peer(), asked.lost());
                if (!link.send(asked.query())) {
                    settle(new RestartProofs.Unproven(asked.lost(), "the connection to prefill " + link.address() + " closed before it "
                            + "could be asked"));
                }
            }
            else {
                settle(finding);
            }
        }
    }

    /** A proof releases the quarantined rooms of the lost process; without one they stay quarantined, said in the log and /health. */
    private void settle(RestartProofs.Finding finding)
    {
        PeerProcess lost = finding.lost();
        switch (finding) {
            case RestartProofs.Proven proven -> {
                unproven.remove(lost);
                List<Room> fenced = new ArrayList<>();
                for (Room room : rooms.rooms()) {
                    if (room.link.failed() && room.link.peer().equals(lost) && room.machine.awaitsProof()) {
                        fenced.add(room);
                    }
                }
                log.info("lost prefill {} is fenced: {}; releasing the quarantined pages of {} room(s)", lost, proven.proof(), fenced.size());
                for (Room room : fenced) {
                    drive(room, new RoomEvent.PeerFenced(proven.proof()));
                }
            }
            case RestartProofs.Unproven why -> {
                if (unproven.size() < 64 || unproven.containsKey(lost)) {
                    unproven.put(lost, why.why());
                }
                log.warn("a prefill on the host of lost prefill {} answered, but nothing proves the lost one stopped writing: {}; its rooms' "
                        + "KV pages stay quarantined (they are released once it is gone and a prefill on its host attests it, it drains, or "
                        + "it exits on this host)", lost, why.why());
            }
            case RestartProofs.Asked ignored -> { }
        }
    }

    // ---------------------------------------------------------------------------------------------
    // Scheduler hooks (scheduler thread).

    @Override
    public boolean receivesPrompt(HandoffRequest request)
    {
        return request.ticket().isPresent();
    }

    @Override
    public boolean reusesCachedPrompt()
    {
        return config.decodePrefixCache();
    }

    /**
     * Claims the request's room on its prefill now, before admission: the prefill waits for the page list under its
     * bootstrapping deadline instead of failing the room as unclaimed while the request queues here. Connects to the
     * prefill when there is no link yet; the room joins that link at admission.
     */
    @Override
    public void queued(String rid, RoomTicket ticket)
    {
        if (ticket.bootstrap().isEmpty()) {
            return;
        }
        try {
            links.claim(links.to(ticket.bootstrap()), new ControlMessage.RoomClaim(ticket.room(), rid));
        }
        catch (RuntimeException e) {
            // the admission connects again and fails the room with the reason if the prefill cannot be reached
            log.debug("request {}: cannot claim room {} on {}: {}", rid, ticket.room(), ticket.bootstrap(), e.getMessage());
        }
    }

    /** Tells the prefill that {@link #queued} claimed the room for that the request ended before it had pages here. */
    @Override
    public void dequeued(String rid, RoomTicket ticket, FailureCause cause, String reason)
    {
        if (ticket.bootstrap().isEmpty()) {
            return;
        }
        String why = reason != null ? reason : "request " + rid + " was aborted on the decode before it was admitted";
        try {
            links.claim(links.to(ticket.bootstrap()), new ControlMessage.RoomFailed(ticket.room(), cause, why));
        }
        catch (RuntimeException e) {
            // the prefill's own deadline for the claimed room still ends it
            log.debug("request {}: cannot tell {} that room {} ended: {}", rid, ticket.bootstrap(), ticket.room(), e.getMessage());
        }
    }

    @Override
    public void checkTransferable(GenerateRequest request)
    {
        AuxLogprobs.checkFits(request);
    }

    @Override
    public void admitted(HandoffRequest request)
    {
        if (request.ticket().isEmpty()) {
            return;
        }
        RoomKey key = request.ticket().get().room();
        DecodeToPrefillLinks.Link<Room> link = links.to(request.ticket().get().bootstrap());
        // the prompt's leading pages this decode's prefix cache held at admission are not received
        int[] promptPages = Arrays.copyOfRange(request.pages(), request.heldPages(), request.promptPages());
        ReceiverRoom machine = new ReceiverRoom(key, request.rid(), request.promptIds().length, request.heldPages(), promptPages, link.address(),
                config.deadlines(), config.checksums() ? Optional.of(verifier(key)) : Optional.empty(), AuxLogprobs.expected(request),
                clock.nanos());
        prefixHitTokens.addAndGet((long) request.heldPages() * request.pageSize());
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
            faults.hit(FaultPoint.DECODE_BEFORE_VERIFY, key.roomId(), page, lastRegion.page(page));
            return checksums.checksum(page);
        };
    }

    @Override
    public Release finished(HandoffRequest request, FinishReason reason, String error, Optional<FailureCause> cause)
    {
        Optional<Room> found = request.ticket().flatMap(ticket -> rooms.get(ticket.room()));
        if (found.isEmpty()) {
            return Release.NOW;
        }
        Room room = found.get();
        if (!room.machine.phase().isTerminal()) {
            room.schedulerKnowsOutcome = true;
            drive(room, new RoomEvent.Abort(cause.orElse(FailureCause.ENGINE), error != null ? error : "the decode request ended " + reason));
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
            for (String peer : suspects.due(now)) {
                suspect(peer);
            }
            for (String peer : suspects.askAgain(now)) {
                // a connection of its own (no room joins it): once up, rooms waiting for this process's drain ask again
                links.to(peer);
            }
        }
        catch (RuntimeException | OutOfMemoryError e) {
            // a tick that throws would cancel every later one, and with them the room deadlines and peer timeouts
            log.error("decode tick failed", e);
        }
    }

    /**
     * A prefill neither drained nor exited within the drain deadline: fence what can be fenced (its control connection;
     * the transfer SPI offers a receiver no per-peer revocation, so its memory grant stays), stop pairing it (through
     * /health), and say what to do. Its rooms' pages stay quarantined: only a proof releases them.
     */
    private void suspect(String peer)
    {
        List<RoomKey> waiting = suspects.rooms(peer);
        log.warn("prefill {} is suspect: room(s) {} waited more than {} (handoff.disaggregation.drain-deadline) for the proof that no write "
                + "can land; their KV pages stay quarantined until it drains or exits. Restart or kill that prefill (its process exit is "
                + "a proof on this host); routers stop pairing it meanwhile", peer, waiting, config.drainDeadline());
        if (releaseOnDrainDeadlineForTesting) {
            // what the field's timer-based fixes do: release on the deadline, fence nothing
            log.error("TEST ONLY: releasing the quarantined pages of room(s) {} on the drain deadline, without proof (breaks I2)", waiting);
            for (RoomKey key : waiting) {
                rooms.get(key).ifPresent(room -> drive(room, new RoomEvent.PeerFenced("TEST ONLY: the drain deadline passed (no proof)")));
            }
            return;
        }
        links.fence(peer, "prefill " + peer + " is suspect: it did not drain room(s) " + waiting + " within the drain deadline of "
                + config.drainDeadline());
    }

    // ---------------------------------------------------------------------------------------------
    // Driving rooms.

    private void drive(Room room, RoomEvent.ForReceiver event)
    {
        synchronized (room) {
            for (RoomEffect.ReceiverEffect effect : trace.receiver(room.rid, event, room.machine.on(event, clock.nanos()))) {
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
                if (dataParallel > 1) {
                    // a data-parallel decode: each page in the memory of the rank whose part of the pages it is
                    for (int page : room.machine.pages()) {
                        receivedByRank.addAndGet(page / pagesPerRank, rankPageBytes[0]);
                    }
                }
                else {
                    for (int rank = 0; rank < rankPageBytes.length; rank++) {
                        receivedByRank.addAndGet(rank, rankPageBytes[rank] * room.machine.pages().length);
                    }
                }
                scheduler.promptKvArrived(room.rid, complete.firstToken(), complete.logprobs());
            }
            case RoomEffect.Fail fail -> {
                stats.roomEnded(false);
                log.info("room {} (request {}) failed: {}", key, room.rid, fail.reason());
                if (!room.schedulerKnowsOutcome) {
                    room.schedulerKnowsOutcome = true;
                    scheduler.promptKvFailed(room.rid, fail.cause(), fail.reason());
                }
            }
            case RoomEffect.Release ignored -> room.release = Release.NOW;
            case RoomEffect.Quarantine ignored -> {
                room.release = new Quarantine(room.proof);
                suspects.quarantined(key, room.link.address(), clock.nanos());
            }
            case RoomEffect.ReleaseQuarantined released -> {
                suspects.proven(key);
                room.proof.complete(released.proof());
            }
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
