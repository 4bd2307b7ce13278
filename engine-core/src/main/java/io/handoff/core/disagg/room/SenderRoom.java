package io.handoff.core.disagg.room;

import io.handoff.core.disagg.control.ControlMessage;
import io.handoff.core.disagg.control.ControlMessage.AuxRecord;
import io.handoff.core.disagg.control.ControlMessage.ChunkDone;
import io.handoff.core.disagg.control.ControlMessage.DrainAck;
import io.handoff.core.disagg.control.ControlMessage.DrainRequest;
import io.handoff.core.disagg.control.ControlMessage.RoomClaim;
import io.handoff.core.disagg.control.ControlMessage.RoomFailed;
import io.handoff.core.disagg.control.ControlMessage.RoomMessage;
import io.handoff.core.disagg.control.ControlMessage.RoomRequest;
import io.handoff.core.disagg.room.RoomEffect.Complete;
import io.handoff.core.disagg.room.RoomEffect.Drain;
import io.handoff.core.disagg.room.RoomEffect.Fail;
import io.handoff.core.disagg.room.RoomEffect.Ignored;
import io.handoff.core.disagg.room.RoomEffect.Post;
import io.handoff.core.disagg.room.RoomEffect.ReleaseSources;
import io.handoff.core.disagg.room.RoomEffect.Send;
import io.handoff.core.disagg.room.RoomEffect.SenderEffect;
import io.handoff.core.disagg.room.RoomEvent.Abort;
import io.handoff.core.disagg.room.RoomEvent.ChunkForwarded;
import io.handoff.core.disagg.room.RoomEvent.Drained;
import io.handoff.core.disagg.room.RoomEvent.PeerLost;
import io.handoff.core.disagg.room.RoomEvent.PlanCompleted;
import io.handoff.core.disagg.room.RoomEvent.PlanFailed;
import io.handoff.core.disagg.room.RoomEvent.Received;
import io.handoff.core.disagg.room.RoomEvent.Tick;
import io.handoff.core.scheduler.Logprobs;
import io.handoff.spi.transfer.RoomKey;
import io.handoff.spi.transfer.TransferPlan;
import io.handoff.trace.FailureCause;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.function.IntUnaryOperator;

import static io.handoff.core.disagg.room.RoomPhase.BOOTSTRAPPING;
import static io.handoff.core.disagg.room.RoomPhase.FAILED;
import static io.handoff.core.disagg.room.RoomPhase.SUCCESS;
import static io.handoff.core.disagg.room.RoomPhase.TRANSFERRING;
import static io.handoff.core.disagg.room.RoomPhase.WAITING_FOR_INPUT;
import static java.util.Objects.requireNonNull;

/**
 * The prefill side of one room: turns forwarded chunks into transfer plans once the decode's pages are
 * known, tells the decode which chunks landed, and sends the aux record after the last data. One
 * transition function, no I/O: {@link #on} returns the effects, which the caller executes in order before
 * it feeds the next event (a {@link RoomEffect.Drain} must not overtake a {@link RoomEffect.Post} emitted
 * before it). Chunks forwarded before the decode's pages arrive are kept and posted when they do.
 *
 * <p>A room waits for its decode in {@link RoomPhase#BOOTSTRAPPING} under the claim allowance; a {@link RoomClaim} (the
 * decode received the request and queues it) moves it to the bootstrapping allowance, counted from the claim, and the
 * room still waits there for the page list.
 *
 * <p>On failure the source pages stay in use until the backend drained the room (a failed plan may still
 * be reading them), and a decode's {@link DrainRequest} is answered only after that drain.
 */
public final class SenderRoom
{
    private record ChunkProgress(int firstPageIndex, int pageCount, int outstandingPlans) {}

    private final RoomKey room;
    private final int promptLength;
    private final int totalPages;
    private final int maxPagesPerPlan;
    private final RoomDeadlines deadlines;
    private final Optional<IntUnaryOperator> pageChecksum;

