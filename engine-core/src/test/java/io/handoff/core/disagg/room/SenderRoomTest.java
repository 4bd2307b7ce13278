package io.handoff.core.disagg.room;

import io.handoff.core.disagg.control.ControlMessage.AuxRecord;
import io.handoff.core.disagg.control.ControlMessage.ChunkDone;
import io.handoff.core.disagg.control.ControlMessage.DrainAck;
import io.handoff.core.disagg.control.ControlMessage.DrainRequest;
import io.handoff.core.disagg.control.ControlMessage.RoomClaim;
import io.handoff.core.disagg.control.ControlMessage.RoomFailed;
import io.handoff.core.disagg.control.ControlMessage.RoomRequest;
import io.handoff.core.disagg.control.DeadlineClock;
import io.handoff.core.disagg.room.RoomEffect.Complete;
import io.handoff.core.disagg.room.RoomEffect.Drain;
import io.handoff.core.disagg.room.RoomEffect.Fail;
import io.handoff.core.disagg.room.RoomEffect.Ignored;
import io.handoff.core.disagg.room.RoomEffect.Post;
import io.handoff.core.disagg.room.RoomEffect.ReleaseSources;
import io.handoff.core.disagg.room.RoomEffect.Send;
import io.handoff.core.disagg.room.RoomEvent.Abort;
import io.handoff.core.disagg.room.RoomEvent.ChunkForwarded;
import io.handoff.core.disagg.room.RoomEvent.Drained;
import io.handoff.core.disagg.room.RoomEvent.PeerLost;
import io.handoff.core.disagg.room.RoomEvent.PlanCompleted;
import io.handoff.core.disagg.room.RoomEvent.PlanFailed;
import io.handoff.core.disagg.room.RoomEvent.Received;
import io.handoff.core.disagg.room.RoomEvent.Tick;
import io.handoff.spi.transfer.ProducerFence;
import io.handoff.spi.transfer.RoomKey;
import io.handoff.spi.transfer.TransferPlan;
import io.handoff.trace.FailureCause;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.function.IntUnaryOperator;

import static io.handoff.core.disagg.room.RoomPhase.BOOTSTRAPPING;
import static io.handoff.core.disagg.room.RoomPhase.FAILED;
import static io.handoff.core.disagg.room.RoomPhase.SUCCESS;
import static io.handoff.core.disagg.room.RoomPhase.TRANSFERRING;
import static io.handoff.core.disagg.room.RoomPhase.WAITING_FOR_INPUT;
import static org.assertj.core.api.Assertions.assertThat;

class SenderRoomTest
{
    static final RoomKey ROOM = new RoomKey(7, 2);
    static final Duration CLAIM = Duration.ofSeconds(3);
    static final RoomDeadlines DEADLINES = new RoomDeadlines(Duration.ofSeconds(10), Duration.ofSeconds(20), Duration.ofSeconds(5), CLAIM);
    // 40 tokens of page size 4: 10 pages
    static final int PROMPT = 40;
    static final int[] DESTINATIONS = {50, 51, 52, 53, 54, 55, 60, 61, 62, 63};
    static final IntUnaryOperator CHECKSUM = page -> page * 1000 + 1;

    private final DeadlineClock.Manual clock = new DeadlineClock.Manual();

    private SenderRoom newRoom()
    {
        // at most 4 pages per plan
        return new SenderRoom(ROOM, PROMPT, 4, 4, DEADLINES, Optional.of(CHECKSUM), clock.nanos());
    }

    private List<RoomEffect.SenderEffect> on(SenderRoom room, RoomEvent.ForSender event)
    {
        return room.on(event, clock.nanos());
    }

    private static Received request(RoomKey key, int[] pages)
    {
        return new Received(new RoomRequest(key, "rid-1", PROMPT, pages));
    }

    private static ChunkForwarded firstChunk()
    {
        // pages 0..5 from prefill pages 10..15
        return ChunkForwarded.middle(0, 0, new int[] {10, 11, 12, 13, 14, 15}, ProducerFence.DONE);
    }

    private static ChunkForwarded lastChunk()
    {
        return ChunkForwarded.last(1, 6, new int[] {16, 17, 30, 31}, ProducerFence.DONE, 4242);
    }

    private static List<TransferPlan> posted(List<RoomEffect.SenderEffect> effects)
    {
        return effects.stream().filter(Post.class::isInstance).map(effect -> ((Post) effect).plan()).toList();
    }

