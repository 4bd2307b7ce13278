package io.handoff.core.transfer;

import io.handoff.spi.transfer.PlanWork;
import io.handoff.spi.transfer.ProducerFence;
import io.handoff.spi.transfer.RoomKey;
import io.handoff.spi.transfer.TransferFailure;
import io.handoff.spi.transfer.TransferPlan;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import static io.handoff.core.transfer.ScriptedPeer.POOL;
import static io.handoff.core.transfer.ScriptedPeer.STRIDE;
import static io.handoff.spi.transfer.TransferCapability.DRAIN_ACK;
import static io.handoff.spi.transfer.TransferCapability.PIPELINED;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * Several plans in flight on one link ({@link io.handoff.spi.transfer.TransferCapability#PIPELINED}): the peer is
 * handed plans before the earlier ones are reported, never more than the window, and every rule of the one-at-a-time
 * link still holds: each plan heard exactly once, drains wait for every plan of their room, an unsettled failure
 * proves no drain, a missing report fences the link. The scripted peer keeps each plan it was handed and the test
 * reports them, in the order it chooses, from its own thread.
 */
class TransferLinkWindowTest
{
    private static final RoomKey ROOM = new RoomKey(7, 1);
    private static final RoomKey OTHER_ROOM = new RoomKey(8, 0);
    private static final Duration LONG = Duration.ofSeconds(30);
    private static final TransferLink.Timeouts TIMEOUTS = new TransferLink.Timeouts(LONG, LONG, Duration.ofSeconds(10));

    @Test
    void aPipelinedPeerIsHandedPlansBeforeTheEarlierAreReportedButNeverMoreThanTheWindow()
            throws Exception
    {
        HeldPeer held = new HeldPeer(PIPELINED, DRAIN_ACK);
        try (TransferLink link = start(held.peer, 3)) {
            assertThat(link.window()).isEqualTo(3);
            List<Heard> heard = List.of(post(link, plan(ROOM, 0)), post(link, plan(ROOM, 1)), post(link, plan(OTHER_ROOM, 2)),
                    post(link, plan(ROOM, 3)), post(link, plan(OTHER_ROOM, 4)));
            PlanWork first = held.next();
            PlanWork second = held.next();
            PlanWork third = held.next();
            // Three handed over, none reported: the fourth waits for a report.
            assertThat(held.unreportedWhenHanded).containsExactly(0, 1, 2);

            second.completed(STRIDE);
            assertThat(heard.get(1).await()).isEqualTo("completed " + STRIDE);
            PlanWork fourth = held.next();
            third.completed(STRIDE);
            PlanWork fifth = held.next();
            // reported out of order: each plan hears its own outcome, once
            fifth.completed(STRIDE);
            first.failed(new TransferFailure("chunk 0 refused", true));
            fourth.completed(STRIDE);

            assertThat(heard.get(0).await()).isEqualTo("failed: chunk 0 refused");
            for (int i = 1; i < heard.size(); i++) {
                assertThat(heard.get(i).await()).isEqualTo("completed " + STRIDE);
            }
            assertThat(held.unreportedWhenHanded).allSatisfy(unreported -> assertThat(unreported).isLessThan(3));
            assertThat(held.peer.sent).extracting(TransferPlan::chunk).containsExactly(0, 1, 2, 3, 4);
            link.drain(ROOM).get(30, TimeUnit.SECONDS);
            link.drain(OTHER_ROOM).get(30, TimeUnit.SECONDS);
            assertThat(link.violation()).isNull();
            assertThat(heard).allSatisfy(outcome -> assertThat(outcome.calls()).isEqualTo(1));
        }
    }

    @Test
    void aPeerThatIsNotPipelinedGetsOnePlanAtATimeWhateverTheWindow()
            throws Exception
    {
        HeldPeer held = new HeldPeer(DRAIN_ACK);
        try (TransferLink link = start(held.peer, 8)) {
            assertThat(link.window()).isEqualTo(1);
            Heard first = post(link, plan(ROOM, 0));
            Heard second = post(link, plan(ROOM, 1));
            PlanWork work = held.next();
            held.peer.calls.add("report chunk 0");
            work.completed(STRIDE);
            held.next().completed(STRIDE);

            assertThat(first.await()).isEqualTo("completed " + STRIDE);
            assertThat(second.await()).isEqualTo("completed " + STRIDE);
            assertThat(held.unreportedWhenHanded).containsExactly(0, 0);
            assertThat(held.peer.calls).containsSubsequence("send 7#1 chunk 0", "report chunk 0", "send 7#1 chunk 1");
        }
    }

    @Test
    void aDrainWaitsForEveryPlanOfItsRoomInFlightAndNotForOtherRooms()
            throws Exception
    {
        HeldPeer held = new HeldPeer(PIPELINED, DRAIN_ACK);
        try (TransferLink link = start(held.peer, 4)) {
            Heard roomFirst = post(link, plan(ROOM, 0));
            Heard other = post(link, plan(OTHER_ROOM, 1));
            Heard roomLast = post(link, plan(ROOM, 2));
            PlanWork first = held.next();
            PlanWork otherWork = held.next();
            PlanWork last = held.next();
            CompletableFuture<Void> drain = link.drain(ROOM);
            CompletableFuture<Void> otherDrain = link.drain(OTHER_ROOM);

            first.completed(STRIDE);
            assertThat(roomFirst.await()).startsWith("completed");
            otherWork.completed(STRIDE);
            assertThat(other.await()).startsWith("completed");
            otherDrain.get(30, TimeUnit.SECONDS);
            // the room's last plan is still in flight: its drain proves nothing yet
            assertThat(drain).isNotDone();

            last.completed(STRIDE);
            assertThat(roomLast.await()).startsWith("completed");
            drain.get(30, TimeUnit.SECONDS);
        }
    }

    @Test
    void aPlanFailingUnsettledWhileTheNextIsInFlightLeavesNoDrainProved()
            throws Exception
    {
        HeldPeer held = new HeldPeer(PIPELINED, DRAIN_ACK);
        try (TransferLink link = start(held.peer, 2)) {
            Heard failing = post(link, plan(ROOM, 0));
            Heard next = post(link, plan(ROOM, 1));
            PlanWork first = held.next();
            PlanWork second = held.next();
            CompletableFuture<Void> drain = link.drain(ROOM);

            first.failed(new TransferFailure("the connection broke with writes outstanding", false));
            second.completed(STRIDE);

            assertThat(failing.await()).isEqualTo("failed: the connection broke with writes outstanding");
            assertThat(next.await()).isEqualTo("completed " + STRIDE);
            assertThatThrownBy(() -> drain.get(30, TimeUnit.SECONDS)).hasCauseInstanceOf(IllegalStateException.class)
                    .hasMessageContaining("test peer x cannot prove that no write of room 7#1 is in flight: the connection broke with writes outstanding");
            assertThatThrownBy(() -> link.drain(OTHER_ROOM).join()).hasMessageContaining("cannot prove that no write of room 8#0 is in flight");
        }
    }

    @Test
    void aPlanNeverReportedWhileOthersAreFailsAtItsReportTimeoutAndFencesTheLink()
            throws Exception
    {
        HeldPeer held = new HeldPeer(PIPELINED, DRAIN_ACK);
        // the one wait that passes here is the report timeout under test
        TransferLink.Timeouts shortReport = new TransferLink.Timeouts(LONG, Duration.ofMillis(200), Duration.ofSeconds(10));
        try (TransferLink link = TransferLink.start("test", "x", held.peer, POOL, POOL, shortReport, TransferHooks.NONE, 2)) {
            CompletableFuture<String> fenced = new CompletableFuture<>();
            link.onFenced(fenced::complete);
            Heard silent = post(link, plan(ROOM, 0));
            Heard reported = post(link, plan(OTHER_ROOM, 1));
            held.next();
            held.next().completed(STRIDE);

            assertThat(reported.await()).isEqualTo("completed " + STRIDE);
            String violation = "test peer x reported no outcome for room 7#1 chunk 0 within PT0.2S (transfer protocol violation)";
            assertThat(silent.await()).isEqualTo("failed: " + violation + "; the connection is fenced");
            assertThat(fenced.get(30, TimeUnit.SECONDS)).isEqualTo(violation);
            assertThat(silent.calls()).isEqualTo(1);
            assertThat(reported.calls()).isEqualTo(1);
        }
    }

    @Test
    void aSecondReportFencesTheLinkAndAPlanStillInFlightThenFailsUnsettledWhateverTheBackendReports()
            throws Exception
    {
        HeldPeer held = new HeldPeer(PIPELINED, DRAIN_ACK);
        held.peer.script(1, work -> {
            work.awaitFence();
            work.completed(STRIDE);
            work.completed(STRIDE);
        });
        try (TransferLink link = start(held.peer, 2)) {
            CompletableFuture<String> fenced = new CompletableFuture<>();
            link.onFenced(fenced::complete);
            Heard inFlight = post(link, plan(ROOM, 0));
            Heard twice = post(link, plan(OTHER_ROOM, 1));
            PlanWork first = held.next();

            String violation = "test peer x reported a second outcome for room 8#0 chunk 1 (transfer protocol violation)";
            assertThat(twice.await()).isEqualTo("failed: " + violation + "; the connection is fenced");
            assertThat(fenced.get(30, TimeUnit.SECONDS)).isEqualTo(violation);
            // the fenced backend's word on the plan it still held counts for nothing
            first.completed(STRIDE);
            assertThat(inFlight.await()).isEqualTo("failed: test peer x was fenced while room 7#1 chunk 0 was in flight (" + violation
                    + "); its writes may still land");
            assertThat(inFlight.calls()).isEqualTo(1);
            assertThat(twice.calls()).isEqualTo(1);
            assertThatThrownBy(() -> link.drain(ROOM).join()).hasMessageContaining(violation);
        }
    }

    @Test
    void closingWithPlansInFlightFailsTheQueuedAndClosesThePeerOnlyAfterTheirOutcomes()
            throws Exception
    {
        HeldPeer held = new HeldPeer(PIPELINED, DRAIN_ACK);
        TransferLink link = start(held.peer, 2);
        Heard first = post(link, plan(ROOM, 0));
        Heard second = post(link, plan(ROOM, 1));
        Heard queued = post(link, plan(ROOM, 2));
        PlanWork firstWork = held.next();
        PlanWork secondWork = held.next();
        Thread closing = Thread.ofPlatform().start(link::close);
        held.peer.awaitUnblocked();

        assertThat(queued.await()).isEqualTo("failed: test peer x was closed before the plan was sent");
        assertThat(held.peer.closes.get()).isZero();
        firstWork.completed(STRIDE);
        secondWork.failed(new TransferFailure("test peer x was closed while sending room 7#1 chunk 1", true));
        closing.join(TimeUnit.SECONDS.toMillis(30));

        assertThat(first.await()).isEqualTo("completed " + STRIDE);
        assertThat(second.await()).isEqualTo("failed: test peer x was closed while sending room 7#1 chunk 1");
        held.peer.awaitClosed();
        assertThat(held.peer.calls).containsSubsequence("send 7#1 chunk 0", "send 7#1 chunk 1", "unblock", "close");
        link.drain(ROOM).get(30, TimeUnit.SECONDS);
    }

    @Test
    void outcomesInFlightAreSettledWhileTheTransferThreadWaitsOnTheNextPlansFence()
            throws Exception
    {
        HeldPeer held = new HeldPeer(PIPELINED, DRAIN_ACK);
        try (TransferLink link = start(held.peer, 2)) {
            CompletableFuture<Void> forward = new CompletableFuture<>();
            Heard first = post(link, plan(ROOM, 0));
            Heard waiting = post(link, new TransferPlan(ROOM, 1, 1, new int[] {1}, new int[] {1}, new int[] {1}, new FutureFence(forward)));
            PlanWork firstWork = held.next();
            firstWork.completed(STRIDE);
            // the transfer thread now waits on chunk 1's fence; chunk 0's outcome is delivered meanwhile
            assertThat(first.await()).isEqualTo("completed " + STRIDE);
            assertThat(held.peer.sent).hasSize(1);

            forward.complete(null);
            held.next().completed(STRIDE);
            assertThat(waiting.await()).isEqualTo("completed " + STRIDE);
        }
    }

    private static TransferLink start(ScriptedPeer peer, int window)
    {
        return TransferLink.start("test", "x", peer, POOL, POOL, TIMEOUTS, TransferHooks.NONE, window);
    }

    private static Heard post(TransferLink link, TransferPlan plan)
    {
        Heard heard = new Heard();
        link.post(plan, heard);
        return heard;
    }

    private static TransferPlan plan(RoomKey room, int chunk)
    {
        return new TransferPlan(room, chunk, chunk, new int[] {chunk}, new int[] {chunk}, new int[] {1}, ProducerFence.DONE);
    }

    /**
     * A scripted peer whose send keeps the plan unreported (after the fence and the read, as a pipelined backend
     * does) and records how many plans handed before it were still unreported then.
     */
    private static final class HeldPeer
    {
        final ScriptedPeer peer;
        final BlockingQueue<PlanWork> handed = new LinkedBlockingQueue<>();
        final List<Integer> unreportedWhenHanded = new CopyOnWriteArrayList<>();
        private final AtomicInteger reported = new AtomicInteger();
        private final AtomicInteger handedCount = new AtomicInteger();

        HeldPeer(io.handoff.spi.transfer.TransferCapability... capabilities)
        {
            this.peer = new ScriptedPeer(capabilities);
            for (int chunk = 0; chunk < 8; chunk++) {
                peer.script(chunk, work -> {
                    unreportedWhenHanded.add(handedCount.getAndIncrement() - reported.get());
                    work.awaitFence();
                    handed.add(new Counted(work));
                });
            }
        }

        /** The next plan handed to the peer, waiting for it (30 s at most). */
        PlanWork next()
                throws InterruptedException
        {
            PlanWork work = handed.poll(30, TimeUnit.SECONDS);
            assertThat(work).as("the link handed the peer another plan").isNotNull();
            return work;
        }

        /** Counts a plan as reported when the test reports it, before the link hears of it. */
        private final class Counted
                implements PlanWork
        {
            private final PlanWork work;

            Counted(PlanWork work)
            {
                this.work = work;
            }

            @Override
            public TransferPlan plan()
            {
                return work.plan();
            }

            @Override
            public void awaitFence()
                    throws TransferFailure
            {
                work.awaitFence();
            }

            @Override
            public void reading()
                    throws TransferFailure
            {
                work.reading();
            }

            @Override
            public void pageDone(int pageIndex)
            {
                work.pageDone(pageIndex);
            }

            @Override
            public boolean stopped()
            {
                return work.stopped();
            }

            @Override
            public void completed(long bytes)
            {
                reported.incrementAndGet();
                work.completed(bytes);
            }

            @Override
            public void failed(TransferFailure failure)
            {
                reported.incrementAndGet();
                work.failed(failure);
            }
        }
    }

    /** A fence the test completes. */
    private record FutureFence(CompletableFuture<Void> forward)
            implements ProducerFence
    {
        @Override
        public long step()
        {
            return 3;
        }

        @Override
        public boolean isDone()
        {
            return forward.isDone();
        }

        @Override
        public boolean failed()
        {
            return forward.isCompletedExceptionally();
        }

        @Override
        public void await(Duration timeout)
                throws java.util.concurrent.TimeoutException
        {
            try {
                forward.get(timeout.toNanos(), TimeUnit.NANOSECONDS);
            }
            catch (java.util.concurrent.ExecutionException e) {
                throw new IllegalStateException("step 3 failed", e);
            }
            catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new IllegalStateException(e);
            }
        }
    }

    /** A listener that keeps its one outcome ("completed BYTES" or "failed: REASON") and counts how often it heard. */
    private static final class Heard
            implements PlanListener
    {
        private final CompletableFuture<String> outcome = new CompletableFuture<>();
        private final AtomicInteger calls = new AtomicInteger();

        @Override
        public void completed(TransferPlan plan, long bytes)
        {
            calls.incrementAndGet();
            outcome.complete("completed " + bytes);
        }

        @Override
        public void failed(TransferPlan plan, String reason)
        {
            calls.incrementAndGet();
            outcome.complete("failed: " + reason);
        }

        String await()
                throws Exception
        {
            return outcome.get(30, TimeUnit.SECONDS);
        }

        int calls()
        {
            return calls.get();
        }
    }
}
