package io.handoff.core.disagg;

import io.handoff.core.disagg.control.ControlMessage.DrainAck;
import io.handoff.core.disagg.room.ReceiverRoom;
import io.handoff.core.disagg.room.ReleasePolicy;
import io.handoff.core.disagg.room.RoomEffect.Complete;
import io.handoff.core.disagg.room.RoomEffect.Fail;
import io.handoff.core.disagg.room.RoomEffect.Ignored;
import io.handoff.core.disagg.room.RoomEffect.Post;
import io.handoff.core.disagg.room.RoomEffect.ReleaseQuarantined;
import io.handoff.core.disagg.room.RoomEvent.Abort;
import io.handoff.core.disagg.room.RoomEvent.ChunkForwarded;
import io.handoff.core.disagg.room.RoomEvent.PlanCompleted;
import io.handoff.core.disagg.room.RoomEvent.Received;
import io.handoff.core.disagg.room.RoomPhase;
import io.handoff.core.disagg.room.SenderRoom;
import io.handoff.core.kv.PageState;
import io.handoff.core.kv.ReleaseProof;
import io.handoff.spi.transfer.ProducerFence;
import io.handoff.spi.transfer.RoomKey;
import io.handoff.spi.transfer.TransferPlan;
import io.handoff.trace.FailureCause;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import java.lang.foreign.ValueLayout;
import java.time.Duration;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * An abort in every window of a room's life, on a one-sided transport whose writes the decode cannot refuse (so only
 * a drain ack frees a page), and the acks themselves out of order. Each test fixes the order by what it delivers
 * when, and asserts the room's single terminal outcome and that no page a write may still land in is free or
 * another room's.
 */
