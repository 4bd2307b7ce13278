package io.handoff.core.disagg.room;

import io.handoff.core.disagg.control.ControlMessage;
import io.handoff.core.disagg.control.ControlMessage.AuxRecord;
import io.handoff.core.disagg.control.ControlMessage.ChunkDone;
import io.handoff.core.disagg.control.ControlMessage.DrainAck;
import io.handoff.core.disagg.control.ControlMessage.DrainRequest;
import io.handoff.core.disagg.control.ControlMessage.RoomFailed;
import io.handoff.core.disagg.control.ControlMessage.RoomMessage;
import io.handoff.core.disagg.control.ControlMessage.RoomRequest;
import io.handoff.core.disagg.room.RoomEffect.Commit;
import io.handoff.core.disagg.room.RoomEffect.Complete;
import io.handoff.core.disagg.room.RoomEffect.Fail;
import io.handoff.core.disagg.room.RoomEffect.Ignored;
import io.handoff.core.disagg.room.RoomEffect.MarkReceiving;
import io.handoff.core.disagg.room.RoomEffect.Quarantine;
import io.handoff.core.disagg.room.RoomEffect.ReceiverEffect;
import io.handoff.core.disagg.room.RoomEffect.Release;
import io.handoff.core.disagg.room.RoomEffect.ReleaseQuarantined;
import io.handoff.core.disagg.room.RoomEffect.Send;
import io.handoff.core.disagg.room.RoomEvent.Abort;
import io.handoff.core.disagg.room.RoomEvent.PeerFenced;
import io.handoff.core.disagg.room.RoomEvent.PeerLost;
import io.handoff.core.disagg.room.RoomEvent.PeerReady;
import io.handoff.core.disagg.room.RoomEvent.Received;
import io.handoff.core.disagg.room.RoomEvent.Tick;
import io.handoff.core.kv.ReleaseProof;
import io.handoff.spi.transfer.RoomKey;
import io.handoff.spi.transfer.WriteGuard;
import io.handoff.trace.FailureCause;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.BitSet;
import java.util.List;
import java.util.Optional;
import java.util.function.IntUnaryOperator;

import static io.handoff.core.disagg.room.RoomPhase.BOOTSTRAPPING;
import static io.handoff.core.disagg.room.RoomPhase.FAILED;
import static io.handoff.core.disagg.room.RoomPhase.SUCCESS;
import static io.handoff.core.disagg.room.RoomPhase.TRANSFERRING;
import static io.handoff.core.disagg.room.RoomPhase.WAITING_FOR_INPUT;
import static java.util.Objects.requireNonNull;

/**
 * The decode side of one room: advertises the request's destination pages once the connection to the
 * prefill is ready, tracks which pages landed, and commits only on an aux record whose room, generation,
 * prompt length and per-page checksums match (invariant I3), and whose log probabilities have the shape the request
 * implies ({@link AuxLogprobs}). One transition function, no I/O: {@link #on}
 * returns the effects for the caller to execute in order.
 *
 * <p>After a failure the pages follow the connection's {@link ReleasePolicy} (invariant I2): released at
 * once when the pages were never advertised or the transport validates writes on the receiver, otherwise
 * quarantined until a drain ack or a fenced peer proves that no write can land. The room stays
 * {@link RoomPhase#FAILED} meanwhile; it is {@linkplain #isSettled settled} (and may be dropped) only once
 * its pages are accounted for. No timer ever releases a page.
 */
public final class ReceiverRoom
{
    private final RoomKey room;
    private final String requestId;
    private final int promptLength;
    // the prompt's leading pages this decode holds already (its prefix cache): not part of the room, never written
    private final int heldPages;
    // the pages the room receives: room-relative page heldPages + i lands in pages[i]
    private final int[] pages;
    // sorted copy of the granted pages for the write guard, which backend threads read without the lock
    private final int[] grantedSorted;
    private final String peer;
    private final RoomDeadlines deadlines;
    private final Optional<IntUnaryOperator> pageChecksum;
    private final int senderRanks;
    private final AuxLogprobs logprobs;