    @Test
    void staysBootstrappingUntilTheDecodesPagesArriveThenWaitsForInput()
    {
        SenderRoom room = newRoom();
        assertThat(room.phase()).isEqualTo(BOOTSTRAPPING);
        assertThat(on(room, request(ROOM, DESTINATIONS))).isEmpty();
        assertThat(room.phase()).isEqualTo(WAITING_FOR_INPUT);
    }

    @Test
    void chunkForwardedBeforeThePagesArriveIsPostedWhenTheyDo()
    {
        SenderRoom room = newRoom();
        assertThat(on(room, firstChunk())).isEmpty();
        assertThat(room.phase()).isEqualTo(BOOTSTRAPPING);

        List<TransferPlan> plans = posted(on(room, request(ROOM, DESTINATIONS)));
        assertThat(plans).hasSize(2);
        assertThat(room.phase()).isEqualTo(TRANSFERRING);
    }

    @Test
    void chunkBecomesCoalescedPlansOfBoundedSizeToTheGrantedPages()
    {
        SenderRoom room = newRoom();
        on(room, request(ROOM, DESTINATIONS));
        List<TransferPlan> plans = posted(on(room, firstChunk()));

        assertThat(room.phase()).isEqualTo(TRANSFERRING);
        assertThat(plans).hasSize(2);
        TransferPlan first = plans.get(0);
        assertThat(first.room()).isEqualTo(ROOM);
        assertThat(first.chunk()).isZero();
        assertThat(first.firstPageIndex()).isZero();
        assertThat(first.srcPages()).containsExactly(10);
        assertThat(first.dstPages()).containsExactly(50);
        assertThat(first.runLengths()).containsExactly(4);
        TransferPlan second = plans.get(1);
        assertThat(second.firstPageIndex()).isEqualTo(4);
        assertThat(second.srcPages()).containsExactly(14);
        assertThat(second.dstPages()).containsExactly(54);
        assertThat(second.runLengths()).containsExactly(2);
    }

    @Test
    void chunkIsReportedDoneOnlyWhenAllItsPlansCompletedThenTheRoomWaitsForInput()
    {
        SenderRoom room = newRoom();
        on(room, request(ROOM, DESTINATIONS));
        List<TransferPlan> plans = posted(on(room, firstChunk()));

        assertThat(on(room, new PlanCompleted(plans.get(0)))).isEmpty();
        assertThat(room.phase()).isEqualTo(TRANSFERRING);
        assertThat(on(room, new PlanCompleted(plans.get(1)))).containsExactly(new Send(new ChunkDone(ROOM, 0, 0, 6)));
        assertThat(room.phase()).isEqualTo(WAITING_FOR_INPUT);
    }

    @Test
    void lastChunksDataThenAuxRecordWithFirstTokenAndChecksumsOfEveryPageCommitTheRoom()
    {
        SenderRoom room = newRoom();
        on(room, request(ROOM, DESTINATIONS));
        posted(on(room, firstChunk())).forEach(plan -> on(room, new PlanCompleted(plan)));
        List<TransferPlan> lastPlans = posted(on(room, lastChunk()));
        // pages 16,17 -> 60,61 coalesce; 30,31 -> 62,63 coalesce: one plan, two runs
        assertThat(lastPlans).singleElement().satisfies(plan -> {
            assertThat(plan.srcPages()).containsExactly(16, 30);
            assertThat(plan.dstPages()).containsExactly(60, 62);
            assertThat(plan.runLengths()).containsExactly(2, 2);
        });

        List<RoomEffect.SenderEffect> effects = on(room, new PlanCompleted(lastPlans.getFirst()));

        int[] sources = {10, 11, 12, 13, 14, 15, 16, 17, 30, 31};
        int[] checksums = new int[sources.length];
        for (int i = 0; i < sources.length; i++) {
            checksums[i] = CHECKSUM.applyAsInt(sources[i]);
        }
        assertThat(effects).containsExactly(
                new Send(new ChunkDone(ROOM, 1, 6, 4)),
                new Send(new AuxRecord(ROOM, 4242, PROMPT, checksums)),
                new ReleaseSources(),
                new Complete(4242));
        assertThat(room.phase()).isEqualTo(SUCCESS);
        assertThat(room.deadlineNanos()).isEqualTo(Long.MAX_VALUE);
    }

