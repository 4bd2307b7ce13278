package io.handoff.core.disagg.room;

import io.handoff.core.disagg.control.ControlMessage.AuxRecord;
import io.handoff.core.disagg.control.ControlMessage.ChunkDone;
import io.handoff.core.disagg.control.ControlMessage.DrainAck;
import io.handoff.core.disagg.control.ControlMessage.DrainRequest;
import io.handoff.core.disagg.control.ControlMessage.RoomFailed;
import io.handoff.core.disagg.control.ControlMessage.RoomRequest;
import io.handoff.core.disagg.control.DeadlineClock;
import io.handoff.core.disagg.room.RoomEffect.Commit;
import io.handoff.core.disagg.room.RoomEffect.Complete;
import io.handoff.core.disagg.room.RoomEffect.Fail;
import io.handoff.core.disagg.room.RoomEffect.Ignored;
import io.handoff.core.disagg.room.RoomEffect.MarkReceiving;
import io.handoff.core.disagg.room.RoomEffect.Quarantine;
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
import io.handoff.spi.transfer.TransferCapability;
import io.handoff.spi.transfer.WriteGuard;
import io.handoff.trace.FailureCause;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.function.IntUnaryOperator;

import static io.handoff.core.disagg.room.ReleasePolicy.AWAIT_DRAIN_ACK;
import static io.handoff.core.disagg.room.ReleasePolicy.AWAIT_PEER_FENCE;
import static io.handoff.core.disagg.room.ReleasePolicy.RELEASE_NOW;
import static io.handoff.core.disagg.room.RoomPhase.BOOTSTRAPPING;
import static io.handoff.core.disagg.room.RoomPhase.FAILED;
import static io.handoff.core.disagg.room.RoomPhase.SUCCESS;
import static io.handoff.core.disagg.room.RoomPhase.TRANSFERRING;
import static io.handoff.core.disagg.room.RoomPhase.WAITING_FOR_INPUT;
import static org.assertj.core.api.Assertions.assertThat;

class ReceiverRoomTest
{
    static final RoomKey ROOM = new RoomKey(11, 3);
    static final RoomDeadlines DEADLINES = new RoomDeadlines(Duration.ofSeconds(10), Duration.ofSeconds(20), Duration.ofSeconds(5));
    static final int PROMPT = 14;
    static final int[] PAGES = {40, 41, 42, 7};
    static final IntUnaryOperator CHECKSUM = page -> page * 31 + 5;

    private final DeadlineClock.Manual clock = new DeadlineClock.Manual();

    private ReceiverRoom newRoom()
    {
        return new ReceiverRoom(ROOM, "rid-9", PROMPT, PAGES, "prefill-a:7000", DEADLINES, Optional.of(CHECKSUM), clock.nanos());
    }

    private ReceiverRoom readyRoom(ReleasePolicy policy)
    {
        ReceiverRoom room = newRoom();
        on(room, new PeerReady(policy));
        return room;
    }

    private List<RoomEffect.ReceiverEffect> on(ReceiverRoom room, RoomEvent.ForReceiver event)
    {
        return room.on(event, clock.nanos());
    }

    private static Received chunk(int chunk, int first, int count)
    {
        return new Received(new ChunkDone(ROOM, chunk, first, count));
    }

    private static int[] checksumsOf(int[] pages)
    {
        int[] checksums = new int[pages.length];
        for (int i = 0; i < pages.length; i++) {
            checksums[i] = CHECKSUM.applyAsInt(pages[i]);
        }
        return checksums;
    }

    private static Received aux(RoomKey key, int[] checksums)
    {
        return new Received(new AuxRecord(key, 99, PROMPT, checksums));
    }

