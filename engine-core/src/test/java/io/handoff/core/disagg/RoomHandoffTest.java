package io.handoff.core.disagg;

import io.handoff.core.disagg.ControlMessage.RoomMessage;
import io.handoff.core.disagg.RoomEffect.Commit;
import io.handoff.core.disagg.RoomEffect.Complete;
import io.handoff.core.disagg.RoomEffect.Drain;
import io.handoff.core.disagg.RoomEffect.MarkReceiving;
import io.handoff.core.disagg.RoomEffect.Post;
import io.handoff.core.disagg.RoomEffect.Quarantine;
import io.handoff.core.disagg.RoomEffect.Release;
import io.handoff.core.disagg.RoomEffect.ReleaseQuarantined;
import io.handoff.core.disagg.RoomEffect.Send;
import io.handoff.core.disagg.RoomEvent.Abort;
import io.handoff.core.disagg.RoomEvent.ChunkForwarded;
import io.handoff.core.disagg.RoomEvent.Drained;
import io.handoff.core.disagg.RoomEvent.PeerReady;
import io.handoff.core.disagg.RoomEvent.PlanCompleted;
import io.handoff.core.disagg.RoomEvent.Received;
import io.handoff.core.disagg.RoomEvent.Tick;
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
 * Both rooms of a handoff wired together the way the engine will wire them, over real KV memory: effects
 * are executed in order, control messages travel through a FIFO (as on one TCP connection), and the
 * "transport" copies page runs between two pools only when the test delivers a plan, so a stalled write is
 * simply a plan the test has not delivered yet. No threads, no sleeps.
 */
class RoomHandoffTest
{
    static final int PAGES = 16;
    static final long STRIDE = 32;
    static final int PAGE_SIZE = 4;
    static final RoomDeadlines DEADLINES = new RoomDeadlines(Duration.ofSeconds(5), Duration.ofSeconds(5), Duration.ofSeconds(5));

    private final Arena arena = Arena.ofConfined();
    private final DeadlineClock.Manual clock = new DeadlineClock.Manual();
    // one layer, K and V
    private final List<MemoryRegion> prefillMemory = regions(new Random(1));
    private final List<MemoryRegion> decodeMemory = regions(null);
    private final PageChecksums prefillChecksums = new PageChecksums(prefillMemory);
    private final PageChecksums decodeChecksums = new PageChecksums(decodeMemory);
    private final PagePool decodePool = new PagePool(PAGES);
    private final RoomTable<SenderRoom> senders = new RoomTable<>(8, 8);
    private final RoomTable<ReceiverRoom> receivers = new RoomTable<>(8, 8);
    private final WriteGuard guard = ReceiverRoom.writeGuard(receivers);
    private final Deque<Runnable> wire = new ArrayDeque<>();
    private final List<TransferPlan> inFlight = new ArrayList<>();
    private final List<RoomKey> drainsWaiting = new ArrayList<>();
    private final List<RoomEffect.SenderEffect> prefillSaw = new ArrayList<>();
    private final List<RoomEffect.ReceiverEffect> decodeSaw = new ArrayList<>();
    // a TCP-like transport asks the write guard; a one-sided one writes wherever the plan says
    private boolean receiverValidates = true;

    @AfterEach
    void closeMemory()
    {
        arena.close();
    }