    @Test
    void pagesTheDecodeHoldsAreNeverPostedAndTheChecksumsCoverWhatMoved()
    {
        SenderRoom room = newRoom();
        // the decode's prefix cache holds the prompt's first 7 pages: it grants the last 3
        on(room, new Received(new RoomRequest(ROOM, "rid-1", PROMPT, 7, new int[] {80, 81, 82})));
        assertThat(posted(on(room, firstChunk()))).as("pages 0..5 are all held").isEmpty();
        assertThat(room.phase()).isEqualTo(WAITING_FOR_INPUT);

        List<TransferPlan> plans = posted(on(room, lastChunk()));
        // room pages 7..9 (prefill pages 17, 30, 31), never page 6 (16)
        assertThat(plans).singleElement().satisfies(plan -> {
            assertThat(plan.firstPageIndex()).isEqualTo(7);
            assertThat(plan.srcPages()).containsExactly(17, 30);
            assertThat(plan.dstPages()).containsExactly(80, 81);
            assertThat(plan.runLengths()).containsExactly(1, 2);
        });
        List<RoomEffect.SenderEffect> effects = on(room, new PlanCompleted(plans.getFirst()));
        assertThat(effects).containsExactly(
                new Send(new ChunkDone(ROOM, 1, 7, 3)),
                new Send(new AuxRecord(ROOM, 4242, PROMPT, new int[] {CHECKSUM.applyAsInt(17), CHECKSUM.applyAsInt(30), CHECKSUM.applyAsInt(31)})),
                new ReleaseSources(),
                new Complete(4242));
    }

    @Test
    void aPageListThatHoldsTheWholePromptOrGrantsTheWrongCountFailsTheRoom()
    {
        SenderRoom whole = newRoom();
        assertThat(on(whole, new Received(new RoomRequest(ROOM, "rid-1", PROMPT, 10, new int[0]))))
                .hasAtLeastOneElementOfType(Fail.class);
        assertThat(whole.phase()).isEqualTo(FAILED);

        SenderRoom miscounted = newRoom();
        on(miscounted, new Received(new RoomRequest(ROOM, "rid-1", PROMPT, 4, new int[] {1, 2, 3})));
        assertThat(miscounted.phase()).isEqualTo(FAILED);
        assertThat(miscounted.failure()).hasValueSatisfying(reason -> assertThat(reason).contains("holds 4 and granted 3 pages"));
    }

    @Test
    void withChecksumsOffTheAuxRecordCarriesNone()
    {
        SenderRoom room = new SenderRoom(ROOM, 4, 4, 4, DEADLINES, Optional.empty(), clock.nanos());
        on(room, new Received(new RoomRequest(ROOM, "rid", 4, new int[] {9})));
        TransferPlan plan = posted(on(room, ChunkForwarded.last(0, 0, new int[] {3}, ProducerFence.DONE, 5))).getFirst();
        assertThat(on(room, new PlanCompleted(plan))).contains(new Send(new AuxRecord(ROOM, 5, 4, new int[0])));
    }

    @Test
    void chunksCompletingOutOfOrderAreEachReportedAndTheRoomSucceedsAfterBoth()
    {
        SenderRoom room = newRoom();
        on(room, request(ROOM, DESTINATIONS));
        List<TransferPlan> first = posted(on(room, firstChunk()));
        List<TransferPlan> last = posted(on(room, lastChunk()));

        assertThat(on(room, new PlanCompleted(last.getFirst()))).containsExactly(new Send(new ChunkDone(ROOM, 1, 6, 4)));
        assertThat(room.phase()).isEqualTo(TRANSFERRING);
        on(room, new PlanCompleted(first.get(1)));
        List<RoomEffect.SenderEffect> effects = on(room, new PlanCompleted(first.get(0)));
        assertThat(effects.getFirst()).isEqualTo(new Send(new ChunkDone(ROOM, 0, 0, 6)));
        assertThat(effects).hasAtLeastOneElementOfType(Complete.class);
        assertThat(room.phase()).isEqualTo(SUCCESS);
    }