    @Test
    void whenThePeerIsReadyThePagesAreMarkedReceivingThenAdvertised()
    {
        ReceiverRoom room = newRoom();
        assertThat(room.phase()).isEqualTo(BOOTSTRAPPING);
        assertThat(room.admits(40, 1)).isFalse();

        List<RoomEffect.ReceiverEffect> effects = on(room, new PeerReady(RELEASE_NOW));

        assertThat(effects).containsExactly(new MarkReceiving(PAGES), new Send(new RoomRequest(ROOM, "rid-9", PROMPT, PAGES)));
        assertThat(room.phase()).isEqualTo(WAITING_FOR_INPUT);
        assertThat(on(room, new PeerReady(RELEASE_NOW))).singleElement().isInstanceOf(Ignored.class);
    }

    @Test
    void aWriteAdmittedBeforeTheRoomFailedDelaysTheReleaseUntilItLands()
    {
        ReceiverRoom room = readyRoom(RELEASE_NOW);
        List<String> settled = new ArrayList<>();
        room.onWritesSettled(() -> settled.add("settled"));
        WriteGuard.Permit streaming = room.openWrite(40, 1);
        assertThat(streaming).isNotNull();

        List<RoomEffect.ReceiverEffect> failed = on(room, new Abort("client went away"));
        assertThat(failed).contains(new Quarantine(PAGES));
        assertThat(failed).noneMatch(effect -> effect instanceof ReleaseQuarantined);
        assertThat(room.openWrite(40, 1)).as("no new write after the room failed").isNull();
        assertThat(room.isSettled()).isFalse();

        streaming.close();
        assertThat(settled).containsExactly("settled");
        assertThat(on(room, new RoomEvent.WritesSettled()))
                .containsExactly(new ReleaseQuarantined(PAGES, new ReleaseProof.ReceiverValidated(ROOM.roomId(), ROOM.generation())));
        assertThat(room.isSettled()).isTrue();
    }

    @Test
    void writeGuardAdmitsOnlyGrantedPagesOfALiveRoomOfTheSameGeneration()
    {
        ReceiverRoom room = readyRoom(RELEASE_NOW);
        RoomTable<ReceiverRoom> rooms = new RoomTable<>(8, 8);
        rooms.register(ROOM, room);
        WriteGuard guard = ReceiverRoom.writeGuard(rooms);

        assertThat(guard.open(ROOM, 40, 3)).isNotNull();
        assertThat(guard.open(ROOM, 7, 1)).isNotNull();
        assertThat(guard.open(ROOM, 42, 2)).as("page 43 is not granted").isNull();
        assertThat(guard.open(ROOM, 8, 1)).isNull();
        assertThat(guard.open(new RoomKey(ROOM.roomId(), ROOM.generation() - 1), 40, 1)).as("retired generation").isNull();

        on(room, new Abort("stop"));
        assertThat(guard.open(ROOM, 40, 1)).as("failed room").isNull();
    }

    @Test
    void firstChunkMovesToTransferringAndTheValidAuxRecordCommitsAndCompletes()
    {
        ReceiverRoom room = readyRoom(RELEASE_NOW);
        assertThat(on(room, chunk(0, 0, 2))).isEmpty();
        assertThat(room.phase()).isEqualTo(TRANSFERRING);
        assertThat(on(room, chunk(1, 2, 2))).isEmpty();

        List<RoomEffect.ReceiverEffect> effects = on(room, aux(ROOM, checksumsOf(PAGES)));

        assertThat(effects).containsExactly(new Commit(PAGES), new Complete(99));
        assertThat(room.phase()).isEqualTo(SUCCESS);
        assertThat(room.isSettled()).isTrue();
        assertThat(room.admits(40, 1)).isFalse();
        assertThat(room.deadlineNanos()).isEqualTo(Long.MAX_VALUE);
    }

