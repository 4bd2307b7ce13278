package io.handoff.core.disagg;

import io.handoff.core.disagg.control.ControlMessage.RoomMessage;
import io.handoff.core.disagg.room.ReceiverRoom;
import io.handoff.core.disagg.room.ReleasePolicy;
import io.handoff.core.disagg.room.RoomEffect.Commit;
import io.handoff.core.disagg.room.RoomEffect.Complete;
import io.handoff.core.disagg.room.RoomEffect.Drain;
import io.handoff.core.disagg.room.RoomEffect.MarkReceiving;
import io.handoff.core.disagg.room.RoomEffect.Post;
import io.handoff.core.disagg.room.RoomEffect.Quarantine;
import io.handoff.core.disagg.room.RoomEffect.Release;
import io.handoff.core.disagg.room.RoomEffect.ReleaseQuarantined;
import io.handoff.core.disagg.room.RoomEffect.Send;
import io.handoff.core.disagg.room.RoomEvent.Abort;
import io.handoff.core.disagg.room.RoomEvent.ChunkForwarded;
import io.handoff.core.disagg.room.RoomEvent.Drained;
import io.handoff.core.disagg.room.RoomEvent.PeerReady;
import io.handoff.core.disagg.room.RoomEvent.PlanCompleted;
import io.handoff.core.disagg.room.RoomEvent.Received;
import io.handoff.core.disagg.room.RoomEvent.Tick;
import io.handoff.core.disagg.room.RoomPhase;
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
/** The room pair end to end: bytes, commits, and the release rules (invariant I2) under stalls and aborts. */
class RoomHandoffTest
        extends RoomPairHarness
{
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
}