    @Test
    void aRoomNoDecodeClaimsFailsAtTheClaimDeadlineAsUnclaimedAndTellsTheDecode()
    {
        SenderRoom room = newRoom();
        clock.advance(CLAIM.minusNanos(1));
        assertThat(on(room, new Tick())).isEmpty();

        clock.advance(Duration.ofNanos(1));
        List<RoomEffect.SenderEffect> effects = on(room, new Tick());

        assertThat(room.phase()).isEqualTo(FAILED);
        assertThat(room.failure()).get().asString()
                .startsWith("no decode claimed room 7 (generation 2) within 3000 ms (handoff.disaggregation.claim-timeout)")
                .contains("through the router");
        assertThat(effects).containsExactly(
                new Send(new RoomFailed(ROOM, FailureCause.ROOM_UNCLAIMED, room.failure().orElseThrow())),
                new Fail(room.failure().orElseThrow(), FailureCause.ROOM_UNCLAIMED),
                new ReleaseSources());
    }

    @Test
    void aClaimedRoomIsNoLongerUnderTheClaimDeadline()
    {
        SenderRoom room = newRoom();
        clock.advance(CLAIM.minusNanos(1));
        on(room, request(ROOM, DESTINATIONS));
        clock.advance(CLAIM);
        assertThat(on(room, new Tick())).isEmpty();
        assertThat(room.phase()).isEqualTo(WAITING_FOR_INPUT);
    }

    private static Received claim(RoomKey key)
    {
        return new Received(new RoomClaim(key, "rid-1"));
    }

    @Test
    void aClaimedRoomOutlivesTheClaimTimeoutAndFailsOnlyAtTheBootstrappingDeadlineCountedFromTheClaim()
    {
        SenderRoom room = newRoom();
        clock.advance(Duration.ofSeconds(2));
        assertThat(on(room, claim(ROOM))).isEmpty();
        long claimedAt = clock.nanos();
        assertThat(room.deadlineNanos()).isEqualTo(claimedAt + DEADLINES.bootstrapping().toNanos());

        // well past the claim timeout (3 s from admission): the decode holds the request in its queue
        clock.advance(DEADLINES.bootstrapping().minusNanos(1));
        assertThat(on(room, new Tick())).isEmpty();
        assertThat(room.phase()).isEqualTo(BOOTSTRAPPING);

        clock.advance(Duration.ofNanos(1));
        List<RoomEffect.SenderEffect> effects = on(room, new Tick());
        assertThat(room.phase()).isEqualTo(FAILED);
        assertThat(room.failure()).get().asString()
                .startsWith("the decode claimed room " + ROOM + " for request rid-1 but sent no page list within 10000 ms of the claim")
                .contains("handoff.disaggregation.bootstrapping-timeout");
        assertThat(effects).containsExactly(
                new Send(new RoomFailed(ROOM, FailureCause.DEADLINE, room.failure().orElseThrow())),
                new Fail(room.failure().orElseThrow(), FailureCause.DEADLINE),
                new ReleaseSources());
    }

    @Test
    void aClaimedRoomStillWaitsForThePageListAndServesItAfterTheClaimTimeout()
    {
        SenderRoom room = newRoom();
        on(room, claim(ROOM));
        assertThat(on(room, firstChunk())).isEmpty();
        clock.advance(CLAIM.multipliedBy(2));
        assertThat(on(room, new Tick())).isEmpty();

        assertThat(posted(on(room, request(ROOM, DESTINATIONS)))).hasSize(2);
        assertThat(room.phase()).isEqualTo(TRANSFERRING);
    }

    @Test
    void aDuplicateClaimDoesNotMoveTheDeadlineAndAClaimAfterThePageListOrTheEndIsIgnored()
    {
        SenderRoom room = newRoom();
        on(room, claim(ROOM));
        long deadline = room.deadlineNanos();
        clock.advance(Duration.ofSeconds(4));
        assertThat(on(room, claim(ROOM))).singleElement().isInstanceOf(Ignored.class);
        assertThat(room.deadlineNanos()).isEqualTo(deadline);

        on(room, request(ROOM, DESTINATIONS));
        long waiting = room.deadlineNanos();
        assertThat(on(room, claim(ROOM))).singleElement().isInstanceOf(Ignored.class);
        assertThat(room.deadlineNanos()).isEqualTo(waiting);
        assertThat(room.phase()).isEqualTo(WAITING_FOR_INPUT);

        SenderRoom unclaimed = newRoom();
        clock.advance(CLAIM);
        on(unclaimed, new Tick());
        assertThat(on(unclaimed, claim(ROOM))).singleElement().isInstanceOf(Ignored.class);
        assertThat(unclaimed.phase()).isEqualTo(FAILED);
    }