    @Test
    void aRoomOfTheMissingPagesAdvertisesWhatItHoldsAndRefusesChunksOfHeldPages()
    {
        // the decode's prefix cache holds the prompt's first 3 pages (of 7): PAGES receive room pages 3..6
        ReceiverRoom room = new ReceiverRoom(ROOM, "rid-9", 28, 3, PAGES, "prefill-a:7000", DEADLINES, Optional.of(CHECKSUM), AuxLogprobs.none(),
                clock.nanos());
        assertThat(on(room, new PeerReady(RELEASE_NOW))).containsExactly(new MarkReceiving(PAGES),
                new Send(new RoomRequest(ROOM, "rid-9", 28, 3, PAGES)));
        assertThat(on(room, chunk(0, 3, 2))).isEmpty();
        assertThat(on(room, new Received(new AuxRecord(ROOM, 99, 28, checksumsOf(PAGES))))).isEmpty();
        assertThat(on(room, chunk(1, 5, 2))).containsExactly(new Commit(PAGES), new Complete(99));

        ReceiverRoom other = new ReceiverRoom(ROOM, "rid-9", 28, 3, PAGES, "prefill-a:7000", DEADLINES, Optional.of(CHECKSUM), AuxLogprobs.none(),
                clock.nanos());
        on(other, new PeerReady(RELEASE_NOW));
        assertThat(on(other, chunk(0, 2, 2))).hasAtLeastOneElementOfType(Fail.class);
        assertThat(other.failure()).hasValueSatisfying(reason -> assertThat(reason).contains("pages 2..3 of a room whose pages 3..6 move"));
    }

    @Test
    void auxRecordBeforeTheLastChunkIsHeldUntilEveryPageLanded()
    {
        ReceiverRoom room = readyRoom(RELEASE_NOW);
        on(room, chunk(0, 0, 2));
        assertThat(on(room, aux(ROOM, checksumsOf(PAGES)))).isEmpty();
        assertThat(room.phase()).isEqualTo(TRANSFERRING);

        assertThat(on(room, chunk(1, 2, 2))).containsExactly(new Commit(PAGES), new Complete(99));
    }

    @Test
    void chunksInAnyOrderAndDuplicatesAreAccepted()
    {
        ReceiverRoom room = readyRoom(RELEASE_NOW);
        on(room, chunk(1, 2, 2));
        assertThat(on(room, chunk(1, 2, 2))).singleElement().isInstanceOf(Ignored.class);
        on(room, chunk(0, 0, 2));
        assertThat(on(room, aux(ROOM, checksumsOf(PAGES)))).contains(new Complete(99));
        assertThat(on(room, aux(ROOM, checksumsOf(PAGES)))).singleElement().isInstanceOf(Ignored.class);
    }

    @Test
    void auxRecordOfAnotherGenerationNeverCommits()
    {
        ReceiverRoom room = readyRoom(RELEASE_NOW);
        on(room, chunk(0, 0, 4));
        assertThat(on(room, aux(new RoomKey(ROOM.roomId(), ROOM.generation() + 1), checksumsOf(PAGES))))
                .singleElement().isInstanceOf(Ignored.class);
        assertThat(room.phase()).isEqualTo(TRANSFERRING);
    }