    @Test
    void chunkedPromptIsHandedOffByteForByteAndCommittedWithItsFirstToken()
    {
        RoomKey key = new RoomKey(100, 0);
        // 22 tokens: 6 pages; prefill pages scattered, two per plan at most
        int[] sources = {3, 4, 5, 9, 10, 2};
        ReceiverRoom decode = admit(key, 22, ReleasePolicy.AWAIT_DRAIN_ACK);
        SenderRoom prefill = startPrefill(key, 22);

        forward(key, ChunkForwarded.middle(0, 0, new int[] {3, 4}, ProducerFence.DONE));
        deliverAll();
        forward(key, ChunkForwarded.middle(1, 2, new int[] {5, 9}, ProducerFence.DONE));
        forward(key, ChunkForwarded.last(2, 4, new int[] {10, 2}, ProducerFence.DONE, 31337));
        deliverAll();

        assertThat(prefill.phase()).isEqualTo(RoomPhase.SUCCESS);
        assertThat(decode.phase()).isEqualTo(RoomPhase.SUCCESS);
        assertThat(decodeSaw).contains(new Complete(31337));
        assertThat(decodeSaw).hasAtLeastOneElementOfType(Commit.class);
        int[] destinations = decode.pages();
        for (int i = 0; i < sources.length; i++) {
            for (int region = 0; region < 2; region++) {
                assertThat(decodeMemory.get(region).page(destinations[i]).toArray(ValueLayout.JAVA_BYTE))
                        .isEqualTo(prefillMemory.get(region).page(sources[i]).toArray(ValueLayout.JAVA_BYTE));
            }
            assertThat(decodePool.state(destinations[i])).isEqualTo(PageState.OWNED);
        }
        assertThat(wire).isEmpty();
    }

    @Test
    void corruptedTransferFailsOnDecodeAndItsPagesComeBackOnlyAfterThePrefillDrained()
    {
        RoomKey key = new RoomKey(101, 0);
        ReceiverRoom decode = admit(key, 8, ReleasePolicy.AWAIT_DRAIN_ACK);
        startPrefill(key, 8);
        forward(key, ChunkForwarded.last(0, 0, new int[] {7, 8}, ProducerFence.DONE, 5));

        TransferPlan plan = inFlight.getFirst();
        deliver(plan);
        // a bit flips in the decode's copy before the aux record is checked
        MemorySegment landed = decodeMemory.get(1).page(decode.pages()[1]);
        landed.set(ValueLayout.JAVA_BYTE, 3, (byte) (landed.get(ValueLayout.JAVA_BYTE, 3) ^ 0x10));
        toSender(key, new PlanCompleted(plan));
        pump();

        assertThat(decode.phase()).isEqualTo(RoomPhase.FAILED);
        assertThat(decode.failure()).get().asString().startsWith("KV checksum mismatch on room page 1 (decode page " + decode.pages()[1] + ")");
        // the prefill had finished; it still drained on request, and the ack released the quarantine
        assertThat(prefillSaw).contains(new Drain(key));
        assertThat(decodeSaw).contains(new Quarantine(decode.pages()), new ReleaseQuarantined(decode.pages(), new ReleaseProof.DrainAck(101, 0, 0)));
        assertThat(decode.isSettled()).isTrue();
        assertThat(decodePool.accounting().free()).isEqualTo(PAGES);
    }

    @Test
    void abortedRoomsPagesStayQuarantinedWhileAStalledWriteCanLandHoweverLongItTakes()
    {
        receiverValidates = false;
        RoomKey a = new RoomKey(200, 0);
        ReceiverRoom decodeA = admit(a, 16, ReleasePolicy.AWAIT_DRAIN_ACK);
        startPrefill(a, 16);
        forward(a, ChunkForwarded.last(0, 0, new int[] {0, 1, 2, 3}, ProducerFence.DONE, 1));
        // the prefill's write stalls: the plan is posted but not delivered

        receiverEvent(a, new Abort("client went away"));
        pump();
        assertThat(decodeA.phase()).isEqualTo(RoomPhase.FAILED);
        assertThat(senders.get(a).orElseThrow().phase()).as("the prefill heard it").isEqualTo(RoomPhase.FAILED);
        clock.advance(Duration.ofDays(30));
        receiverEvent(a, new Tick());
        for (int page : decodeA.pages()) {
            assertThat(decodePool.state(page)).isEqualTo(PageState.QUARANTINED);
        }

        // the next request cannot be given A's pages
        ReceiverRoom decodeB = admit(new RoomKey(201, 0), 4, ReleasePolicy.AWAIT_DRAIN_ACK);
        assertThat(decodeB.pages()).doesNotContain(decodeA.pages());

        // the stalled write finally lands, into quarantined pages only; then the drain completes and is acked
        byte[] pageOfB = decodeMemory.getFirst().page(decodeB.pages()[0]).toArray(ValueLayout.JAVA_BYTE);
        deliverAll();
        assertThat(decodeMemory.getFirst().page(decodeA.pages()[0]).toArray(ValueLayout.JAVA_BYTE))
                .as("the late write did land")
                .isEqualTo(prefillMemory.getFirst().page(0).toArray(ValueLayout.JAVA_BYTE));
        assertThat(decodeMemory.getFirst().page(decodeB.pages()[0]).toArray(ValueLayout.JAVA_BYTE)).isEqualTo(pageOfB);
        assertThat(decodeSaw).last().isEqualTo(new ReleaseQuarantined(decodeA.pages(), new ReleaseProof.DrainAck(200, 0, 0)));
        assertThat(decodeA.isSettled()).isTrue();
    }