    @Test
    void aPageListAfterTheRoomFailedUnclaimedIsAnsweredWithThatFailure()
    {
        SenderRoom room = newRoom();
        clock.advance(CLAIM);
        on(room, new Tick());

        List<RoomEffect.SenderEffect> effects = on(room, request(ROOM, DESTINATIONS));

        assertThat(effects).containsExactly(new Send(new RoomFailed(ROOM, FailureCause.ROOM_UNCLAIMED, room.failure().orElseThrow())));
        assertThat(room.failureNotice()).contains(new RoomFailed(ROOM, FailureCause.ROOM_UNCLAIMED, room.failure().orElseThrow()));
        assertThat(posted(on(room, firstChunk()))).isEmpty();
    }

    @Test
    void aClaimForAnotherGenerationClaimsNothing()
    {
        SenderRoom room = newRoom();
        assertThat(on(room, claim(new RoomKey(ROOM.roomId(), ROOM.generation() + 1)))).singleElement().isInstanceOf(Ignored.class);
        clock.advance(CLAIM);
        on(room, new Tick());
        assertThat(room.phase()).isEqualTo(FAILED);
        assertThat(room.failure()).get().asString().startsWith("no decode claimed room 7");
    }

    @Test
    void waitingForInputDeadlineFailsTheRoom()
    {
        SenderRoom room = newRoom();
        clock.advance(Duration.ofSeconds(2));
        on(room, request(ROOM, DESTINATIONS));
        // the new phase's deadline counts from entering it
        clock.advance(Duration.ofSeconds(19));
        assertThat(on(room, new Tick())).isEmpty();
        clock.advance(Duration.ofSeconds(1));
        on(room, new Tick());
        assertThat(room.phase()).isEqualTo(FAILED);
        assertThat(room.failure()).get().asString().contains("in WAITING_FOR_INPUT");
    }

    @Test
    void transferringDeadlineIsReArmedByProgressAndFailsAStalledTransferWithADrain()
    {
        SenderRoom room = newRoom();
        on(room, request(ROOM, DESTINATIONS));
        List<TransferPlan> plans = posted(on(room, firstChunk()));
        clock.advance(Duration.ofSeconds(4));
        on(room, new PlanCompleted(plans.get(0)));
        clock.advance(Duration.ofSeconds(4));
        assertThat(on(room, new Tick())).isEmpty();
        assertThat(room.phase()).isEqualTo(TRANSFERRING);

        clock.advance(Duration.ofSeconds(1));
        List<RoomEffect.SenderEffect> effects = on(room, new Tick());

        assertThat(room.phase()).isEqualTo(FAILED);
        assertThat(room.failure()).get().asString().contains("in TRANSFERRING");
        // a posted plan may still read the sources: drain before releasing them
        assertThat(effects).last().isEqualTo(new Drain(ROOM));
        assertThat(effects).doesNotContain(new ReleaseSources());
        assertThat(on(room, new Drained())).containsExactly(new ReleaseSources());
    }

    @Test
    void aTerminalRoomHasNoDeadlineAndTicksDoNothing()
    {
        SenderRoom room = newRoom();
        on(room, new Abort("client went away"));
        clock.advance(Duration.ofDays(1));
        assertThat(on(room, new Tick())).isEmpty();
        assertThat(room.deadlineNanos()).isEqualTo(Long.MAX_VALUE);
    }

    @Test
    void decodeFailureFailsTheRoomWithoutEchoingItBack()
    {
        SenderRoom room = newRoom();
        on(room, request(ROOM, DESTINATIONS));
        posted(on(room, firstChunk()));

        List<RoomEffect.SenderEffect> effects = on(room, new Received(new RoomFailed(ROOM, FailureCause.ENGINE, "decode out of memory")));

        assertThat(room.phase()).isEqualTo(FAILED);
        assertThat(effects).containsExactly(new Fail("the decode failed the room: decode out of memory", FailureCause.ENGINE), new Drain(ROOM));
    }

    @Test
    void transferFailureFailsTheRoomAndReportsItToTheDecode()
    {
        SenderRoom room = newRoom();
        on(room, request(ROOM, DESTINATIONS));
        TransferPlan plan = posted(on(room, firstChunk())).get(1);

        List<RoomEffect.SenderEffect> effects = on(room, new PlanFailed(plan, "connection reset"));

        String reason = "transfer of chunk 0 (pages 4..5) failed: connection reset";
        assertThat(effects).containsExactly(new Send(new RoomFailed(ROOM, FailureCause.TRANSPORT_FAILURE, reason)), new Fail(reason, FailureCause.TRANSPORT_FAILURE), new Drain(ROOM));
    }