    @Test
    void everyWayARoomFailsNamesItsCauseAndTellsThePeerTheSame()
    {
        ReceiverRoom timedOut = readyRoom(AWAIT_DRAIN_ACK);
        clock.advance(DEADLINES.waitingForInput());
        assertThat(on(timedOut, new Tick())).contains(new Send(new RoomFailed(ROOM, FailureCause.DEADLINE, timedOut.failure().orElseThrow())))
                .contains(new Fail(timedOut.failure().orElseThrow(), FailureCause.DEADLINE));

        ReceiverRoom byPrefill = readyRoom(AWAIT_DRAIN_ACK);
        assertThat(on(byPrefill, new Received(new RoomFailed(ROOM, FailureCause.TRANSPORT_FAILURE, "connection reset"))))
                .contains(new Fail("the prefill failed the room: connection reset", FailureCause.TRANSPORT_FAILURE));

        ReceiverRoom violated = readyRoom(AWAIT_DRAIN_ACK);
        assertThat(on(violated, chunk(0, 3, 2))).filteredOn(Fail.class::isInstance).singleElement()
                .extracting(effect -> ((Fail) effect).cause()).isEqualTo(FailureCause.TRANSPORT_FAILURE);

        ReceiverRoom refused = readyRoom(AWAIT_DRAIN_ACK);
        assertThat(on(refused, new PeerLost(FailureCause.HANDSHAKE_REFUSED, "model differs")))
                .contains(new Fail("lost the prefill: model differs", FailureCause.HANDSHAKE_REFUSED));

        ReceiverRoom suspect = readyRoom(AWAIT_DRAIN_ACK);
        assertThat(on(suspect, new PeerLost(FailureCause.DRAIN_DEADLINE, "prefill is suspect")))
                .contains(new Fail("lost the prefill: prefill is suspect", FailureCause.DRAIN_DEADLINE));

        ReceiverRoom uncheckedPrefill = readyRoom(AWAIT_DRAIN_ACK);
        on(uncheckedPrefill, chunk(0, 0, 4));
        assertThat(on(uncheckedPrefill, aux(ROOM, new int[0]))).filteredOn(Fail.class::isInstance).singleElement()
                .extracting(effect -> ((Fail) effect).cause()).as("a kv-fidelity mismatch is configuration: not retried")
                .isEqualTo(FailureCause.HANDSHAKE_REFUSED);

        ReceiverRoom wrongCount = readyRoom(AWAIT_DRAIN_ACK);
        on(wrongCount, chunk(0, 0, 4));
        assertThat(on(wrongCount, aux(ROOM, new int[3]))).filteredOn(Fail.class::isInstance).singleElement()
                .extracting(effect -> ((Fail) effect).cause()).isEqualTo(FailureCause.CHECKSUM_MISMATCH);
    }

    @Test
    void checksumMismatchFailsLoudlyNamingThePageAndBothValues()
    {
        ReceiverRoom room = readyRoom(RELEASE_NOW);
        on(room, chunk(0, 0, 4));
        int[] sent = checksumsOf(PAGES);
        sent[2] ^= 1;

        List<RoomEffect.ReceiverEffect> effects = on(room, aux(ROOM, sent));

        String reason = "KV checksum mismatch on room page 2 (decode page 42): prefill sent 0x" + Integer.toHexString(sent[2])
                + ", decode holds 0x" + Integer.toHexString(CHECKSUM.applyAsInt(42)) + "; the transferred KV is corrupt";
        assertThat(room.failure()).contains(reason);
        assertThat(effects).containsExactly(
                new Send(new RoomFailed(ROOM, FailureCause.CHECKSUM_MISMATCH, reason)),
                new Fail(reason, FailureCause.CHECKSUM_MISMATCH),
                new Quarantine(PAGES),
                new ReleaseQuarantined(PAGES, new ReleaseProof.ReceiverValidated(ROOM.roomId(), ROOM.generation())));
    }

    @Test
    void auxRecordForAnotherPromptLengthOrPageCountFails()
    {
        ReceiverRoom wrongLength = readyRoom(RELEASE_NOW);
        on(wrongLength, chunk(0, 0, 4));
        on(wrongLength, new Received(new AuxRecord(ROOM, 1, PROMPT + 1, checksumsOf(PAGES))));
        assertThat(wrongLength.failure()).contains("aux record for a prompt of 15 tokens; this decode expects 14");

        ReceiverRoom wrongCount = readyRoom(RELEASE_NOW);
        on(wrongCount, chunk(0, 0, 4));
        on(wrongCount, aux(ROOM, new int[] {1, 2}));
        assertThat(wrongCount.failure()).contains("aux record carries 2 page checksums for a room of 4 pages");
    }

    @Test
    void anAuxRecordWithAnEmptyChecksumListIsRejectedWhenThisDecodeChecks()
    {
        ReceiverRoom room = readyRoom(RELEASE_NOW);
        on(room, chunk(0, 0, 4));

        List<RoomEffect.ReceiverEffect> effects = on(room, aux(ROOM, new int[0]));

        assertThat(effects).doesNotContain(new Complete(99));
        assertThat(room.phase()).isEqualTo(RoomPhase.FAILED);
        assertThat(room.failure()).hasValueSatisfying(reason -> assertThat(reason)
                .contains("aux record carries no page checksums").contains("kv-fidelity"));
    }