class RoomOrderingWindowsTest
        extends RoomPairHarness
{
    @BeforeEach
    void oneSided()
    {
        receiverValidates = false;
    }

    @Test
    void abortBeforeBootstrapReleasesAtOnceAndThePrefillNeverPosts()
    {
        RoomKey key = new RoomKey(400, 0);
        ReceiverRoom decode = admitUnready(key, 8);
        receiverEvent(key, new Abort("client went away"));
        assertThat(decode.isSettled()).isTrue();
        assertThat(decodePool.accounting().free()).as("never advertised: nothing can write them").isEqualTo(PAGES);

        // the prefill's copy of the request arrives after the decode's failure (parked until it registers)
        SenderRoom prefill = startPrefill(key, 8);
        pump();
        forward(key, ChunkForwarded.last(0, 0, new int[] {1, 2}, ProducerFence.DONE, 7));
        assertThat(prefill.phase()).isEqualTo(RoomPhase.FAILED);
        assertThat(prefillSaw).noneMatch(Post.class::isInstance);
        assertThat(outcomes(key)).containsExactly(new Fail("aborted: client went away", FailureCause.CLIENT_ABORT));
    }

    @Test
    void abortBetweenBootstrapAndTheFirstChunkIsAckedAtOnceByAPrefillThatPostedNothing()
    {
        RoomKey key = new RoomKey(401, 0);
        ReceiverRoom decode = admit(key, 8, ReleasePolicy.AWAIT_DRAIN_ACK);
        SenderRoom prefill = startPrefill(key, 8);
        assertThat(prefill.phase()).isEqualTo(RoomPhase.WAITING_FOR_INPUT);

        receiverEvent(key, new Abort("client went away"));
        for (int page : decode.pages()) {
            assertThat(decodePool.state(page)).isEqualTo(PageState.QUARANTINED);
        }
        pump();

        assertThat(prefill.phase()).isEqualTo(RoomPhase.FAILED);
        assertThat(decodeSaw).contains(new ReleaseQuarantined(decode.pages(), new ReleaseProof.DrainAck(401, 0, 0)));
        assertThat(decodePool.accounting().free()).isEqualTo(PAGES);
        assertThat(outcomes(key)).hasSize(1).first().isInstanceOf(Fail.class);
    }

    @Test
    void abortBetweenChunksHoldsThePagesUntilTheStalledChunkLandsAndDrains()
    {
        RoomKey key = new RoomKey(402, 0);
        ReceiverRoom decode = admit(key, 16, ReleasePolicy.AWAIT_DRAIN_ACK);
        startPrefill(key, 16);
        forward(key, ChunkForwarded.middle(0, 0, new int[] {0, 1}, ProducerFence.DONE));
        deliverAll();
        forward(key, ChunkForwarded.middle(1, 2, new int[] {2, 3}, ProducerFence.DONE));
        // chunk 1's write stalls

        receiverEvent(key, new Abort("client went away"));
        pump();
        clock.advance(Duration.ofDays(1));
        ReceiverRoom next = admit(new RoomKey(403, 0), 8, ReleasePolicy.AWAIT_DRAIN_ACK);
        assertNoPageAWriteMayLandInIsReused();
        assertThat(decode.isSettled()).isFalse();

        deliverAll();
        assertThat(decode.isSettled()).isTrue();
        assertThat(next.pages()).doesNotContain(decode.pages());
        assertThat(outcomes(key)).hasSize(1).first().isInstanceOf(Fail.class);
    }

    @Test
    void abortAfterTheLastChunkBeforeTheCommitFailsTheDecodeOnceAndTheLateAuxRecordIsIgnored()
    {
        RoomKey key = new RoomKey(404, 0);
        ReceiverRoom decode = admit(key, 8, ReleasePolicy.AWAIT_DRAIN_ACK);
        SenderRoom prefill = startPrefill(key, 8);
        toSender(key, ChunkForwarded.last(0, 0, new int[] {4, 5}, ProducerFence.DONE, 9));
        TransferPlan plan = inFlight.getFirst();
        deliver(plan);
        toSender(key, new PlanCompleted(plan));
        // the prefill succeeded; its ChunkDone and aux record are still on the wire when the decode aborts
        assertThat(prefill.phase()).isEqualTo(RoomPhase.SUCCESS);
        receiverEvent(key, new Abort("client went away"));
        pump();

        assertThat(decode.phase()).isEqualTo(RoomPhase.FAILED);
        assertThat(decodeSawByRoom.get(key)).filteredOn(Ignored.class::isInstance).isNotEmpty();
        assertThat(outcomes(key)).containsExactly(new Fail("aborted: client went away", FailureCause.CLIENT_ABORT));
        // a prefill that had finished still drains on request: its ack frees the pages
        assertThat(decodeSaw).contains(new ReleaseQuarantined(decode.pages(), new ReleaseProof.DrainAck(404, 0, 0)));
        assertThat(decodePool.accounting().free()).isEqualTo(PAGES);
    }

    @Test
    void abortAfterTheCommitChangesNothing()
    {
        RoomKey key = new RoomKey(405, 0);
        ReceiverRoom decode = admit(key, 8, ReleasePolicy.AWAIT_DRAIN_ACK);
        startPrefill(key, 8);
        forward(key, ChunkForwarded.last(0, 0, new int[] {6, 7}, ProducerFence.DONE, 11));
        deliverAll();
        assertThat(decode.phase()).isEqualTo(RoomPhase.SUCCESS);

        receiverEvent(key, new Abort("client went away"));
        pump();
        assertThat(outcomes(key)).containsExactly(new Complete(11));
        for (int page : decode.pages()) {
            assertThat(decodePool.state(page)).as("committed pages belong to the request").isEqualTo(PageState.OWNED);
        }
    }

    @Test
    void anAckBeforeTheDecodeAskedReleasesNothingAndDuplicateAndLateAcksChangeNothing()
    {
        RoomKey key = new RoomKey(406, 0);
        ReceiverRoom decode = admit(key, 8, ReleasePolicy.AWAIT_DRAIN_ACK);
        startPrefill(key, 8);
        forward(key, ChunkForwarded.last(0, 0, new int[] {8, 9}, ProducerFence.DONE, 1));

        // ack before arm: the room is live and asked for nothing
        receiverEvent(key, new Received(new DrainAck(key)));
        for (int page : decode.pages()) {
            assertThat(decodePool.state(page)).isEqualTo(PageState.RECEIVING);
        }
        receiverEvent(key, new Abort("client went away"));
        pump();
        assertThat(decode.isSettled()).as("the early ack is no proof for the write posted before the abort").isFalse();
        assertNoPageAWriteMayLandInIsReused();

        deliverAll();
        assertThat(decode.isSettled()).isTrue();
        long released = decodeSaw.stream().filter(ReleaseQuarantined.class::isInstance).count();
        // a duplicate ack, then a late one after the room retired: neither releases anything again
        receiverEvent(key, new Received(new DrainAck(key)));
        receivers.retire(key);
        long droppedBefore = receivers.dropped();
        assertThat(receivers.route(new DrainAck(key))).isEmpty();
        assertThat(receivers.dropped()).isEqualTo(droppedBefore + 1);
        assertThat(decodeSaw.stream().filter(ReleaseQuarantined.class::isInstance).count()).isEqualTo(released);
        assertThat(decodePool.accounting().free()).isEqualTo(PAGES);
        decodePool.checkInvariants();
    }

    @Test
    void aReusedRoomIdWithANewGenerationLeavesTheOldGenerationItsDrainAckAndItsPages()
    {
        RoomKey old = new RoomKey(407, 0);
        RoomKey reused = new RoomKey(407, 1);
        ReceiverRoom oldDecode = admit(old, 8, ReleasePolicy.AWAIT_DRAIN_ACK);
        startPrefill(old, 8);
        forward(old, ChunkForwarded.last(0, 0, new int[] {10, 11}, ProducerFence.DONE, 1));
        TransferPlan stalled = inFlight.getFirst();
        receiverEvent(old, new Abort("client went away"));
        pump();

        // the id comes back with a new generation while the old one still waits for its drain
        ReceiverRoom newDecode = admit(reused, 8, ReleasePolicy.AWAIT_DRAIN_ACK);
        startPrefill(reused, 8);
        assertThat(newDecode.pages()).doesNotContain(oldDecode.pages());
        assertNoPageAWriteMayLandInIsReused();
        forward(reused, ChunkForwarded.last(0, 0, new int[] {12, 13}, ProducerFence.DONE, 21));
        inFlight.remove(stalled);
        deliverAll();
        assertThat(newDecode.phase()).isEqualTo(RoomPhase.SUCCESS);
        assertThat(oldDecode.isSettled()).isFalse();

        // the old write lands late, in the old pages only; its drain ack finds the old generation
        inFlight.add(stalled);
        deliverAll();
        assertThat(oldDecode.isSettled()).isTrue();
        assertThat(decodeSawByRoom.get(old)).contains(new ReleaseQuarantined(oldDecode.pages(), new ReleaseProof.DrainAck(407, 0, 0)));
        for (int i = 0; i < 2; i++) {
            assertThat(decodeMemory.getFirst().page(newDecode.pages()[i]).toArray(ValueLayout.JAVA_BYTE))
                    .isEqualTo(prefillMemory.getFirst().page(12 + i).toArray(ValueLayout.JAVA_BYTE));
        }
        assertThat(outcomes(old)).hasSize(1).first().isInstanceOf(Fail.class);
        assertThat(outcomes(reused)).containsExactly(new Complete(21));
    }
}