    private final BitSet landed;
    // the sender ranks whose drain ack arrived: the pages go back only once every rank acked (or the peer is fenced)
    private final BitSet drainAcked;
    // acceptingWrites and openWrites change together under writeLock: a permit is given only while the room
    // accepts writes, and a retired room counts the permits still open before its pages may go back
    private final Object writeLock = new Object();
    private boolean acceptingWrites;
    private int openWrites;
    private Runnable writesSettled = () -> {};
    private RoomPhase phase = BOOTSTRAPPING;
    private long deadline;
    private ReleasePolicy policy;
    private AuxRecord heldAux;
    private boolean awaitingProof;
    private String failure;

    /**
     * @param pages the request's destination pages, allocated (OWNED, one owner) and not yet marked receiving
     * @param peer the prefill, as the caller names it (reported in a {@link ReleaseProof.PeerFenced})
     * @param pageChecksum CRC32C of a decode page (see {@link PageChecksums}), or empty when checksums are off
     */
    public ReceiverRoom(RoomKey room, String requestId, int promptLength, int[] pages, String peer, RoomDeadlines deadlines,
            Optional<IntUnaryOperator> pageChecksum, long nowNanos)
    {
        this(room, requestId, promptLength, pages, peer, deadlines, pageChecksum, 1, nowNanos);
    }

    /**
     * A room written by {@code senderRanks} sender ranks (ranks {@code 0 .. senderRanks-1}), each of which must ack the
     * drain before a drain ack proves anything.
     */
    public ReceiverRoom(RoomKey room, String requestId, int promptLength, int[] pages, String peer, RoomDeadlines deadlines,
            Optional<IntUnaryOperator> pageChecksum, int senderRanks, long nowNanos)
    {
        this(room, requestId, promptLength, 0, pages, peer, deadlines, pageChecksum, senderRanks, AuxLogprobs.none(), nowNanos);
    }

    /** A room of one sender rank whose aux record must carry {@code logprobs}' shape of log probabilities. */
    public ReceiverRoom(RoomKey room, String requestId, int promptLength, int[] pages, String peer, RoomDeadlines deadlines,
            Optional<IntUnaryOperator> pageChecksum, AuxLogprobs logprobs, long nowNanos)
    {
        this(room, requestId, promptLength, 0, pages, peer, deadlines, pageChecksum, 1, logprobs, nowNanos);
    }

    /**
     * A room of one sender rank for the part of the prompt past the {@code heldPages} leading pages this decode holds already:
     * {@code pages} receive the rest, the prefill sends only those, and the aux record's checksums cover only those.
     */
    public ReceiverRoom(RoomKey room, String requestId, int promptLength, int heldPages, int[] pages, String peer, RoomDeadlines deadlines,
            Optional<IntUnaryOperator> pageChecksum, AuxLogprobs logprobs, long nowNanos)
    {
        this(room, requestId, promptLength, heldPages, pages, peer, deadlines, pageChecksum, 1, logprobs, nowNanos);
    }

    private ReceiverRoom(RoomKey room, String requestId, int promptLength, int heldPages, int[] pages, String peer, RoomDeadlines deadlines,
            Optional<IntUnaryOperator> pageChecksum, int senderRanks, AuxLogprobs logprobs, long nowNanos)
    {
        this.logprobs = requireNonNull(logprobs, "logprobs is null");
        if (senderRanks < 1 || senderRanks > ControlMessage.MAX_SENDER_RANK + 1) {
            throw new IllegalArgumentException("room " + room + " needs 1 to " + (ControlMessage.MAX_SENDER_RANK + 1) + " sender ranks, got "
                    + senderRanks);
        }
        this.senderRanks = senderRanks;
        this.drainAcked = new BitSet(senderRanks);
        this.room = requireNonNull(room, "room is null");
        this.requestId = requireNonNull(requestId, "requestId is null");
        this.peer = requireNonNull(peer, "peer is null");
        this.deadlines = requireNonNull(deadlines, "deadlines is null");
        this.pageChecksum = requireNonNull(pageChecksum, "pageChecksum is null");
        this.pages = requireNonNull(pages, "pages is null").clone();
        if (promptLength < 1 || pages.length == 0) {
            throw new IllegalArgumentException("room " + room + " needs a prompt and pages: promptLength=" + promptLength + " pages=" + pages.length);
        }
        if (heldPages < 0) {
            throw new IllegalArgumentException("room " + room + " holds " + heldPages + " pages");
        }
        this.promptLength = promptLength;
        this.heldPages = heldPages;
        this.grantedSorted = this.pages.clone();
        Arrays.sort(grantedSorted);
        this.landed = new BitSet(pages.length);
        this.deadline = nowNanos + deadlines.nanos(BOOTSTRAPPING);
    }