    @Test
    void withoutChecksumsOnThisDecodeTheAuxRecordCommitsOnRoomAndLength()
    {
        ReceiverRoom unchecked = new ReceiverRoom(ROOM, "rid", PROMPT, PAGES, "p", DEADLINES, Optional.empty(), clock.nanos());
        on(unchecked, new PeerReady(RELEASE_NOW));
        on(unchecked, chunk(0, 0, 4));
        assertThat(on(unchecked, aux(ROOM, new int[] {1, 2, 3, 4}))).contains(new Complete(99));
    }

    @Test
    void failureBeforeThePagesWereAdvertisedReleasesThemAtOnce()
    {
        ReceiverRoom room = newRoom();
        assertThat(on(room, new Abort("client cancelled"))).containsExactly(
                new Send(new RoomFailed(ROOM, FailureCause.CLIENT_ABORT, "aborted: client cancelled")),
                new Fail("aborted: client cancelled", FailureCause.CLIENT_ABORT),
                new Release(PAGES));
        assertThat(room.isSettled()).isTrue();
    }

    @Test
    void receiverValidatedTransportReleasesAfterFailureAtOnce()
    {
        ReceiverRoom room = readyRoom(ReleasePolicy.from(EnumSet.of(TransferCapability.RECEIVER_VALIDATED_WRITES, TransferCapability.DRAIN_ACK)));
        on(room, chunk(0, 0, 1));
        List<RoomEffect.ReceiverEffect> effects = on(room, new Abort("stop"));
        assertThat(effects).endsWith(new Quarantine(PAGES), new ReleaseQuarantined(PAGES, new ReleaseProof.ReceiverValidated(11, 3)));
        assertThat(room.isSettled()).isTrue();
    }

    @Test
    void drainAckTransportQuarantinesAsksForADrainAndReleasesOnlyOnTheAckNeverOnATimer()
    {
        ReceiverRoom room = readyRoom(ReleasePolicy.from(EnumSet.of(TransferCapability.DRAIN_ACK, TransferCapability.ONE_SIDED)));
        on(room, chunk(0, 0, 1));

        List<RoomEffect.ReceiverEffect> effects = on(room, new Abort("stop"));

        // RoomFailed first: the prefill stops posting before it drains
        assertThat(effects).containsExactly(
                new Send(new RoomFailed(ROOM, FailureCause.CLIENT_ABORT, "aborted: stop")),
                new Fail("aborted: stop", FailureCause.CLIENT_ABORT),
                new Quarantine(PAGES),
                new Send(new DrainRequest(ROOM)));
        assertThat(room.isSettled()).isFalse();

        clock.advance(Duration.ofDays(365));
        assertThat(on(room, new Tick())).isEmpty();
        assertThat(room.isSettled()).isFalse();

        assertThat(on(room, new Received(new DrainAck(new RoomKey(ROOM.roomId(), ROOM.generation() - 1)))))
                .singleElement().isInstanceOf(Ignored.class);
        assertThat(on(room, new Received(new DrainAck(ROOM))))
                .containsExactly(new ReleaseQuarantined(PAGES, new ReleaseProof.DrainAck(11, 3, 0)));
        assertThat(room.isSettled()).isTrue();
        assertThat(on(room, new Received(new DrainAck(ROOM)))).singleElement().isInstanceOf(Ignored.class);
    }

