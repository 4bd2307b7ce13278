package io.handoff.core.disagg;

import io.handoff.core.disagg.control.ControlMessage.RoomMessage;
import io.handoff.core.disagg.control.DeadlineClock;
import io.handoff.core.disagg.room.PageChecksums;
import io.handoff.core.disagg.room.ReceiverRoom;
import io.handoff.core.disagg.room.ReleasePolicy;
import io.handoff.core.disagg.room.RoomDeadlines;
import io.handoff.core.disagg.room.RoomEffect;
import io.handoff.core.disagg.room.RoomEffect.Commit;
import io.handoff.core.disagg.room.RoomEffect.Complete;
import io.handoff.core.disagg.room.RoomEffect.Drain;
import io.handoff.core.disagg.room.RoomEffect.MarkReceiving;
import io.handoff.core.disagg.room.RoomEffect.Post;
import io.handoff.core.disagg.room.RoomEffect.Quarantine;
import io.handoff.core.disagg.room.RoomEffect.Release;
import io.handoff.core.disagg.room.RoomEffect.ReleaseQuarantined;
import io.handoff.core.disagg.room.RoomEffect.Send;
import io.handoff.core.disagg.room.RoomEvent;
import io.handoff.core.disagg.room.RoomEvent.Abort;
import io.handoff.core.disagg.room.RoomEvent.ChunkForwarded;
import io.handoff.core.disagg.room.RoomEvent.Drained;
import io.handoff.core.disagg.room.RoomEvent.PeerReady;
import io.handoff.core.disagg.room.RoomEvent.PlanCompleted;
import io.handoff.core.disagg.room.RoomEvent.Received;
import io.handoff.core.disagg.room.RoomEvent.Tick;
import io.handoff.core.disagg.room.RoomTable;
import io.handoff.core.disagg.room.SenderRoom;
import io.handoff.core.kv.PagePool;
import io.handoff.core.kv.PageState;
import io.handoff.core.kv.ReleaseProof;
import io.handoff.spi.transfer.MemoryRegion;
import io.handoff.spi.transfer.ProducerFence;
import io.handoff.spi.transfer.RoomKey;
import io.handoff.spi.transfer.TransferPlan;
import io.handoff.spi.transfer.WriteGuard;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.List;
import java.util.Optional;
import java.util.Random;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Both rooms of a handoff wired together the way the engine wires them, over real KV memory: effects
 * are executed in order, control messages travel through a FIFO (as on one TCP connection), and the
 * "transport" copies page runs between two pools only when the test delivers a plan, so a stalled write is
 * simply a plan the test has not delivered yet. No threads, no sleeps. Tests extend it.
 */
abstract class RoomPairHarness
{
    static final int PAGES = 16;
    static final long STRIDE = 32;
    static final int PAGE_SIZE = 4;
    static final RoomDeadlines DEADLINES = new RoomDeadlines(Duration.ofSeconds(5), Duration.ofSeconds(5), Duration.ofSeconds(5));

    final Arena arena = Arena.ofConfined();
    final DeadlineClock.Manual clock = new DeadlineClock.Manual();
    // one layer, K and V
    final List<MemoryRegion> prefillMemory = regions(new Random(1));
    final List<MemoryRegion> decodeMemory = regions(null);
    final PageChecksums prefillChecksums = new PageChecksums(prefillMemory);
    final PageChecksums decodeChecksums = new PageChecksums(decodeMemory);
    final PagePool decodePool = new PagePool(PAGES);
    final RoomTable<SenderRoom> senders = new RoomTable<>(8, 8);
    final RoomTable<ReceiverRoom> receivers = new RoomTable<>(8, 8);
    final WriteGuard guard = ReceiverRoom.writeGuard(receivers);
    final Deque<Runnable> wire = new ArrayDeque<>();
    final List<TransferPlan> inFlight = new ArrayList<>();
    final List<RoomKey> drainsWaiting = new ArrayList<>();
    final List<RoomEffect.SenderEffect> prefillSaw = new ArrayList<>();
    final List<RoomEffect.ReceiverEffect> decodeSaw = new ArrayList<>();
    // each decode room's effects, for its single outcome
    final java.util.Map<RoomKey, List<RoomEffect.ReceiverEffect>> decodeSawByRoom = new java.util.HashMap<>();
    // a TCP-like transport asks the write guard; a one-sided one writes wherever the plan says
    boolean receiverValidates = true;

    @AfterEach
    void closeMemory()
    {
        arena.close();
    }

    // --- the wiring the engine will have, minus threads and sockets ---

    ReceiverRoom admit(RoomKey key, int promptLength, ReleasePolicy policy)
    {
        ReceiverRoom room = admitUnready(key, promptLength);
        // the connection to this prefill is already up
        receiverEvent(key, new PeerReady(policy));
        return room;
    }

    /** A decode room whose connection to the prefill is not up yet: its pages are not advertised. */
    ReceiverRoom admitUnready(RoomKey key, int promptLength)
    {
        int[] pages = decodePool.allocate(Math.ceilDiv(promptLength, PAGE_SIZE)).orElseThrow();
        ReceiverRoom room = new ReceiverRoom(key, "rid-" + key.roomId(), promptLength, pages, "prefill-1", DEADLINES,
                Optional.of(decodeChecksums::checksum), clock.nanos());
        receivers.register(key, room);
        return room;
    }