    private final int[] sourcePages;
    private final List<ChunkForwarded> unposted = new ArrayList<>();
    private final Map<Integer, ChunkProgress> inFlight = new HashMap<>();
    private RoomPhase phase = BOOTSTRAPPING;
    private long deadline;
    private int[] destinationPages;
    // the prompt's leading pages the decode holds already (its prefix cache): never sent
    private int heldPages;
    private int nextChunk;
    private int nextPageIndex;
    private boolean lastForwarded;
    private int firstToken;
    private Optional<Logprobs> logprobs = Optional.empty();
    private int pagesLanded;
    private boolean postedAny;
    private boolean draining;
    private boolean drained;
    private boolean drainAckOwed;
    private boolean sourcesReleased;
    private String failure;
    private FailureCause failureCause;
    // the request id of the decode's claim, while the room waits for its page list
    private String claimedFor;

    /**
     * @param pageChecksum CRC32C of a prefill page (see {@link PageChecksums}), or empty when checksums are off; applied to
     *         every page the room moves (not those the decode holds), on the thread that calls {@link #on}, once the last plan completed (so after every fence)
     */
    public SenderRoom(RoomKey room, int promptLength, int pageSize, int maxPagesPerPlan, RoomDeadlines deadlines,
            Optional<IntUnaryOperator> pageChecksum, long nowNanos)
    {
        this.room = requireNonNull(room, "room is null");
        this.deadlines = requireNonNull(deadlines, "deadlines is null");
        this.pageChecksum = requireNonNull(pageChecksum, "pageChecksum is null");
        if (promptLength < 1 || pageSize < 1 || maxPagesPerPlan < 1) {
            throw new IllegalArgumentException("bad room " + room + ": promptLength=" + promptLength + " pageSize=" + pageSize
                    + " maxPagesPerPlan=" + maxPagesPerPlan);
        }
        this.promptLength = promptLength;
        this.totalPages = Math.ceilDiv(promptLength, pageSize);
        this.maxPagesPerPlan = maxPagesPerPlan;
        this.sourcePages = new int[totalPages];
        // a sender leaves BOOTSTRAPPING only when the decode's page list arrives, and does not return to it
        this.deadline = nowNanos + deadlines.claim().toNanos();
    }

    public RoomKey room()
    {
        return room;
    }

    public synchronized RoomPhase phase()
    {
        return phase;
    }

    /**
     * Terminal, with no drain running and no drain ack owed: nothing more will be sent for it, so it may be retired. A
     * room that still owes a decode its drain ack must stay reachable until the ack went out, or the decode's
     * quarantined pages would wait for it forever.
     */
    public synchronized boolean isSettled()
    {
        return phase.isTerminal() && !draining && !drainAckOwed;
    }

    /** When {@link RoomEvent.Tick} fails the room; {@link Long#MAX_VALUE} once it is terminal. */
    public synchronized long deadlineNanos()
    {
        return phase.isTerminal() ? Long.MAX_VALUE : deadline;
    }

    public synchronized Optional<String> failure()
    {
        return Optional.ofNullable(failure);
    }

    /** Why the room failed, as the peer was (or is) told; empty unless it failed. */
    public synchronized Optional<ControlMessage.RoomFailed> failureNotice()
    {
        return failure == null ? Optional.empty() : Optional.of(new RoomFailed(room, failureCause, failure));
    }

