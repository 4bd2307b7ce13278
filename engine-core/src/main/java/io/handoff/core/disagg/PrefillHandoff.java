package io.handoff.core.disagg;

import io.handoff.core.disagg.control.Compatibility;
import io.handoff.core.disagg.control.ControlChannel;
import io.handoff.core.disagg.control.ControlMessage;
import io.handoff.core.disagg.control.ControlMessage.DrainAck;
import io.handoff.core.disagg.control.ControlMessage.DrainRequest;
import io.handoff.core.disagg.control.ControlMessage.RoomClaim;
import io.handoff.core.disagg.control.ControlMessage.RoomMessage;
import io.handoff.core.disagg.control.ControlSecurity;
import io.handoff.core.disagg.control.DeadlineClock;
import io.handoff.core.disagg.control.PeerProcess;
import io.handoff.core.disagg.control.ProcessCheck;
import io.handoff.core.disagg.peer.DisaggregationConfig;
import io.handoff.core.disagg.peer.PrefillToDecodeLinks;
import io.handoff.core.disagg.peer.TransferStats;
import io.handoff.core.disagg.room.AuxLogprobs;
import io.handoff.core.disagg.room.EarlySend;
import io.handoff.core.disagg.room.PageChecksums;
import io.handoff.core.disagg.room.RoomEffect;
import io.handoff.core.disagg.room.RoomEvent;
import io.handoff.core.disagg.room.RoomEvent.ChunkForwarded;
import io.handoff.core.disagg.room.RoomTable;
import io.handoff.core.disagg.room.RoomTrace;
import io.handoff.core.disagg.room.SenderRoom;
import io.handoff.core.disagg.room.UnopenedRooms;
import io.handoff.core.scheduler.GenerateRequest;
import io.handoff.core.scheduler.HandoffRequest;
import io.handoff.core.scheduler.KvHandoff;
import io.handoff.core.scheduler.KvHandoff.HandoffFailure;
import io.handoff.core.scheduler.Logprobs;
import io.handoff.core.scheduler.RoomTicket;
import io.handoff.core.scheduler.Scheduler;
import io.handoff.core.transfer.PlanListener;
import io.handoff.core.transfer.RankLayout;
import io.handoff.core.transfer.TransferHooks;
import io.handoff.core.transfer.TransferLink;
import io.handoff.spi.transfer.PageGeometry;
import io.handoff.spi.transfer.ProducerFence;
import io.handoff.spi.transfer.RoomKey;
import io.handoff.spi.transfer.TransferBackend;
import io.handoff.spi.transfer.TransferPlan;
import io.handoff.trace.FailureCause;
import io.handoff.trace.FinishReason;
import org.apache.logging.log4j.LogManager;
import org.apache.logging.log4j.Logger;

import java.io.IOException;
import java.util.Arrays;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;

import static java.util.Objects.requireNonNull;

/**
 * The prefill side of disaggregation: drives one {@link SenderRoom} per request from the scheduler's
 * hooks, the decode's messages and the backend's completions, over the connections {@link PrefillToDecodeLinks}
 * keeps to the decodes. All room events go through {@link #drive}, one at a time, and their effects run
 * in order before the next event (a drain never overtakes a post).
 */