    /** A write guard over the rooms a decode currently has: a write lands only in pages granted to a live room of its generation. */
    public static WriteGuard writeGuard(RoomTable<ReceiverRoom> rooms)
    {
        requireNonNull(rooms, "rooms is null");
        return (room, page, count) -> rooms.get(room).map(receiver -> receiver.openWrite(page, count)).orElse(null);
    }

    /** Called (on a backend thread) when a retired room's last open write has landed; the caller then feeds {@link RoomEvent.WritesSettled}. */
    public void onWritesSettled(Runnable listener)
    {
        this.writesSettled = requireNonNull(listener, "listener is null");
    }

    /** A permit for a write into pages {@code page .. page+count-1}, or null when {@link #admits} says no. */
    public WriteGuard.Permit openWrite(int page, int count)
    {
        synchronized (writeLock) {
            if (!admits(page, count)) {
                return null;
            }
            openWrites++;
        }
        return this::closeWrite;
    }

    private void closeWrite()
    {
        boolean settled;
        synchronized (writeLock) {
            openWrites--;
            settled = openWrites == 0 && !acceptingWrites;
        }
        if (settled) {
            writesSettled.run();
        }
    }

    private void stopWrites()
    {
        synchronized (writeLock) {
            acceptingWrites = false;
        }
    }

    private boolean writesInFlight()
    {
        synchronized (writeLock) {
            return openWrites > 0;
        }
    }

    public RoomKey room()
    {
        return room;
    }

    public String peer()
    {
        return peer;
    }

    public int[] pages()
    {
        return pages.clone();
    }