    @Test
    void withTwoSenderRanksThePagesGoBackOnlyOnceEachRankAckedItsOwnDrain()
    {
        ReceiverRoom room = new ReceiverRoom(ROOM, "rid-9", PROMPT, PAGES, "prefill-a:7000", DEADLINES, Optional.of(CHECKSUM), 2, clock.nanos());
        on(room, new PeerReady(AWAIT_DRAIN_ACK));
        on(room, chunk(0, 0, 2));
        on(room, new Abort("stop"));

        assertThat(on(room, new Received(new DrainAck(ROOM, 1)))).isEmpty();
        assertThat(room.isSettled()).as("rank 0 may still be writing").isFalse();
        assertThat(on(room, new Received(new DrainAck(ROOM, 1)))).singleElement().isInstanceOf(Ignored.class);
        assertThat(on(room, new Received(new DrainAck(ROOM, 2)))).singleElement().isInstanceOf(Ignored.class);
        assertThat(on(room, new Received(new DrainAck(new RoomKey(ROOM.roomId(), ROOM.generation() + 1), 0))))
                .singleElement().isInstanceOf(Ignored.class);
        assertThat(room.isSettled()).isFalse();

        assertThat(on(room, new Received(new DrainAck(ROOM, 0))))
                .containsExactly(new ReleaseQuarantined(PAGES, new ReleaseProof.DrainAck(11, 3, 0)));
        assertThat(room.isSettled()).isTrue();
        assertThat(on(room, new Received(new DrainAck(ROOM, 0)))).singleElement().isInstanceOf(Ignored.class);
    }

    @Test
    void withoutDrainAckOrValidationPagesWaitForTheFencedPeer()
    {
        ReceiverRoom room = readyRoom(ReleasePolicy.from(Set.of(TransferCapability.ONE_SIDED)));
        assertThat(on(room, new Abort("stop"))).endsWith(new Quarantine(PAGES));
        assertThat(on(room, new Received(new DrainAck(ROOM)))).as("a drain ack proves nothing here").singleElement().isInstanceOf(Ignored.class);
        clock.advance(Duration.ofDays(1));
        on(room, new Tick());
        assertThat(room.isSettled()).isFalse();

        assertThat(on(room, new PeerFenced("connection torn down"))).containsExactly(
                new Ignored("room 11#3 already ended FAILED; not failing it for: the prefill was fenced: connection torn down"),
                new ReleaseQuarantined(PAGES, new ReleaseProof.PeerFenced("prefill-a:7000", "connection torn down")));
        assertThat(room.isSettled()).isTrue();
    }

    @Test
    void lostPeerIsNotAskedToDrainAndItsFencingReleasesThePages()
    {
        ReceiverRoom room = readyRoom(AWAIT_DRAIN_ACK);
        on(room, chunk(0, 0, 2));
        assertThat(on(room, new PeerLost("no frame for 10 s"))).containsExactly(new Fail("lost the prefill: no frame for 10 s", FailureCause.PEER_LOST), new Quarantine(PAGES));
        assertThat(on(room, new PeerFenced("process gone"))).last()
                .isEqualTo(new ReleaseQuarantined(PAGES, new ReleaseProof.PeerFenced("prefill-a:7000", "process gone")));
    }

    @Test
    void fencingALiveRoomFailsItAndReleasesItsPagesInOneStep()
    {
        ReceiverRoom room = readyRoom(AWAIT_PEER_FENCE);
        assertThat(on(room, new PeerFenced("registration revoked"))).containsExactly(
                new Fail("the prefill was fenced: registration revoked", FailureCause.PEER_LOST),
                new Quarantine(PAGES),
                new ReleaseQuarantined(PAGES, new ReleaseProof.PeerFenced("prefill-a:7000", "registration revoked")));
        assertThat(room.isSettled()).isTrue();
    }

    @Test
    void prefillFailureIsNotEchoedButTheDrainIsStillRequested()
    {
        ReceiverRoom room = readyRoom(AWAIT_DRAIN_ACK);
        assertThat(on(room, new Received(new RoomFailed(ROOM, FailureCause.ENGINE, "forward failed")))).containsExactly(
                new Fail("the prefill failed the room: forward failed", FailureCause.ENGINE), new Quarantine(PAGES), new Send(new DrainRequest(ROOM)));
    }