    /** The single transition function. */
    public synchronized List<SenderEffect> on(RoomEvent.ForSender event, long nowNanos)
    {
        requireNonNull(event, "event is null");
        List<SenderEffect> effects = new ArrayList<>();
        switch (event) {
            case Received(RoomMessage message) -> onMessage(message, nowNanos, effects);
            case ChunkForwarded chunk -> onChunkForwarded(chunk, nowNanos, effects);
            case PlanCompleted(TransferPlan plan) -> onPlanCompleted(plan, nowNanos, effects);
            case PlanFailed(TransferPlan plan, String reason) -> {
                if (!phase.isTerminal() && plan.room().equals(room)) {
                    fail(FailureCause.TRANSPORT_FAILURE, "transfer of chunk " + plan.chunk() + " (pages " + plan.firstPageIndex() + ".."
                            + (plan.firstPageIndex() + plan.pages() - 1) + ") failed: " + reason, true, effects);
                }
                else {
                    effects.add(new Ignored("plan failure for " + plan.room() + " after room " + room + " ended " + phase));
                }
            }
            case Drained() when !draining -> effects.add(new Ignored("drained, but room " + room + " did not ask for a drain"));
            case Drained() -> {
                draining = false;
                drained = true;
                releaseSources(effects);
                ackDrainIfOwed(effects);
            }
            case Abort(FailureCause cause, String reason) -> failIfLive(cause, "aborted: " + reason, true, effects);
            case PeerLost(FailureCause cause, String reason) -> failIfLive(cause, "lost the decode: " + reason, false, effects);
            case Tick() -> {
                if (phase == BOOTSTRAPPING && claimedFor == null && nowNanos - deadline >= 0) {
                    fail(FailureCause.ROOM_UNCLAIMED, unclaimed(), true, effects);
                }
                else if (phase == BOOTSTRAPPING && nowNanos - deadline >= 0) {
                    fail(FailureCause.DEADLINE, "the decode claimed room " + room + " for request " + claimedFor + " but sent no page list within "
                            + deadlines.bootstrapping().toMillis() + " ms of the claim (handoff.disaggregation.bootstrapping-timeout): it "
                            + "queued the request that long, or lost it", true, effects);
                }
                else if (!phase.isTerminal() && nowNanos - deadline >= 0) {
                    fail(FailureCause.DEADLINE, "room " + room + " timed out after " + deadlines.nanos(phase) / 1_000_000 + " ms in " + phase, true,
                            effects);
                }
            }
        }
        return effects;
    }

    private void onMessage(RoomMessage message, long now, List<SenderEffect> effects)
    {
        if (!message.room().equals(room)) {
            effects.add(new Ignored("message for room " + message.room() + " reached room " + room));
            return;
        }
        switch (message) {
            case RoomRequest request -> onRoomRequest(request, now, effects);
            case RoomClaim claim -> onClaim(claim, now, effects);
            case RoomFailed failed -> failIfLive(failed.cause(), "the decode failed the room: " + failed.reason(), false, effects);
            case DrainRequest _ -> {
                drainAckOwed = true;
                if (!phase.isTerminal()) {
                    // the decode only asks for a drain once it gave up on the room
                    fail(FailureCause.ENGINE, "the decode gave up on the room and asked for a drain", false, effects);
                }
                else if (!postedAny || drained) {
                    ackDrainIfOwed(effects);
                }
                else if (!draining) {
                    draining = true;
                    effects.add(new Drain(room));
                }
            }
            case ChunkDone _, ControlMessage.AuxRecord _, DrainAck _ -> effects.add(new Ignored("a prefill does not expect " + message));
        }
    }

    private void onClaim(RoomClaim claim, long now, List<SenderEffect> effects)
    {
        if (phase != BOOTSTRAPPING) {
            effects.add(new Ignored(claim + " in " + phase + ": the page list arrived, or the room ended"));
        }
        else if (claimedFor != null) {
            effects.add(new Ignored("duplicate " + claim));
        }
        else {
            // still BOOTSTRAPPING: the decode holds the request and sends its pages once it admitted it
            claimedFor = claim.requestId();
            deadline = now + deadlines.nanos(BOOTSTRAPPING);
        }
    }