    /** The terminal outcomes (Complete or Fail) a decode room announced: exactly one per room that ended. */
    List<RoomEffect.ReceiverEffect> outcomes(RoomKey key)
    {
        return decodeSawByRoom.getOrDefault(key, List.of()).stream()
                .filter(effect -> effect instanceof RoomEffect.Complete || effect instanceof RoomEffect.Fail).toList();
    }

    /** I2: every destination page of a plan not delivered yet is neither free nor owned by another live room. */
    void assertNoPageAWriteMayLandInIsReused()
    {
        for (TransferPlan plan : inFlight) {
            for (int run = 0; run < plan.runs(); run++) {
                for (int page = plan.dstPages()[run]; page < plan.dstPages()[run] + plan.runLengths()[run]; page++) {
                    assertThat(decodePool.state(page)).as("page %d, which %s may still write", page, plan).isNotEqualTo(PageState.FREE);
                    for (ReceiverRoom other : receivers.rooms()) {
                        if (!other.room().equals(plan.room())) {
                            assertThat(other.pages()).as("pages of %s, while %s may still write page %d", other.room(), plan, page)
                                    .doesNotContain(page);
                        }
                    }
                }
            }
        }
    }

    SenderRoom startPrefill(RoomKey key, int promptLength)
    {
        SenderRoom room = new SenderRoom(key, promptLength, PAGE_SIZE, 2, DEADLINES, Optional.of(prefillChecksums::checksum), clock.nanos());
        for (RoomMessage early : senders.register(key, room)) {
            toSender(key, new Received(early));
        }
        pump();
        return room;
    }

    void forward(RoomKey key, ChunkForwarded chunk)
    {
        toSender(key, chunk);
        pump();
    }

    void receiverEvent(RoomKey key, RoomEvent.ForReceiver event)
    {
        ReceiverRoom room = receivers.get(key).orElseThrow();
        for (RoomEffect.ReceiverEffect effect : room.on(event, clock.nanos())) {
            decodeSaw.add(effect);
            decodeSawByRoom.computeIfAbsent(key, k -> new ArrayList<>()).add(effect);
            switch (effect) {
                case Send(RoomMessage message) -> wire.add(() -> senders.route(message).ifPresent(sender -> toSender(key, new Received(message))));
                case MarkReceiving(int[] pages) -> decodePool.markReceiving(pages);
                case Commit(int[] pages) -> decodePool.commitReceived(pages);
                case Release(int[] pages) -> decodePool.release(pages);
                case Quarantine(int[] pages) -> decodePool.quarantine(pages);
                case ReleaseQuarantined(int[] pages, ReleaseProof proof) -> decodePool.releaseQuarantined(pages, proof);
                default -> {}
            }
        }
    }

    void toSender(RoomKey key, RoomEvent.ForSender event)
    {
        SenderRoom room = senders.get(key).orElseThrow();
        for (RoomEffect.SenderEffect effect : room.on(event, clock.nanos())) {
            prefillSaw.add(effect);
            switch (effect) {
                case Send(RoomMessage message) -> wire.add(() -> receivers.route(message).ifPresent(receiver -> receiverEvent(key, new Received(message))));
                case Post(TransferPlan plan) -> inFlight.add(plan);
                case Drain(RoomKey drained) -> {
                    if (inFlight.stream().noneMatch(plan -> plan.room().equals(drained))) {
                        wire.add(() -> toSender(drained, new Drained()));
                    }
                    else {
                        drainsWaiting.add(drained);
                    }
                }
                default -> {}
            }
        }
    }

    void pump()
    {
        while (!wire.isEmpty()) {
            wire.poll().run();
        }
    }

    void deliverAll()
    {
        while (!inFlight.isEmpty()) {
            TransferPlan plan = inFlight.getFirst();
            deliver(plan);
            toSender(plan.room(), new PlanCompleted(plan));
            pump();
        }
    }

    // the transport: copy every run of every region, asking the guard first as a receiver-validated transport does
    void deliver(TransferPlan plan)
    {
        inFlight.remove(plan);
        for (int run = 0; run < plan.runs(); run++) {
            WriteGuard.Permit permit = receiverValidates ? guard.open(plan.room(), plan.dstPages()[run], plan.runLengths()[run]) : () -> {};
            if (permit == null) {
                continue;
            }
            try (permit) {
                for (int region = 0; region < prefillMemory.size(); region++) {
                    MemorySegment.copy(prefillMemory.get(region).segment(), plan.srcPages()[run] * STRIDE,
                            decodeMemory.get(region).segment(), plan.dstPages()[run] * STRIDE, plan.runLengths()[run] * STRIDE);
                }
            }
        }
        if (drainsWaiting.contains(plan.room()) && inFlight.stream().noneMatch(other -> other.room().equals(plan.room()))) {
            drainsWaiting.remove(plan.room());
            wire.add(() -> toSender(plan.room(), new Drained()));
        }
    }

    List<MemoryRegion> regions(Random random)
    {
        List<MemoryRegion> regions = new ArrayList<>();
        for (int r = 0; r < 2; r++) {
            MemorySegment segment = arena.allocate(PAGES * STRIDE, 64);
            if (random != null) {
                byte[] bytes = new byte[(int) segment.byteSize()];
                random.nextBytes(bytes);
                MemorySegment.copy(bytes, 0, segment, ValueLayout.JAVA_BYTE, 0, bytes.length);
            }
            regions.add(new MemoryRegion(r, segment, STRIDE, -1));
        }
        return regions;
    }
}