    @Test
    void abortAndPeerLossFailTheRoomOnceAndOnlyAbortTellsThePeer()
    {
        SenderRoom aborted = newRoom();
        assertThat(on(aborted, new Abort("client cancelled"))).containsExactly(
                new Send(new RoomFailed(ROOM, FailureCause.CLIENT_ABORT, "aborted: client cancelled")),
                new Fail("aborted: client cancelled", FailureCause.CLIENT_ABORT), new ReleaseSources());
        assertThat(on(aborted, new PeerLost("heartbeat"))).singleElement().isInstanceOf(Ignored.class);

        SenderRoom lost = newRoom();
        assertThat(on(lost, new PeerLost("no frame for 10 s"))).containsExactly(new Fail("lost the decode: no frame for 10 s", FailureCause.PEER_LOST), new ReleaseSources());
        assertThat(on(lost, new Abort("late"))).singleElement().isInstanceOf(Ignored.class);
    }

    @Test
    void drainRequestOnALiveRoomFailsItAndIsAckedOnlyAfterTheBackendDrained()
    {
        SenderRoom room = newRoom();
        on(room, request(ROOM, DESTINATIONS));
        posted(on(room, firstChunk()));

        assertThat(on(room, new Received(new DrainRequest(ROOM)))).containsExactly(
                new Fail("the decode gave up on the room and asked for a drain", FailureCause.ENGINE), new Drain(ROOM));
        assertThat(on(room, new Drained())).containsExactly(new ReleaseSources(), new Send(new DrainAck(ROOM)));
    }

    @Test
    void drainRequestAfterTheEndIsAckedAtOnceWhenNothingWasPostedOrTheRoomDrained()
    {
        SenderRoom neverPosted = newRoom();
        on(neverPosted, new Abort("x"));
        assertThat(on(neverPosted, new Received(new DrainRequest(ROOM)))).containsExactly(new Send(new DrainAck(ROOM)));

        SenderRoom drained = newRoom();
        on(drained, request(ROOM, DESTINATIONS));
        posted(on(drained, firstChunk()));
        on(drained, new Abort("x"));
        on(drained, new Drained());
        assertThat(on(drained, new Received(new DrainRequest(ROOM)))).containsExactly(new Send(new DrainAck(ROOM)));
    }

    @Test
    void drainRequestAfterSuccessDrainsBeforeAcking()
    {
        SenderRoom room = new SenderRoom(ROOM, 4, 4, 4, DEADLINES, Optional.empty(), clock.nanos());
        on(room, new Received(new RoomRequest(ROOM, "rid", 4, new int[] {9})));
        TransferPlan plan = posted(on(room, ChunkForwarded.last(0, 0, new int[] {3}, ProducerFence.DONE, 5))).getFirst();
        on(room, new PlanCompleted(plan));
        assertThat(room.phase()).isEqualTo(SUCCESS);
        assertThat(room.isSettled()).isTrue();

        assertThat(on(room, new Received(new DrainRequest(ROOM)))).containsExactly(new Drain(ROOM));
        // terminal, but it owes the decode an ack: retiring it now would leave the decode's pages quarantined for good
        assertThat(room.isSettled()).isFalse();
        // a second request while the drain runs is answered by the same drain
        assertThat(on(room, new Received(new DrainRequest(ROOM)))).isEmpty();
        // the sources were released at success already
        assertThat(on(room, new Drained())).containsExactly(new Send(new DrainAck(ROOM)));
        assertThat(room.isSettled()).isTrue();
    }

    @Test
    void aFailedRoomIsSettledOnlyOnceItsDrainEndedAndTheAckItOwesWentOut()
    {
        SenderRoom room = newRoom();
        on(room, request(ROOM, DESTINATIONS));
        posted(on(room, firstChunk()));
        on(room, new Abort("x"));
        assertThat(room.phase().isTerminal()).isTrue();
        assertThat(room.isSettled()).as("draining").isFalse();
        on(room, new Received(new DrainRequest(ROOM)));
        assertThat(room.isSettled()).as("draining, ack owed").isFalse();
        assertThat(on(room, new Drained())).contains(new Send(new DrainAck(ROOM)));
        assertThat(room.isSettled()).isTrue();
    }