    public synchronized RoomPhase phase()
    {
        return phase;
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

    /** Terminal, and its pages are committed, released, or back in the pool: nothing more will happen to it. */
    public synchronized boolean isSettled()
    {
        return phase.isTerminal() && !awaitingProof;
    }

    /** Ended, and its pages are quarantined: they wait for a proof that no write of the prefill can land. */
    public synchronized boolean awaitsProof()
    {
        return phase.isTerminal() && awaitingProof;
    }

    /** Failed, and its pages wait for a drain ack (the prefill may be asked again, e.g. on a new connection). */
    public synchronized boolean awaitsDrainAck()
    {
        return phase == FAILED && awaitingProof && policy == ReleasePolicy.AWAIT_DRAIN_ACK;
    }

    /** Whether a write into pages {@code page .. page+count-1} may land now: the room is live, advertised, and owns them. */
    public boolean admits(int page, int count)
    {
        boolean accepting;
        synchronized (writeLock) {
            accepting = acceptingWrites;
        }
        if (!accepting || count < 1) {
            return false;
        }
        for (long p = page; p < (long) page + count; p++) {
            if (p > Integer.MAX_VALUE || Arrays.binarySearch(grantedSorted, (int) p) < 0) {
                return false;
            }
        }
        return true;
    }

    /** The single transition function. */
    public synchronized List<ReceiverEffect> on(RoomEvent.ForReceiver event, long nowNanos)
    {
        requireNonNull(event, "event is null");
        List<ReceiverEffect> effects = new ArrayList<>();
        switch (event) {
            case PeerReady(ReleasePolicy releasePolicy) when phase == BOOTSTRAPPING -> {
                policy = releasePolicy;
                enter(WAITING_FOR_INPUT, nowNanos);
                synchronized (writeLock) {
                    acceptingWrites = true;
                }
                effects.add(new MarkReceiving(pages.clone()));
                effects.add(new Send(new RoomRequest(room, requestId, promptLength, heldPages, pages.clone())));
            }
            case PeerReady _ -> effects.add(new Ignored("peer ready again for room " + room + " in " + phase));
            case Received(RoomMessage message) -> onMessage(message, nowNanos, effects);
            case Abort(FailureCause cause, String reason) -> failIfLive(cause, "aborted: " + reason, true, true, effects);
            case PeerLost(FailureCause cause, String reason) -> failIfLive(cause, "lost the prefill: " + reason, false, false, effects);
            case PeerFenced(String how) -> {
                failIfLive(FailureCause.PEER_LOST, "the prefill was fenced: " + how, false, false, effects);
                if (awaitingProof) {
                    awaitingProof = false;
                    effects.add(new ReleaseQuarantined(pages.clone(), new ReleaseProof.PeerFenced(peer, how)));
                }
            }
            case RoomEvent.WritesSettled() -> {
                if (awaitingProof && policy == ReleasePolicy.RELEASE_NOW && !writesInFlight()) {
                    awaitingProof = false;
                    effects.add(new ReleaseQuarantined(pages.clone(), new ReleaseProof.ReceiverValidated(room.roomId(), room.generation())));
                }
                else {
                    effects.add(new Ignored("writes settled for room " + room + " in " + phase));
                }
            }
            case Tick() -> {
                if (!phase.isTerminal() && nowNanos - deadline >= 0) {
                    fail(FailureCause.DEADLINE, "room " + room + " timed out after " + deadlines.nanos(phase) / 1_000_000 + " ms in " + phase, true,
                            true, effects);
                }
            }
        }
        return effects;
    }

    private void onMessage(RoomMessage message, long now, List<ReceiverEffect> effects)
    {
        if (!message.room().equals(room)) {
            effects.add(new Ignored("message for room " + message.room() + " reached room " + room));
            return;
        }
        switch (message) {
            case RoomFailed failed -> failIfLive(failed.cause(), "the prefill failed the room: " + failed.reason(), false, true, effects);
            case DrainAck ack when awaitingProof && policy == ReleasePolicy.AWAIT_DRAIN_ACK -> onDrainAck(ack, effects);
            case DrainAck _ -> effects.add(new Ignored("drain ack for room " + room + " that awaits none (" + phase + ", " + policy + ")"));
            case ChunkDone chunk when phase.isTerminal() -> effects.add(new Ignored(chunk + " after the room ended " + phase));
            case AuxRecord aux when phase.isTerminal() -> effects.add(new Ignored(aux + " after the room ended " + phase));
            case ChunkDone _, AuxRecord _ when phase == BOOTSTRAPPING -> fail(FailureCause.TRANSPORT_FAILURE, "protocol violation: " + message
                    + " before this decode sent its pages", true, true, effects);
            case ChunkDone chunk -> onChunkDone(chunk, now, effects);
            case AuxRecord aux when heldAux != null -> effects.add(new Ignored("duplicate " + aux));
            case AuxRecord aux -> {
                heldAux = aux;
                // the aux record commits only what landed: hold it until every page has
                commitIfComplete(effects);
            }
            case RoomRequest _, ControlMessage.RoomClaim _, DrainRequest _ -> effects.add(new Ignored("a decode does not expect " + message));
        }
    }

    // the pages go back once every sender rank drained: one rank's ack says nothing about another's writes
    private void onDrainAck(DrainAck ack, List<ReceiverEffect> effects)
    {
        if (ack.senderRank() >= senderRanks) {
            effects.add(new Ignored("drain ack of sender rank " + ack.senderRank() + " for room " + room + ", which has " + senderRanks + " sender ranks"));
            return;
        }
        if (drainAcked.get(ack.senderRank())) {
            effects.add(new Ignored("duplicate drain ack of sender rank " + ack.senderRank() + " for room " + room));
            return;
        }
        drainAcked.set(ack.senderRank());
        if (drainAcked.cardinality() < senderRanks) {
            return;
        }
        awaitingProof = false;
        // the proof names the rank whose ack completed the set
        effects.add(new ReleaseQuarantined(pages.clone(), new ReleaseProof.DrainAck(room.roomId(), room.generation(), ack.senderRank())));
    }

    private void onChunkDone(ChunkDone chunk, long now, List<ReceiverEffect> effects)
    {
        long end = (long) chunk.firstPageIndex() + chunk.pageCount();
        if (chunk.firstPageIndex() < heldPages || end > heldPages + pages.length) {
            fail(FailureCause.TRANSPORT_FAILURE, "protocol violation: chunk " + chunk.chunk() + " covers pages " + chunk.firstPageIndex() + ".." + (end - 1)
                    + " of a room whose pages " + heldPages + ".." + (heldPages + pages.length - 1) + " move", true, true, effects);
            return;
        }
        int before = landed.cardinality();
        landed.set(chunk.firstPageIndex() - heldPages, (int) end - heldPages);
        if (landed.cardinality() == before) {
            effects.add(new Ignored("duplicate " + chunk));
            return;
        }
        enter(TRANSFERRING, now);
        commitIfComplete(effects);
    }

    private void commitIfComplete(List<ReceiverEffect> effects)
    {
        if (heldAux == null || landed.cardinality() != pages.length) {
            return;
        }
        Invalid invalid = validate(heldAux);
        if (invalid != null) {
            fail(invalid.cause(), invalid.reason(), true, true, effects);
            return;
        }
        phase = SUCCESS;
        stopWrites();
        effects.add(new Commit(pages.clone()));
        effects.add(new Complete(heldAux.firstToken(), heldAux.logprobs()));
    }

    private record Invalid(FailureCause cause, String reason) {}

    // why the aux record may not commit this room, or null when it may
    private Invalid validate(AuxRecord aux)
    {
        if (aux.promptLength() != promptLength) {
            return new Invalid(FailureCause.TRANSPORT_FAILURE, "aux record for a prompt of " + aux.promptLength() + " tokens; this decode expects " + promptLength);
        }
        Optional<String> badLogprobs = logprobs.violation(aux.firstToken(), aux.logprobs());
        if (badLogprobs.isPresent()) {
            return new Invalid(FailureCause.TRANSPORT_FAILURE, "protocol violation: " + badLogprobs.get());
        }
        int[] expected = aux.pageChecksums();
        if (pageChecksum.isEmpty()) {
            // this decode does not check (handoff.debug.kv-fidelity = off)
            return null;
        }
        if (expected.length == 0) {
            // no exemption: a peer that could skip the check would choose this room's first token and KV unseen
            // a configuration mismatch: running it again on the same pair fails the same way
            return new Invalid(FailureCause.HANDSHAKE_REFUSED, "aux record carries no page checksums, but this decode verifies every page "
                    + "(handoff.debug.kv-fidelity = checksum); is the prefill's kv-fidelity off? set it the same on both");
        }
        if (expected.length != pages.length) {
            return new Invalid(FailureCause.CHECKSUM_MISMATCH, "aux record carries " + expected.length + " page checksums for a room of "
                    + pages.length + " pages");
        }
        IntUnaryOperator checksum = pageChecksum.get();
        for (int i = 0; i < pages.length; i++) {
            int actual = checksum.applyAsInt(pages[i]);
            if (actual != expected[i]) {
                return new Invalid(FailureCause.CHECKSUM_MISMATCH, "KV checksum mismatch on room page " + (heldPages + i) + " (decode page " + pages[i]
                        + "): prefill sent 0x" + Integer.toHexString(expected[i]) + ", decode holds 0x" + Integer.toHexString(actual)
                        + "; the transferred KV is corrupt");
            }
        }
        return null;
    }

    private void failIfLive(FailureCause cause, String reason, boolean tellPeer, boolean peerReachable, List<ReceiverEffect> effects)
    {
        if (phase.isTerminal()) {
            effects.add(new Ignored("room " + room + " already ended " + phase + "; not failing it for: " + reason));
        }
        else {
            fail(cause, reason, tellPeer, peerReachable, effects);
        }
    }

    private void fail(FailureCause cause, String reason, boolean tellPeer, boolean peerReachable, List<ReceiverEffect> effects)
    {
        // the guard refuses from here on, before any page is given back
        stopWrites();
        boolean advertised = phase != BOOTSTRAPPING;
        phase = FAILED;
        failure = reason;
        if (tellPeer) {
            effects.add(new Send(new RoomFailed(room, cause, reason)));
        }
        effects.add(new Fail(reason, cause));
        if (!advertised) {
            // no writer knows these pages
            effects.add(new Release(pages.clone()));
            return;
        }
        effects.add(new Quarantine(pages.clone()));
        switch (policy) {
            case RELEASE_NOW -> {
                if (writesInFlight()) {
                    // a write the guard admitted before the room was retired is still streaming in: wait for it to land
                    awaitingProof = true;
                }
                else {
                    effects.add(new ReleaseQuarantined(pages.clone(), new ReleaseProof.ReceiverValidated(room.roomId(), room.generation())));
                }
            }
            case AWAIT_DRAIN_ACK -> {
                awaitingProof = true;
                if (peerReachable) {
                    // sent after RoomFailed on the same channel, so the prefill has stopped posting before it drains
                    effects.add(new Send(new DrainRequest(room)));
                }
            }
            case AWAIT_PEER_FENCE -> awaitingProof = true;
        }
    }

    private void enter(RoomPhase next, long now)
    {
        phase = next;
        deadline = now + deadlines.nanos(next);
    }
}