    private void onRoomRequest(RoomRequest request, long now, List<SenderEffect> effects)
    {
        if (destinationPages != null && heldPages == request.heldPages() && Arrays.equals(destinationPages, request.destinationPages())) {
            effects.add(new Ignored("duplicate " + request));
            return;
        }
        if (phase == FAILED) {
            // the room failed before the page list came (unclaimed in time, aborted): tell the decode now, on the connection
            // the page list came on, or it would wait its whole waiting-for-input deadline for data that never comes
            effects.add(new Send(new RoomFailed(room, failureCause, failure)));
            return;
        }
        if (phase.isTerminal()) {
            effects.add(new Ignored(request + " after the room ended " + phase));
            return;
        }
        if (destinationPages != null) {
            fail(FailureCause.TRANSPORT_FAILURE, "the decode sent a second, different page list for the room", true, effects);
            return;
        }
        if (request.promptLength() != promptLength || request.heldPages() >= totalPages
                || request.destinationPages().length != totalPages - request.heldPages()) {
            fail(FailureCause.TRANSPORT_FAILURE, "the decode holds " + request.heldPages() + " and granted " + request.destinationPages().length
                    + " pages for a prompt of " + request.promptLength() + " tokens; this prefill has " + promptLength + " tokens in " + totalPages
                    + " pages, and at least the last one moves", true, effects);
            return;
        }
        heldPages = request.heldPages();
        destinationPages = request.destinationPages().clone();
        enter(WAITING_FOR_INPUT, now);
        for (ChunkForwarded chunk : unposted) {
            post(chunk, now, effects);
        }
        unposted.clear();
        finishIfDone(effects);
    }

    private void onChunkForwarded(ChunkForwarded chunk, long now, List<SenderEffect> effects)
    {
        if (phase.isTerminal()) {
            effects.add(new Ignored("chunk " + chunk.chunk() + " forwarded after the room ended " + phase));
            return;
        }
        int pages = chunk.sourcePages().length;
        String violation = null;
        if (lastForwarded) {
            violation = "chunk " + chunk.chunk() + " forwarded after the last chunk";
        }
        else if (chunk.chunk() != nextChunk || chunk.firstPageIndex() != nextPageIndex) {
            violation = "chunk " + chunk.chunk() + " starts at page " + chunk.firstPageIndex() + ", expected chunk " + nextChunk
                    + " at page " + nextPageIndex;
        }
        else if (chunk.last() ? nextPageIndex + pages != totalPages : pages == 0 || nextPageIndex + pages > totalPages) {
            violation = "chunk " + chunk.chunk() + (chunk.last() ? " (last)" : "") + " covers pages " + nextPageIndex + ".."
                    + (nextPageIndex + pages - 1) + " of a room of " + totalPages + " pages";
        }
        if (violation != null) {
            fail(FailureCause.TRANSPORT_FAILURE, violation, true, effects);
            return;
        }
        System.arraycopy(chunk.sourcePages(), 0, sourcePages, nextPageIndex, pages);
        nextChunk++;
        nextPageIndex += pages;
        if (chunk.last()) {
            lastForwarded = true;
            firstToken = chunk.firstToken();
            logprobs = chunk.logprobs();
        }
        if (destinationPages == null) {
            unposted.add(chunk);
            return;
        }
        post(chunk, now, effects);
        finishIfDone(effects);
    }

    /** Posts the chunk's pages the decode does not hold: a page it holds is never written. */
    private void post(ChunkForwarded chunk, long now, List<SenderEffect> effects)
    {
        int skip = Math.clamp(heldPages - chunk.firstPageIndex(), 0, chunk.sourcePages().length);
        if (skip == chunk.sourcePages().length) {
            return;
        }
        int first = chunk.firstPageIndex() + skip;
        int[] sources = Arrays.copyOfRange(chunk.sourcePages(), skip, chunk.sourcePages().length);
        int[] destinations = Arrays.copyOfRange(destinationPages, first - heldPages, first - heldPages + sources.length);
        List<TransferPlan> plans = TransferPlanner.plan(room, chunk.chunk(), first, sources, destinations, maxPagesPerPlan, chunk.fence());
        if (plans.isEmpty()) {
            return;
        }
        inFlight.put(chunk.chunk(), new ChunkProgress(first, sources.length, plans.size()));
        postedAny = true;
        for (TransferPlan plan : plans) {
            effects.add(new Post(plan));
        }
        enter(TRANSFERRING, now);
    }