    @Test
    void receiverValidatedWritesReleaseAtOnceAndAStaleWriteIsDroppedBeforeItReachesTheNextRequest()
    {
        RoomKey a = new RoomKey(300, 0);
        ReceiverRoom decodeA = admit(a, 8, ReleasePolicy.RELEASE_NOW);
        startPrefill(a, 8);
        forward(a, ChunkForwarded.last(0, 0, new int[] {5, 6}, ProducerFence.DONE, 1));
        TransferPlan stalled = inFlight.getFirst();

        receiverEvent(a, new Abort("client went away"));
        pump();
        receivers.retire(a);
        // the pages are free at once, and the next request gets exactly them
        ReceiverRoom decodeB = admit(new RoomKey(301, 0), 8, ReleasePolicy.RELEASE_NOW);
        assertThat(decodeB.pages()).containsExactly(decodeA.pages());
        byte[] before = decodeMemory.getFirst().page(decodeB.pages()[0]).toArray(ValueLayout.JAVA_BYTE);

        deliver(stalled);

        assertThat(decodeMemory.getFirst().page(decodeB.pages()[0]).toArray(ValueLayout.JAVA_BYTE)).isEqualTo(before);
    }

    // --- the wiring the engine will have, minus threads and sockets ---

    private ReceiverRoom admit(RoomKey key, int promptLength, ReleasePolicy policy)
    {
        int[] pages = decodePool.allocate(Math.ceilDiv(promptLength, PAGE_SIZE)).orElseThrow();
        ReceiverRoom room = new ReceiverRoom(key, "rid-" + key.roomId(), promptLength, pages, "prefill-1", DEADLINES,
                Optional.of(decodeChecksums::checksum), clock.nanos());
        receivers.register(key, room);
        // the connection to this prefill is already up
        receiverEvent(key, new PeerReady(policy));
        return room;
    }

    private SenderRoom startPrefill(RoomKey key, int promptLength)
    {
        SenderRoom room = new SenderRoom(key, promptLength, PAGE_SIZE, 2, DEADLINES, Optional.of(prefillChecksums::checksum), clock.nanos());
        for (RoomMessage early : senders.register(key, room)) {
            toSender(key, new Received(early));
        }
        pump();
        return room;
    }

    private void forward(RoomKey key, ChunkForwarded chunk)
    {
        toSender(key, chunk);
        pump();
    }

    private void receiverEvent(RoomKey key, RoomEvent.ForReceiver event)
    {
        ReceiverRoom room = receivers.get(key).orElseThrow();
        for (RoomEffect.ReceiverEffect effect : room.on(event, clock.nanos())) {
            decodeSaw.add(effect);
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

    private void toSender(RoomKey key, RoomEvent.ForSender event)
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

    private void pump()
    {
        while (!wire.isEmpty()) {
            wire.poll().run();
        }
    }

    private void deliverAll()
    {
        while (!inFlight.isEmpty()) {
            TransferPlan plan = inFlight.getFirst();
            deliver(plan);
            toSender(plan.room(), new PlanCompleted(plan));
            pump();
        }
    }

    // the transport: copy every run of every region, asking the guard first as a receiver-validated transport does
    private void deliver(TransferPlan plan)
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

    private List<MemoryRegion> regions(Random random)
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