    @Test
    void messagesOfAnotherGenerationAreIgnored()
    {
        SenderRoom room = newRoom();
        RoomKey stale = new RoomKey(ROOM.roomId(), ROOM.generation() - 1);
        assertThat(on(room, request(stale, DESTINATIONS))).singleElement().isInstanceOf(Ignored.class);
        assertThat(on(room, new Received(new RoomFailed(stale, FailureCause.ENGINE, "old")))).singleElement().isInstanceOf(Ignored.class);
        assertThat(room.phase()).isEqualTo(BOOTSTRAPPING);
    }

    @Test
    void duplicateRoomRequestIsIgnoredAndAConflictingOneFailsTheRoom()
    {
        SenderRoom room = newRoom();
        on(room, request(ROOM, DESTINATIONS));
        assertThat(on(room, request(ROOM, DESTINATIONS.clone()))).singleElement().isInstanceOf(Ignored.class);
        assertThat(room.phase()).isEqualTo(WAITING_FOR_INPUT);

        int[] other = DESTINATIONS.clone();
        other[3] = 99;
        on(room, request(ROOM, other));
        assertThat(room.phase()).isEqualTo(FAILED);
        assertThat(room.failure()).get().asString().contains("second, different page list");
    }

    @Test
    void pageCountThatDoesNotMatchThePromptFailsTheRoomNamingBothSides()
    {
        SenderRoom room = newRoom();
        List<RoomEffect.SenderEffect> effects = on(room, request(ROOM, new int[] {1, 2, 3}));
        assertThat(room.phase()).isEqualTo(FAILED);
        assertThat(room.failure()).get().asString().isEqualTo(
                "the decode holds 0 and granted 3 pages for a prompt of 40 tokens; this prefill has 40 tokens in 10 pages, and at least the last one moves");
        assertThat(effects.getFirst()).isInstanceOf(Send.class);
    }

    @Test
    void chunkOutOfOrderOrOverlappingFailsTheRoom()
    {
        SenderRoom skipped = newRoom();
        on(skipped, ChunkForwarded.middle(1, 0, new int[] {1}, ProducerFence.DONE));
        assertThat(skipped.failure()).get().asString().contains("expected chunk 0 at page 0");

        SenderRoom overlapping = newRoom();
        on(overlapping, firstChunk());
        on(overlapping, ChunkForwarded.last(1, 5, new int[] {1, 2, 3, 4, 5}, ProducerFence.DONE, 1));
        assertThat(overlapping.failure()).get().asString().contains("starts at page 5, expected chunk 1 at page 6");

        SenderRoom shortLast = newRoom();
        on(shortLast, ChunkForwarded.last(0, 0, new int[] {1, 2}, ProducerFence.DONE, 1));
        assertThat(shortLast.failure()).get().asString().contains("covers pages 0..1 of a room of 10 pages");
    }

    @Test
    void completionsAndForwardsAfterTheEndAreIgnored()
    {
        SenderRoom room = newRoom();
        on(room, request(ROOM, DESTINATIONS));
        TransferPlan plan = posted(on(room, firstChunk())).getFirst();
        on(room, new Abort("stop"));

        assertThat(on(room, new PlanCompleted(plan))).singleElement().isInstanceOf(Ignored.class);
        assertThat(on(room, lastChunk())).singleElement().isInstanceOf(Ignored.class);
        assertThat(on(room, new Received(new RoomFailed(ROOM, FailureCause.ENGINE, "late")))).singleElement().isInstanceOf(Ignored.class);
        assertThat(room.failure()).contains("aborted: stop");
    }

    @Test
    void theFenceOfTheForwardTravelsWithEveryPlan()
    {
        ProducerFence fence = new TestFence(17);
        SenderRoom room = newRoom();
        on(room, request(ROOM, DESTINATIONS));
        assertThat(posted(on(room, ChunkForwarded.middle(0, 0, new int[] {1, 2, 3, 4, 5}, fence))))
                .hasSize(2)
                .allSatisfy(plan -> assertThat(plan.fence()).isSameAs(fence));
    }

    @Test
    void spuriousDrainedIsIgnored()
    {
        SenderRoom room = newRoom();
        assertThat(on(room, new Drained())).singleElement().isInstanceOf(Ignored.class);
    }

    record TestFence(long step)
            implements ProducerFence
    {
        @Override
        public boolean isDone()
        {
            return true;
        }

        @Override
        public boolean failed()
        {
            return false;
        }

        @Override
        public void await(Duration timeout) {}
    }
}