    private void onPlanCompleted(TransferPlan plan, long now, List<SenderEffect> effects)
    {
        ChunkProgress progress = inFlight.get(plan.chunk());
        if (phase.isTerminal() || !plan.room().equals(room) || progress == null) {
            effects.add(new Ignored("completion of chunk " + plan.chunk() + " for " + plan.room() + " in room " + room + " (" + phase + ")"));
            return;
        }
        if (progress.outstandingPlans() > 1) {
            inFlight.put(plan.chunk(), new ChunkProgress(progress.firstPageIndex(), progress.pageCount(), progress.outstandingPlans() - 1));
            enter(TRANSFERRING, now);
            return;
        }
        inFlight.remove(plan.chunk());
        pagesLanded += progress.pageCount();
        effects.add(new Send(new ChunkDone(room, plan.chunk(), progress.firstPageIndex(), progress.pageCount())));
        enter(inFlight.isEmpty() ? WAITING_FOR_INPUT : TRANSFERRING, now);
        finishIfDone(effects);
    }

    // success once the last chunk was forwarded and every page landed: the aux record commits the room
    private void finishIfDone(List<SenderEffect> effects)
    {
        if (phase.isTerminal() || !lastForwarded || destinationPages == null || pagesLanded != totalPages - heldPages || !inFlight.isEmpty()) {
            return;
        }
        // the checksums cover what moved
        int[] checksums = pageChecksum.map(checksum -> {
            int[] values = new int[totalPages - heldPages];
            for (int i = 0; i < values.length; i++) {
                values[i] = checksum.applyAsInt(sourcePages[heldPages + i]);
            }
            return values;
        }).orElse(new int[0]);
        phase = SUCCESS;
        effects.add(new Send(new AuxRecord(room, firstToken, promptLength, checksums, logprobs)));
        releaseSources(effects);
        effects.add(new Complete(firstToken, logprobs));
    }

    private String unclaimed()
    {
        return "no decode claimed room " + room.roomId() + " (generation " + room.generation() + ") within "
                + deadlines.claim().toMillis() + " ms (handoff.disaggregation.claim-timeout): a prefill serves a bootstrap_room only to a decode "
                + "that claims it, and a decode claims the room the router sends it with the same request. Send requests that carry "
                + "bootstrap fields through the router (handoff router), or leave the fields out";
    }

    private void failIfLive(FailureCause cause, String reason, boolean tellPeer, List<SenderEffect> effects)
    {
        if (phase.isTerminal()) {
            effects.add(new Ignored("room " + room + " already ended " + phase + "; not failing it for: " + reason));
        }
        else {
            fail(cause, reason, tellPeer, effects);
        }
    }

    private void fail(FailureCause cause, String reason, boolean tellPeer, List<SenderEffect> effects)
    {
        phase = FAILED;
        failure = reason;
        failureCause = cause;
        unposted.clear();
        if (tellPeer) {
            effects.add(new Send(new RoomFailed(room, cause, reason)));
        }
        effects.add(new Fail(reason, cause));
        if (postedAny) {
            // a posted plan may still be reading the source pages and writing the decode's: drain first
            draining = true;
            effects.add(new Drain(room));
        }
        else {
            drained = true;
            releaseSources(effects);
            ackDrainIfOwed(effects);
        }
    }

    private void releaseSources(List<SenderEffect> effects)
    {
        if (!sourcesReleased) {
            sourcesReleased = true;
            effects.add(new ReleaseSources());
        }
    }

    private void ackDrainIfOwed(List<SenderEffect> effects)
    {
        if (drainAckOwed) {
            drainAckOwed = false;
            effects.add(new Send(new DrainAck(room)));
        }
    }

    private void enter(RoomPhase next, long now)
    {
        phase = next;
        deadline = now + deadlines.nanos(next);
    }
}