    @Test
    void bootstrappingDeadlineFailsTheRoomAndReleasesItsUnadvertisedPages()
    {
        ReceiverRoom room = newRoom();
        clock.advance(Duration.ofSeconds(10).minusNanos(1));
        assertThat(on(room, new Tick())).isEmpty();
        clock.advance(Duration.ofNanos(1));
        List<RoomEffect.ReceiverEffect> effects = on(room, new Tick());
        assertThat(room.failure()).get().asString().contains("timed out after 10000 ms in BOOTSTRAPPING");
        assertThat(effects).last().isEqualTo(new Release(PAGES));
    }

    @Test
    void waitingForInputDeadlineFailsTheRoom()
    {
        ReceiverRoom room = newRoom();
        clock.advance(Duration.ofSeconds(5));
        on(room, new PeerReady(AWAIT_DRAIN_ACK));
        clock.advance(Duration.ofSeconds(19));
        assertThat(on(room, new Tick())).isEmpty();
        clock.advance(Duration.ofSeconds(1));
        List<RoomEffect.ReceiverEffect> effects = on(room, new Tick());
        assertThat(room.failure()).get().asString().contains("in WAITING_FOR_INPUT");
        assertThat(effects).contains(new Quarantine(PAGES), new Send(new DrainRequest(ROOM)));
    }

    @Test
    void transferringDeadlineIsReArmedByEveryNewChunk()
    {
        ReceiverRoom room = readyRoom(RELEASE_NOW);
        on(room, chunk(0, 0, 1));
        clock.advance(Duration.ofSeconds(4));
        on(room, chunk(1, 1, 1));
        clock.advance(Duration.ofSeconds(4));
        assertThat(on(room, new Tick())).isEmpty();
        // a duplicate is no progress
        on(room, chunk(1, 1, 1));
        clock.advance(Duration.ofSeconds(1));
        on(room, new Tick());
        assertThat(room.phase()).isEqualTo(FAILED);
        assertThat(room.failure()).get().asString().contains("timed out after 5000 ms in TRANSFERRING");
    }

    @Test
    void chunkOutsideTheRoomOrBeforeThePagesWereSentIsAProtocolViolation()
    {
        ReceiverRoom outside = readyRoom(RELEASE_NOW);
        on(outside, chunk(0, 3, 2));
        assertThat(outside.failure()).contains("protocol violation: chunk 0 covers pages 3..4 of a room whose pages 0..3 move");

        ReceiverRoom early = newRoom();
        List<RoomEffect.ReceiverEffect> effects = on(early, chunk(0, 0, 1));
        assertThat(early.failure()).get().asString().startsWith("protocol violation");
        assertThat(effects).last().isEqualTo(new Release(PAGES));
    }

    @Test
    void eventsAfterTheEndChangeNothing()
    {
        ReceiverRoom room = readyRoom(RELEASE_NOW);
        on(room, chunk(0, 0, 4));
        on(room, aux(ROOM, checksumsOf(PAGES)));

        assertThat(on(room, new Abort("late"))).singleElement().isInstanceOf(Ignored.class);
        assertThat(on(room, new PeerLost("late"))).singleElement().isInstanceOf(Ignored.class);
        assertThat(on(room, new Received(new RoomFailed(ROOM, FailureCause.ENGINE, "late")))).singleElement().isInstanceOf(Ignored.class);
        assertThat(on(room, chunk(0, 0, 4))).singleElement().isInstanceOf(Ignored.class);
        assertThat(room.phase()).isEqualTo(SUCCESS);
    }

    @Test
    void releasePolicyPrefersReceiverValidationThenDrainAcksThenFencing()
    {
        assertThat(ReleasePolicy.from(EnumSet.allOf(TransferCapability.class))).isEqualTo(RELEASE_NOW);
        assertThat(ReleasePolicy.from(EnumSet.of(TransferCapability.DRAIN_ACK, TransferCapability.STAGING))).isEqualTo(AWAIT_DRAIN_ACK);
        assertThat(ReleasePolicy.from(EnumSet.of(TransferCapability.FORWARD_SYNC, TransferCapability.ONE_SIDED))).isEqualTo(AWAIT_PEER_FENCE);
        assertThat(ReleasePolicy.from(Set.of())).isEqualTo(AWAIT_PEER_FENCE);
    }
}