public final class PrefillHandoff
        implements KvHandoff, AutoCloseable
{
    private static final Logger log = LogManager.getLogger(PrefillHandoff.class);

    /** What the prefill tracks per room besides the state machine. */
    private static final class Room
    {
        final SenderRoom machine;
        final String rid;
        /** Completes when no transfer reads the source pages, with the room's own failure if it had one. */
        final CompletableFuture<Optional<HandoffFailure>> sourcesReleased = new CompletableFuture<>();
        /** Why the room failed, when it failed on its own (not because its request ended); under the room's lock. */
        HandoffFailure failure;
        /** The request ended first: a failure of the room then is that ending, not news for the request's result. */
        boolean endedByRequest;
        /** The scheduler asked how to release the request's pages; until then the room's outcome must stay reachable. */
        volatile boolean requestFinished;
        /** Retired from the room table (under the room's lock): messages that still reach it are answered as for an unknown room. */
        boolean retired;
        int nextChunk;
        boolean prefixForwarded;
        boolean lastComputed;
        long lastForwardNanos;
        /** Early send: the scheduled chunk not forwarded yet (its pages are forwarded when the next one is scheduled). */
        int pendingFrom = -1;
        int pendingTo;
        io.handoff.core.scheduler.Fence pendingFence;

        Room(SenderRoom machine, String rid)
        {
            this.machine = machine;
            this.rid = rid;
        }
    }

    /** What the links to the decodes tell this prefill's rooms (control reader threads). */
    private final class LinkEvents
            implements PrefillToDecodeLinks.Rooms
    {
        @Override
        public void received(ControlChannel channel, RoomMessage message)
        {
            Optional<Room> room = rooms.route(message);
            ControlMessage.RoomFailed ended = message instanceof ControlMessage.RoomRequest ? endedInFailure.get(message.room()) : null;
            if (room.isPresent()) {
                if (!receive(room.get(), message) && message instanceof DrainRequest drain) {
                    // the room settled and was retired while this request was on its way: nothing of it is in flight
                    channel.send(new DrainAck(drain.room()));
                }
            }
            else if (ended != null) {
                // the room failed and was retired before this decode's page list came: say so, or the decode waits for data
                channel.send(ended);
            }
            else if ((message instanceof RoomClaim || message instanceof ControlMessage.RoomRequest) && rooms.parked(message.room())) {
                // its request has not come (yet): the decode hears if it does not come in time
                unopened.named(message.room(), channel, clock.nanos());
            }
            else if (message instanceof DrainRequest drain && rooms.retireUnregistered(drain.room())) {
                // a room this prefill no longer (or never) had: nothing of it can be in flight, and the decode gave it up, so
                // it is retired unopened (its parked page list dropped, a late copy of its request refused) and never will be
                channel.send(new DrainAck(drain.room()));
            }
        }

        @Override
        public void lost(ControlChannel channel, String reason)
        {
            for (Room room : rooms.rooms()) {
                if (links.carries(channel, room.machine.room())) {
                    drive(room, new RoomEvent.PeerLost(FailureCause.PEER_LOST, reason));
                }
            }
        }
    }

    private final DisaggregationConfig config;
    private final PageChecksums checksums;
    private final int pageSize;
    private final EarlySend earlySend;
    private final DeadlineClock clock = DeadlineClock.system();
    private final TransferStats stats = new TransferStats();
    private final RoomTable<Room> rooms = new RoomTable<>(1024, 4096);
    // rooms a decode named before their request came here, where it named them
    private final UnopenedRooms<ControlChannel> unopened;
    // the failure notices of the last retired rooms that failed, for a page list that comes after the room is gone
    private final Map<RoomKey, ControlMessage.RoomFailed> endedInFailure = Collections.synchronizedMap(
            new LinkedHashMap<>(16, 0.75f, false)
            {
                @Override
                protected boolean removeEldestEntry(Map.Entry<RoomKey, ControlMessage.RoomFailed> eldest)
                {
                    return size() > 4096;
                }
            });
    // plans posted but not yet moving, by room and chunk: their busy time starts when the backend starts reading them
    private final Map<RoomKey, Map<Integer, java.util.ArrayDeque<TransferStats.Plan>>> waitingToMove = new ConcurrentHashMap<>();
    private final PrefillToDecodeLinks links;
    private final ScheduledExecutorService ticker;
    private volatile Scheduler scheduler;
    private volatile RoomTrace trace = RoomTrace.NONE;

    public PrefillHandoff(DisaggregationConfig config, Compatibility compatibility, String backendId, TransferBackend backend,
            PageChecksums checksums, int pageSize, EarlySend earlySend, PageGeometry sources, TransferHooks hooks, ControlSecurity security,
            String incarnation)
            throws IOException
    {
        this(config, compatibility, backendId, backend, checksums, pageSize, earlySend, sources, null, hooks, security, incarnation);
    }

    /** @param layout how {@code sources} spread over this server's tensor-parallel ranks; null for one rank's regions */
    public PrefillHandoff(DisaggregationConfig config, Compatibility compatibility, String backendId, TransferBackend backend,
            PageChecksums checksums, int pageSize, EarlySend earlySend, PageGeometry sources, RankLayout layout, TransferHooks hooks,
            ControlSecurity security, String incarnation)
            throws IOException
    {
        this.config = requireNonNull(config, "config is null");
        this.checksums = requireNonNull(checksums, "checksums is null");
        this.pageSize = pageSize;
        this.earlySend = requireNonNull(earlySend, "earlySend is null");
        this.unopened = new UnopenedRooms<>(config.deadlines().bootstrapping().toNanos(), 4096);
        // a decode may connect before this returns; until a request is admitted here there is no room it can reach
        this.links = new PrefillToDecodeLinks(config, compatibility, backendId, backend, earlySend, sources, layout, hooks, clock, stats, security,
                PeerProcess.current(requireNonNull(incarnation, "incarnation is null")), ProcessCheck.SYSTEM, new LinkEvents());
        this.ticker = Executors.newSingleThreadScheduledExecutor(Thread.ofPlatform().name("handoff-prefill-ticks").daemon().factory());
        long period = Math.max(50, config.liveness().heartbeatInterval().toMillis() / 2);
        ticker.scheduleAtFixedRate(this::tick, period, period, TimeUnit.MILLISECONDS);
    }

    /** The scheduler whose requests this hands off (set once, right after both are built). */
    public void attach(Scheduler scheduler)
    {
        this.scheduler = requireNonNull(scheduler, "scheduler is null");
        this.trace = new RoomTrace(scheduler.timelines(), checksums.bytesPerPage(), config.checksums());
    }

    /** Where decodes connect: {@code host:port}. */
    public String controlAddress()
    {
        return links.controlAddress();
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

    private void tick()
    {
        try {
            links.tick();
            long now = clock.nanos();
            for (Room room : rooms.rooms()) {
                if (now - room.machine.deadlineNanos() >= 0) {
                    drive(room, new RoomEvent.Tick());
                }
            }
            for (UnopenedRooms.Due<ControlChannel> due : unopened.due(now)) {
                failUnopened(due.room(), Optional.of(due.from()), FailureCause.ROOM_UNCLAIMED, "prefill " + links.controlAddress()
                        + " never received the request of room " + due.room().roomId() + " (generation " + due.room().generation() + ") within "
                        + config.deadlines().bootstrapping().toMillis() + " ms of this decode's claim (handoff.disaggregation.bootstrapping-timeout): the router "
                        + "may have failed between sending the request to the decode and to the prefill; send it again");
            }
        }
        catch (RuntimeException | OutOfMemoryError e) {
            // a tick that throws would cancel every later one, and with them the timeouts that drop silent peers
            log.error("prefill tick failed", e);
        }
    }

    // ---------------------------------------------------------------------------------------------
    // Scheduler hooks (scheduler thread).

    /**
     * A room that never opened here ends: its request never came in time, or ended before its admission. Retired unopened,
     * so that its request, should it come, is refused and nothing is ever written for it; the decode that named it is told
     * now, and one that sends its page list later is told then.
     */
    private void failUnopened(RoomKey key, Optional<ControlChannel> decode, FailureCause cause, String reason)
    {
        if (!rooms.retireUnregistered(key)) {
            // its request was admitted meanwhile: the live room answers for itself
            return;
        }
        ControlMessage.RoomFailed notice = new ControlMessage.RoomFailed(key, cause, reason);
        endedInFailure.put(key, notice);
        log.info("room {} failed before it opened: {}", key, reason);
        decode.ifPresent(channel -> channel.send(notice));
    }

    /** The request of a room may come after a decode's claim for it: queued, it waits for admission without a deadline. */
    @Override
    public void queued(String rid, RoomTicket ticket)
    {
        unopened.queued(ticket.room());
    }

    /** The request ended while queued: its room never opens, and a decode that claimed it must not wait for its KV. */
    @Override
    public void dequeued(String rid, RoomTicket ticket, FailureCause cause, String reason)
    {
        Optional<ControlChannel> decode = unopened.dequeued(ticket.room());
        failUnopened(ticket.room(), decode, cause, "the prefill's request " + rid + " ended before it was admitted: "
                + (reason != null ? reason : "aborted"));
    }

    @Override
    public void admitted(HandoffRequest request)
    {
        if (request.ticket().isEmpty()) {
            return;
        }
        RoomKey key = request.ticket().get().room();
        unopened.opened(key);
        SenderRoom machine = new SenderRoom(key, request.promptIds().length, pageSize, config.maxPagesPerPlan(), config.deadlines(),
                config.checksums() ? Optional.of(checksums::checksum) : Optional.empty(), clock.nanos());
        Room room = new Room(machine, request.rid());
        List<RoomMessage> early;
        try {
            early = rooms.register(key, room);
        }
        catch (IllegalStateException e) {
            ControlMessage.RoomFailed failedUnopened = endedInFailure.get(key);
            if (failedUnopened != null) {
                // it ended before this request came (no decode claimed it in time from here, or the decode gave it up)
                scheduler.abort(request.rid(), failedUnopened.cause(), "room " + key + " ended before this request came: " + failedUnopened.reason());
                return;
            }
            log.warn("request {}: {}", request.rid(), e.getMessage());
            scheduler.abort(request.rid(), FailureCause.ENGINE, "room " + key + " cannot be opened: " + e.getMessage());
            return;
        }
        // a claim that overtook this request waited here, parked by the room table (bounded, like any early message)
        for (RoomMessage message : early) {
            receive(room, message);
        }
    }

    /**
     * With early send, pages that are final when a step is scheduled go out now: the cached prefix (fence
     * done), and the request's previous chunk, whose forward may still be running in overlap mode; its
     * fence travels in the plan and the backend honours it (the gate allowed early send only for backends
     * that declare FORWARD_SYNC or STAGING).
     */
    @Override
    public void chunkScheduled(HandoffRequest request, int from, int to, io.handoff.core.scheduler.Fence fence)
    {
        if (!earlySend.enabled()) {
            return;
        }
        Optional<Room> found = room(request);
        if (found.isEmpty()) {
            return;
        }
        Room room = found.get();
        forwardPrefix(room, request, from);
        if (room.pendingFrom >= 0) {
            forward(room, request, room.pendingFrom, room.pendingTo, room.pendingFence, false, -1, Optional.empty());
        }
        room.pendingFrom = from;
        room.pendingTo = to;
        room.pendingFence = fence;
    }

    @Override
    public void checkTransferable(GenerateRequest request)
    {
        AuxLogprobs.checkFits(request);
    }

    @Override
    public void chunkComputed(HandoffRequest request, int from, int to, io.handoff.core.scheduler.Fence fence, boolean last, int firstToken,
            Optional<Logprobs> logprobs)
    {
        Optional<Room> found = room(request);
        if (found.isEmpty()) {
            return;
        }
        Room room = found.get();
        if (earlySend.enabled()) {
            // non-last chunks went (or go) out when the next chunk is scheduled; the last one goes now
            if (last) {
                room.pendingFrom = -1;
                forward(room, request, from, to, fence, true, firstToken, logprobs);
            }
            return;
        }
        forwardPrefix(room, request, from);
        forward(room, request, from, to, fence, last, firstToken, logprobs);
    }

    private void forwardPrefix(Room room, HandoffRequest request, int from)
    {
        if (!room.prefixForwarded) {
            room.prefixForwarded = true;
            if (from > 0) {
                // prefix-cache hit: these pages were final before this request started
                int[] prefix = Arrays.copyOfRange(request.pages(), 0, from / pageSize);
                drive(room, ChunkForwarded.middle(room.nextChunk++, 0, prefix, ProducerFence.DONE));
            }
        }
    }

    private void forward(Room room, HandoffRequest request, int from, int to, ProducerFence fence, boolean last, int firstToken,
            Optional<Logprobs> logprobs)
    {
        int firstPage = from / pageSize;
        int endPage = last ? Math.ceilDiv(to, pageSize) : to / pageSize;
        int[] pages = Arrays.copyOfRange(request.pages(), firstPage, endPage);
        if (last) {
            room.lastForwardNanos = System.nanoTime();
        }
        drive(room, last
                ? ChunkForwarded.last(room.nextChunk++, firstPage, pages, fence, firstToken, logprobs)
                : ChunkForwarded.middle(room.nextChunk++, firstPage, pages, fence));
        room.lastComputed |= last;
    }

    @Override
    public Release finished(HandoffRequest request, FinishReason reason, String error, Optional<FailureCause> cause)
    {
        Optional<Room> found = room(request);
        if (found.isEmpty()) {
            return Release.NOW;
        }
        Room room = found.get();
        if (!room.lastComputed || reason == FinishReason.ABORT || reason == FinishReason.ERROR) {
            synchronized (room) {
                room.endedByRequest = true;
            }
            drive(room, new RoomEvent.Abort(cause.orElse(FailureCause.ENGINE), error != null ? error : "the prefill request ended " + reason));
        }
        // even when the room has ended: the future carries its failure to the request's result
        room.requestFinished = true;
        retireIfSettled(room);
        return new AfterTransfers(room.sourcesReleased);
    }

    private Optional<Room> room(HandoffRequest request)
    {
        return request.ticket().flatMap(ticket -> rooms.get(ticket.room()));
    }

    // ---------------------------------------------------------------------------------------------
    // Driving rooms.

    /**
     * A claim names its request: one naming another request than this room's (a confused decode) claims nothing. False
     * when the room was retired before the message could reach it (the caller answers as for an unknown room).
     */
    private boolean receive(Room room, RoomMessage message)
    {
        if (message instanceof RoomClaim claim && !claim.requestId().equals(room.rid)) {
            stats.ignored();
            log.debug("room {}: ignored a claim for request {}; the room is request {}'s", claim.room(), claim.requestId(), room.rid);
            return true;
        }
        return drive(room, new RoomEvent.Received(message));
    }

    /** Feeds one event to a live room and runs its effects; false (doing nothing) once the room is retired. */
    private boolean drive(Room room, RoomEvent.ForSender event)
    {
        synchronized (room) {
            if (room.retired) {
                return false;
            }
            for (RoomEffect.SenderEffect effect : trace.sender(room.rid, event, room.machine.on(event, clock.nanos()))) {
                execute(room, effect);
            }
        }
        retireIfSettled(room);
        return true;
    }

    /**
     * Retires a room once nothing more can happen to it: terminal, drained, its drain ack sent, its sources released and
     * its request finished. Under the room's lock, so a message routed to it meanwhile either runs before (and is
     * answered by the room) or finds it retired.
     */
    private void retireIfSettled(Room room)
    {
        synchronized (room) {
            if (room.retired || !room.machine.isSettled() || !room.sourcesReleased.isDone() || !room.requestFinished) {
                return;
            }
            room.retired = true;
        }
        room.machine.failureNotice().ifPresent(notice -> endedInFailure.put(notice.room(), notice));
        rooms.retire(room.machine.room());
        links.forget(room.machine.room());
    }

    /** Rooms not retired yet: still transferring, draining, or owing a decode its drain ack. */
    public int unsettledRooms()
    {
        return rooms.rooms().size();
    }

    private void execute(Room room, RoomEffect.SenderEffect effect)
    {
        RoomKey key = room.machine.room();
        switch (effect) {
            case RoomEffect.Send send -> {
                if (!links.send(key, send.message())) {
                    log.debug("room {}: no open control connection for {}", key, send.message());
                }
            }
            case RoomEffect.Post post -> {
                if (room.machine.phase().isTerminal()) {
                    // The room failed while this effect list ran (an earlier plan of it failed at once): a plan of a
                    // failed room is dropped when it would be posted, not only when the link would dequeue it.
                    stats.ignored();
                    log.debug("room {}: dropped chunk {} unposted; the room has ended", key, post.plan().chunk());
                    return;
                }
                post(room, post.plan());
            }
            case RoomEffect.Drain drain -> {
                // plans of the room still queued on the link were never sent: they are dropped, and the drain waits for the rest
                Optional<TransferLink> link = links.link(key);
                link.ifPresent(l -> l.cancel(key));
                CompletableFuture<Void> drained = link.map(l -> l.drain(key)).orElse(CompletableFuture.completedFuture(null));
                drained.whenComplete((ignored, failure) -> {
                    if (failure != null) {
                        // no proof that nothing is in flight: keep the source pages (and the decode's quarantine)
                        log.error("room {}: cannot prove its transfers drained ({}); its pages stay held", key, failure.getMessage());
                        return;
                    }
                    drive(room, new RoomEvent.Drained());
                });
            }
            case RoomEffect.ReleaseSources ignored -> room.sourcesReleased.complete(Optional.ofNullable(room.failure));
            case RoomEffect.Complete ignored -> {
                stats.roomEnded(true);
                stats.kvReady(System.nanoTime() - room.lastForwardNanos);
            }
            case RoomEffect.Fail fail -> {
                stats.roomEnded(false);
                log.info("room {} (request {}) failed: {}", key, room.rid, fail.reason());
                if (!room.endedByRequest) {
                    room.failure = new HandoffFailure(fail.cause(), fail.reason());
                }
                Scheduler current = scheduler;
                if (current != null) {
                    current.abort(room.rid, fail.cause(), fail.reason());
                }
            }
            case RoomEffect.Ignored ignored -> {
                stats.ignored();
                log.debug("room {}: {}", key, ignored.why());
            }
        }
    }

    private void post(Room room, TransferPlan plan)
    {
        Optional<TransferLink> peer = links.link(plan.room());
        if (peer.isEmpty()) {
            drive(room, new RoomEvent.PlanFailed(plan, "the decode registered no regions with this prefill"));
            return;
        }
        if (!plan.fence().isDone() && plan.fence() instanceof io.handoff.core.scheduler.Fence forward) {
            if (!links.sendsEarly(plan.room())) {
                // This connection reports neither FORWARD_SYNC nor STAGING (narrower than its provider): it gets no plan
                // before the plan's forward is done. The plan waits here, not on the connection's transfer thread.
                forward.onComplete(() -> postWhenForwardDone(room, plan));
                return;
            }
        }
        long bytes = (long) plan.pages() * bytesPerPage();
        TransferStats.Plan busy = stats.plan();
        if (!plan.fence().isDone()) {
            stats.earlyBytes(bytes);
        }
        // the link is busy with a plan from when the backend starts reading it (after any fence wait and queueing)
        synchronized (waitingToMove) {
            waitingToMove.computeIfAbsent(plan.room(), r -> new ConcurrentHashMap<>())
                    .computeIfAbsent(plan.chunk(), c -> new java.util.ArrayDeque<>()).add(busy);
        }
        peer.get().post(plan, new PlanListener()
        {
            @Override
            public void completed(TransferPlan done, long moved)
            {
                busy.end(moved, true);
                drive(room, new RoomEvent.PlanCompleted(done));
            }

            @Override
            public void failed(TransferPlan failed, String reason)
            {
                busy.end(0, false);
                drive(room, new RoomEvent.PlanFailed(failed, reason));
            }
        });
    }

    /**
     * Posts a plan held for its forward, off the compute thread that completed the fence. Under the room's lock, as
     * every effect is: either the plan reaches the link before any drain of the room is asked (so the drain waits
     * for it), or the room has ended (its drain may have been answered already) and the plan is dropped unsent.
     */
    private void postWhenForwardDone(Room room, TransferPlan plan)
    {
        try {
            ticker.execute(() -> {
                try {
                    synchronized (room) {
                        if (room.machine.phase().isTerminal()) {
                            log.debug("room {}: dropped chunk {} held for its forward; the room has ended", plan.room(), plan.chunk());
                            return;
                        }
                        post(room, plan);
                    }
                }
                catch (RuntimeException e) {
                    log.error("room {}: posting chunk {} after its forward failed", plan.room(), plan.chunk(), e);
                    drive(room, new RoomEvent.PlanFailed(plan, "posting the chunk after its forward failed: " + e));
                }
            });
        }
        catch (java.util.concurrent.RejectedExecutionException e) {
            log.debug("room {}: chunk {} not posted; this prefill is closing", plan.room(), plan.chunk());
        }
    }

    /** The backend is about to read a plan of this chunk (called on its transfer thread). */
    void movingChunk(RoomKey room, int chunk)
    {
        TransferStats.Plan busy = null;
        synchronized (waitingToMove) {
            Map<Integer, java.util.ArrayDeque<TransferStats.Plan>> chunks = waitingToMove.get(room);
            if (chunks != null && chunks.get(chunk) != null) {
                busy = chunks.get(chunk).poll();
                if (chunks.get(chunk).isEmpty()) {
                    chunks.remove(chunk);
                }
                if (chunks.isEmpty()) {
                    waitingToMove.remove(room);
                }
            }
        }
        if (busy != null) {
            busy.start();
        }
    }

    private long bytesPerPage()
    {
        return checksums.bytesPerPage();
    }

    @Override
    public void close()
    {
        ticker.shutdownNow();
        links.close();
    }
}
