package io.handoff.core.transfer;

import io.handoff.core.transfer.ScriptedPeer.Gate;
import io.handoff.spi.transfer.PageGeometry;
import io.handoff.spi.transfer.PlanWork;
import io.handoff.spi.transfer.ProducerFence;
import io.handoff.spi.transfer.RoomKey;
import io.handoff.spi.transfer.TransferFailure;
import io.handoff.spi.transfer.TransferPlan;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicInteger;

import static io.handoff.core.transfer.ScriptedPeer.POOL;
import static io.handoff.core.transfer.ScriptedPeer.STRIDE;
import static io.handoff.spi.transfer.TransferCapability.DRAIN_ACK;
import static io.handoff.spi.transfer.TransferCapability.FORWARD_SYNC;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * The rules {@link TransferLink} enforces for every backend, proven against a {@link ScriptedPeer}: the test decides
 * what each chunk's send does, holds the transfer thread on gates and fences it controls, and never sleeps to provoke
 * an ordering (the one wait that passes is the report timeout under test).
 */
class TransferLinkTest
{
    private static final RoomKey ROOM = new RoomKey(7, 1);
    private static final RoomKey OTHER_ROOM = new RoomKey(8, 0);
    private static final Duration LONG = Duration.ofSeconds(30);
    private static final TransferLink.Timeouts TIMEOUTS = new TransferLink.Timeouts(LONG, LONG, Duration.ofSeconds(10));

    // --- Posting, order, exactly once ---

    @Test
    void runsPlansOneAtATimeInPostOrderAndReportsEachExactlyOnce()
            throws Exception
    {
        ScriptedPeer peer = new ScriptedPeer(DRAIN_ACK);
        TransferLink link = start(peer);
        Gate gate = peer.gate(0);
        List<TransferPlan> plans = List.of(plan(ROOM, 0, 0), plan(OTHER_ROOM, 1, 1), plan(ROOM, 2, 2), plan(OTHER_ROOM, 3, 3));
        List<Heard> heard = plans.stream().map(plan -> postHeard(link, plan)).toList();
        gate.awaitEntered();
        // While the first plan is held inside send, nothing else was handed over.
        assertThat(peer.sent).containsExactly(plans.getFirst());
        gate.open();

        for (Heard outcome : heard) {
            assertThat(outcome.await()).isEqualTo("completed " + STRIDE);
        }
        assertThat(peer.sent).containsExactlyElementsOf(plans);
        assertThat(peer.mostSendingAtOnce()).isEqualTo(1);
        link.close();
        peer.awaitClosed();
        assertThat(heard).allSatisfy(outcome -> assertThat(outcome.calls()).isEqualTo(1));
    }

    @Test
    void aPlanReportedLaterFromAnotherThreadHoldsTheNextPlanUntilTheReport()
            throws Exception
    {
        ScriptedPeer peer = new ScriptedPeer(DRAIN_ACK);
        try (TransferLink link = start(peer)) {
            CompletableFuture<PlanWork> handedOver = new CompletableFuture<>();
            peer.script(0, handedOver::complete);
            Heard first = postHeard(link, plan(ROOM, 0, 0));
            Heard second = postHeard(link, plan(ROOM, 1, 1));
            PlanWork work = handedOver.get(30, TimeUnit.SECONDS);

            peer.calls.add("report chunk 0");
            work.completed(STRIDE);

            assertThat(first.await()).isEqualTo("completed " + STRIDE);
            assertThat(second.await()).isEqualTo("completed " + STRIDE);
            assertThat(peer.calls).containsSubsequence("send 7#1 chunk 0", "report chunk 0", "send 7#1 chunk 1");
        }
    }

    @Test
    void aListenerThatThrowsIsHeardOnceAndDoesNotStopTheTransferThread()
            throws Exception
    {
        ScriptedPeer peer = new ScriptedPeer(DRAIN_ACK);
        try (TransferLink link = start(peer)) {
            AtomicInteger calls = new AtomicInteger();
            link.post(plan(ROOM, 0, 0), new PlanListener()
            {
                @Override
                public void completed(TransferPlan plan, long bytes)
                {
                    calls.incrementAndGet();
                    throw new IllegalStateException("listener bug");
                }

                @Override
                public void failed(TransferPlan plan, String reason)
                {
                    calls.incrementAndGet();
                    throw new IllegalStateException("listener bug");
                }
            });

            assertThat(postHeard(link, plan(ROOM, 1, 1)).await()).startsWith("completed");
            assertThat(calls.get()).isEqualTo(1);
            link.drain(ROOM).get(30, TimeUnit.SECONDS);
        }
    }

    @Test
    void aListenerThatThrowsAnErrorStopsTheThreadButLeavesNoPlanOrDrainWaiting()
            throws Exception
    {
        ScriptedPeer peer = new ScriptedPeer(DRAIN_ACK);
        try (TransferLink link = start(peer)) {
            Gate gate = peer.gate(0);
            link.post(plan(ROOM, 0, 0), new Heard()
            {
                @Override
                public void completed(TransferPlan plan, long bytes)
                {
                    throw new AssertionError("a listener's own bug");
                }
            });
            Heard queued = postHeard(link, plan(OTHER_ROOM, 1, 1));
            gate.awaitEntered();
            CompletableFuture<Void> drained = link.drain(ROOM);
            gate.open();

            drained.get(30, TimeUnit.SECONDS);
            assertThat(queued.await()).isEqualTo("failed: test peer x: its transfer thread stopped on java.lang.AssertionError: "
                    + "a listener's own bug; the plan was not sent");
            peer.awaitClosed();
            assertThat(link.drain(OTHER_ROOM)).isCompleted();
            assertThat(postHeard(link, plan(ROOM, 2, 2)).await()).isEqualTo("failed: test peer x is closed; the plan was not sent");
        }
    }

    // --- Bounds ---

    @Test
    void aPlanOutsideTheSourcePagesFailsSettledWithNothingSent()
            throws Exception
    {
        ScriptedPeer peer = new ScriptedPeer(DRAIN_ACK);
        try (TransferLink link = start(peer)) {
            TransferPlan outside = new TransferPlan(ROOM, 0, 0, new int[] {1, 6}, new int[] {1, 2}, new int[] {1, 3}, ProducerFence.DONE);

            assertFailsSettledWithNothingSent(link, peer, outside, "plan for room 7#1 chunk 0: run 1 copies pages 6+3 to 2+3, "
                    + "outside the 8 source or 8 destination pages; nothing was sent");
        }
    }

    @Test
    void aPlanOutsideTheDestinationPagesFailsSettledWithNothingSent()
            throws Exception
    {
        ScriptedPeer peer = new ScriptedPeer(DRAIN_ACK);
        try (TransferLink link = TransferLink.start("test", "x", peer, POOL, new PageGeometry(List.of(STRIDE), 4), TIMEOUTS,
                TransferHooks.NONE)) {
            TransferPlan outside = new TransferPlan(ROOM, 0, 0, new int[] {5}, new int[] {3}, new int[] {2}, ProducerFence.DONE);

            assertFailsSettledWithNothingSent(link, peer, outside, "plan for room 7#1 chunk 0: run 0 copies pages 5+2 to 3+2, "
                    + "outside the 8 source or 4 destination pages; nothing was sent");
            // The link goes on: a plan inside the pages is sent.
            assertThat(postHeard(link, plan(ROOM, 1, 3)).await()).isEqualTo("completed " + STRIDE);
        }
    }

    // --- Drain ---

    @Test
    void drainCompletesOnlyAfterTheRoomsOutstandingPlansWereReported()
            throws Exception
    {
        ScriptedPeer peer = new ScriptedPeer(DRAIN_ACK);
        try (TransferLink link = start(peer)) {
            Gate gate = peer.gate(0);
            List<String> events = new CopyOnWriteArrayList<>();
            link.post(plan(ROOM, 0, 0), new Heard(events));
            link.post(plan(ROOM, 1, 1), new Heard(events));
            link.post(plan(OTHER_ROOM, 0, 2), new Heard(events));
            gate.awaitEntered();

            CompletableFuture<Void> drained = link.drain(ROOM);
            CompletableFuture<Void> drainHeard = drained.thenRun(() -> events.add("drained " + ROOM));
            assertThat(drained).isNotDone();
            assertThat(link.drain(OTHER_ROOM)).isNotDone();
            gate.open();

            drainHeard.get(30, TimeUnit.SECONDS);
            // The drain completes on the transfer thread right after the room's last listener, before the next plan runs.
            assertThat(List.copyOf(events).subList(0, 3)).containsExactly("completed 7#1 chunk 0", "completed 7#1 chunk 1", "drained 7#1");
        }
    }

    @Test
    void cancellingAFailedRoomDropsItsQueuedPlansUnsentAndItsDrainWaitsOnlyForThePlanInFlight()
            throws Exception
    {
        ScriptedPeer peer = new ScriptedPeer(DRAIN_ACK);
        try (TransferLink link = start(peer)) {
            Gate inFlight = peer.gate(0);
            List<String> events = new CopyOnWriteArrayList<>();
            link.post(plan(ROOM, 0, 0), new Heard(events));
            link.post(plan(ROOM, 1, 1), new Heard(events));
            link.post(plan(OTHER_ROOM, 2, 2), new Heard(events));
            link.post(plan(ROOM, 3, 3), new Heard(events));
            inFlight.awaitEntered();

            link.cancel(ROOM);
            CompletableFuture<Void> drained = link.drain(ROOM);
            // the queued plans of the room were failed without being sent; the one the backend holds is still in flight
            assertThat(events).containsExactly("failed 7#1 chunk 1", "failed 7#1 chunk 3");
            assertThat(drained).isNotDone();
            assertThat(link.drain(ROOM)).isNotDone();

            inFlight.open();
            drained.get(30, TimeUnit.SECONDS);
            link.drain(OTHER_ROOM).get(30, TimeUnit.SECONDS);
            assertThat(peer.sent).extracting(TransferPlan::chunk).containsExactly(0, 2);
            assertThat(events).contains("completed 7#1 chunk 0", "completed 8#0 chunk 2");
        }
    }

        @Test
    void drainOfARoomWithNothingOutstandingCompletesAtOnce()
    {
        try (TransferLink link = start(new ScriptedPeer(DRAIN_ACK))) {
            assertThat(link.drain(new RoomKey(99, 0))).isCompleted();
        }
    }

    @Test
    void anUnsettledFailureMakesEveryLaterDrainFailNamingItsReason()
            throws Exception
    {
        ScriptedPeer peer = new ScriptedPeer(DRAIN_ACK);
        try (TransferLink link = start(peer)) {
            Gate gate = peer.gate(0, work -> {
                work.awaitFence();
                throw new TransferFailure("the flush did not complete; the puts may still land", false);
            });
            Heard failing = postHeard(link, plan(ROOM, 0, 0));
            gate.awaitEntered();
            CompletableFuture<Void> waiting = link.drain(ROOM);
            gate.open();

            assertThat(failing.await()).isEqualTo("failed: the flush did not complete; the puts may still land");
            assertThatThrownBy(() -> waiting.get(30, TimeUnit.SECONDS)).hasCauseInstanceOf(IllegalStateException.class)
                    .hasMessageContaining("test peer x cannot prove that no write of room 7#1 is in flight: the flush did not complete");
            // A later plan that completes does not bring the promise back, for any room.
            assertThat(postHeard(link, plan(OTHER_ROOM, 1, 1)).await()).startsWith("completed");
            assertThat(link.drain(OTHER_ROOM)).isCompletedExceptionally();
            assertThatThrownBy(() -> link.drain(new RoomKey(99, 0)).join())
                    .hasMessageContaining("cannot prove that no write of room 99#0 is in flight: the flush did not complete");
            // An unsettled failure is the transport's honest answer, not a protocol violation.
            assertThat(link.violation()).isNull();
        }
    }

    @Test
    void aSettledFailureKeepsTheDrainPromise()
            throws Exception
    {
        ScriptedPeer peer = new ScriptedPeer(DRAIN_ACK);
        try (TransferLink link = start(peer)) {
            peer.script(0, _ -> {
                throw new TransferFailure("the receiver refused the plan", true);
            });
            assertThat(postHeard(link, plan(ROOM, 0, 0)).await()).isEqualTo("failed: the receiver refused the plan");
            link.drain(ROOM).get(30, TimeUnit.SECONDS);
            assertThat(link.drain(OTHER_ROOM)).isCompleted();
        }
    }

    // --- Close ---

    @Test
    void closeFailsTheQueuedPlansUnblocksThePeerAndLetsThePlanInFlightEnd()
            throws Exception
    {
        ScriptedPeer peer = new ScriptedPeer(DRAIN_ACK);
        TransferLink link = start(peer);
        Gate gate = peer.gate(0);
        Heard inFlight = postHeard(link, plan(ROOM, 0, 0));
        Heard queued = postHeard(link, plan(ROOM, 1, 1));
        gate.awaitEntered();

        // close() waits for the plan in flight, so it runs on another thread while the gate holds that plan.
        CompletableFuture<Void> closing = CompletableFuture.runAsync(link::close);
        assertThat(queued.await()).isEqualTo("failed: test peer x was closed before the plan was sent");
        assertThat(closing).isNotDone();
        // The send in flight stands for blocked I/O that unblock() wakes.
        peer.awaitUnblocked();
        gate.open();
        closing.get(30, TimeUnit.SECONDS);

        assertThat(inFlight.await()).startsWith("completed");
        assertThat(peer.sent).extracting(TransferPlan::chunk).containsExactly(0);
        // The peer is closed once, on the transfer thread, after its last plan; unblock came from the closing thread before.
        assertThat(peer.closedOn).isEqualTo("test-x");
        link.close();
        assertThat(peer.unblocks.get()).isEqualTo(1);
        assertThat(peer.closes.get()).isEqualTo(1);
        assertThat(peer.calls).containsExactly("send 7#1 chunk 0", "unblock", "close");
    }

    @Test
    void closeDoesNotUnblockAPeerTheTransferThreadClosedAlready()
            throws Exception
    {
        ScriptedPeer peer = new ScriptedPeer(DRAIN_ACK);
        TransferLink link = start(peer);
        Gate gate = peer.gate(0);
        Heard inFlight = postHeard(link, plan(ROOM, 0, 0));
        // The queued plan's listener runs on the closing thread, between closing the queue and unblocking the peer:
        // it holds close() there until the transfer thread has ended its plan and closed the peer.
        CountDownLatch failingQueued = new CountDownLatch(1);
        Heard queued = new Heard()
        {
            @Override
            public void failed(TransferPlan plan, String reason)
            {
                failingQueued.countDown();
                try {
                    peer.awaitClosed();
                }
                catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
                super.failed(plan, reason);
            }
        };
        link.post(plan(ROOM, 1, 1), queued);
        gate.awaitEntered();

        CompletableFuture<Void> closing = CompletableFuture.runAsync(link::close);
        assertThat(failingQueued.await(30, TimeUnit.SECONDS)).isTrue();
        gate.open();
        closing.get(30, TimeUnit.SECONDS);

        assertThat(inFlight.await()).startsWith("completed");
        assertThat(queued.await()).isEqualTo("failed: test peer x was closed before the plan was sent");
        assertThat(peer.calls).containsExactly("send 7#1 chunk 0", "close");
        assertThat(peer.unblocks.get()).isZero();
    }

    @Test
    void aPlanPostedAfterCloseFailsAtOnce()
            throws Exception
    {
        ScriptedPeer peer = new ScriptedPeer(DRAIN_ACK);
        TransferLink link = start(peer);
        link.close();

        Heard late = postHeard(link, plan(ROOM, 0, 0));
        assertThat(late.await()).isEqualTo("failed: test peer x is closed; the plan was not sent");
        assertThat(late.calls()).isEqualTo(1);
        assertThat(peer.sent).isEmpty();
        assertThat(link.drain(ROOM)).isCompleted();
        peer.awaitClosed();
        assertThat(peer.closes.get()).isEqualTo(1);
    }

    @Test
    void closeFromTheTransferThreadItselfReturnsAndTheThreadStillClosesThePeer()
            throws Exception
    {
        ScriptedPeer peer = new ScriptedPeer(DRAIN_ACK);
        TransferLink link = start(peer);
        Gate gate = peer.gate(0);
        AtomicInteger closedFromListener = new AtomicInteger();
        link.post(plan(ROOM, 0, 0), new Heard()
        {
            @Override
            public void completed(TransferPlan plan, long bytes)
            {
                link.close();
                closedFromListener.incrementAndGet();
                super.completed(plan, bytes);
            }
        });
        Heard queued = postHeard(link, plan(ROOM, 1, 1));
        gate.awaitEntered();
        gate.open();

        assertThat(queued.await()).isEqualTo("failed: test peer x was closed before the plan was sent");
        peer.awaitClosed();
        assertThat(closedFromListener.get()).isEqualTo(1);
        assertThat(peer.sent).extracting(TransferPlan::chunk).containsExactly(0);
        assertThat(peer.closedOn).isEqualTo("test-x");
    }

    @Test
    void anErrorInSendFailsItsPlanAndTheQueuedOnesAndClosesThePeer()
            throws Exception
    {
        ScriptedPeer peer = new ScriptedPeer(DRAIN_ACK);
        try (TransferLink link = start(peer)) {
            Gate gate = peer.gate(0, _ -> {
                throw new StackOverflowError("deep");
            });
            Heard failing = postHeard(link, plan(ROOM, 0, 0));
            Heard queued = postHeard(link, plan(OTHER_ROOM, 1, 1));
            gate.awaitEntered();
            gate.open();

            assertThat(failing.await()).isEqualTo("failed: test peer x stopped on room 7#1 chunk 0: java.lang.StackOverflowError: deep");
            assertThat(queued.await()).isEqualTo("failed: test peer x stopped on room 7#1 chunk 0: java.lang.StackOverflowError: deep; "
                    + "the plan was not sent");
            peer.awaitClosed();
            assertThat(peer.closedOn).isEqualTo("test-x");
            assertThat(postHeard(link, plan(ROOM, 2, 2)).await()).isEqualTo("failed: test peer x is closed; the plan was not sent");
            // The backend may have handed writes to its transport before the Error: nothing can be proved any more.
            assertThat(link.drain(ROOM)).isCompletedExceptionally();
            assertThat(peer.sent).extracting(TransferPlan::chunk).containsExactly(0);
        }
    }

    // --- The fence, for a connection without FORWARD_SYNC: the core waits ---

    @Test
    void withoutForwardSyncThePeerGetsThePlanOnlyOnceTheFenceIsDone()
            throws Exception
    {
        ScriptedPeer peer = new ScriptedPeer(DRAIN_ACK);
        try (TransferLink link = start(peer)) {
            ManualFence fence = new ManualFence();
            CompletableFuture<Boolean> fenceDoneAtSend = new CompletableFuture<>();
            peer.script(0, work -> {
                fenceDoneAtSend.complete(fence.isDone());
                ScriptedPeer.MOVES.send(work);
            });
            Heard outcome = postHeard(link, plan(ROOM, 0, 0, fence));
            fence.awaitWaiter();
            assertThat(peer.sent).isEmpty();
            assertThat(outcome.calls()).isZero();

            fence.forward.complete(null);
            assertThat(outcome.await()).isEqualTo("completed " + STRIDE);
            assertThat(fenceDoneAtSend.get(30, TimeUnit.SECONDS)).isTrue();
            assertThat(peer.sent).hasSize(1);
        }
    }

    @Test
    void withoutForwardSyncAFenceThatDoesNotFinishInTimeFailsThePlanSettledAndSendIsNeverCalled()
            throws Exception
    {
        ScriptedPeer peer = new ScriptedPeer(DRAIN_ACK);
        try (TransferLink link = start(peer, new TransferLink.Timeouts(Duration.ZERO, LONG, Duration.ofSeconds(10)))) {
            assertFailsSettledWithNothingSent(link, peer, plan(ROOM, 0, 0, new ManualFence()),
                    "the forward step 3 that wrote room 7#1 chunk 0 did not finish within fence-timeout PT0S; nothing was sent");
        }
    }

    @Test
    void withoutForwardSyncAFailedFenceFailsThePlanSettledAndSendIsNeverCalled()
            throws Exception
    {
        ScriptedPeer peer = new ScriptedPeer(DRAIN_ACK);
        try (TransferLink link = start(peer)) {
            ManualFence fence = new ManualFence();
            fence.forward.completeExceptionally(new IllegalStateException("the forward threw"));

            assertFailsSettledWithNothingSent(link, peer, plan(ROOM, 0, 0, fence),
                    "the forward step 3 that wrote room 7#1 chunk 0 failed; nothing was sent");
        }
    }

    @Test
    void withoutForwardSyncAFenceThatFailsWhileTheLinkWaitsFailsThePlanSettledAndSendIsNeverCalled()
            throws Exception
    {
        ScriptedPeer peer = new ScriptedPeer(DRAIN_ACK);
        try (TransferLink link = start(peer)) {
            ManualFence fence = new ManualFence();
            Heard outcome = postHeard(link, plan(ROOM, 0, 0, fence));
            fence.awaitWaiter();
            fence.forward.completeExceptionally(new IllegalStateException("the forward threw"));

            // Whether the link's wait saw the failure or its next look at the fence did, the plan fails with nothing sent.
            assertThat(outcome.await()).startsWith("failed: the forward step 3 that wrote room 7#1 chunk 0 failed")
                    .endsWith("; nothing was sent");
            assertThat(peer.sent).isEmpty();
            link.drain(ROOM).get(30, TimeUnit.SECONDS);
        }
    }

    @Test
    void withoutForwardSyncCloseWhileThePlanWaitsOnTheFenceFailsItWithNothingSent()
            throws Exception
    {
        ScriptedPeer peer = new ScriptedPeer(DRAIN_ACK);
        TransferLink link = start(peer);
        ManualFence fence = new ManualFence();
        Heard outcome = postHeard(link, plan(ROOM, 0, 0, fence));
        fence.awaitWaiter();

        link.close();

        assertThat(outcome.await())
                .isEqualTo("failed: test peer x was closed while room 7#1 chunk 0 waited on the fence of step 3; nothing was sent");
        assertThat(peer.sent).isEmpty();
        peer.awaitClosed();
        assertThat(link.drain(ROOM)).isCompleted();
    }

    // --- The fence, for a FORWARD_SYNC connection: the backend waits, the core checks ---

    @Test
    void withForwardSyncThePeerGetsThePlanBeforeTheFenceAndAwaitFenceWaitsForIt()
            throws Exception
    {
        ScriptedPeer peer = new ScriptedPeer(FORWARD_SYNC, DRAIN_ACK);
        try (TransferLink link = start(peer)) {
            ManualFence fence = new ManualFence();
            Heard outcome = postHeard(link, plan(ROOM, 0, 0, fence));
            // The backend's awaitFence() is what waits on the fence, inside send.
            fence.awaitWaiter();
            assertThat(peer.sent).hasSize(1);
            assertThat(outcome.calls()).isZero();

            fence.forward.complete(null);
            assertThat(outcome.await()).isEqualTo("completed " + STRIDE);
            link.drain(ROOM).get(30, TimeUnit.SECONDS);
            assertThat(link.violation()).isNull();
        }
    }

    @Test
    void withForwardSyncAwaitFenceOnAFailedFenceThrowsSettledAndTheLinkGoesOn()
            throws Exception
    {
        ScriptedPeer peer = new ScriptedPeer(FORWARD_SYNC);
        try (TransferLink link = start(peer)) {
            ManualFence fence = new ManualFence();
            fence.forward.completeExceptionally(new IllegalStateException("the forward threw"));

            assertThat(postHeard(link, plan(ROOM, 0, 0, fence)).await())
                    .isEqualTo("failed: the forward step 3 that wrote room 7#1 chunk 0 failed; nothing was sent");
            link.drain(ROOM).get(30, TimeUnit.SECONDS);
            assertThat(link.violation()).isNull();
            assertThat(postHeard(link, plan(ROOM, 1, 1)).await()).isEqualTo("completed " + STRIDE);
        }
    }

    @Test
    void withForwardSyncReadingBeforeTheFenceIsDoneThrowsFailsThePlanAndFencesTheLink()
            throws Exception
    {
        ScriptedPeer peer = new ScriptedPeer(FORWARD_SYNC, DRAIN_ACK);
        RecordingHooks hooks = new RecordingHooks();
        TransferLink link = TransferLink.start("test", "x", peer, POOL, POOL, TIMEOUTS, hooks);
        Fenced fenced = new Fenced(link);
        ManualFence fence = new ManualFence();
        CompletableFuture<TransferFailure> refused = new CompletableFuture<>();
        Gate gate = peer.gate(0, work -> {
            try {
                work.reading();
            }
            catch (TransferFailure failure) {
                refused.complete(failure);
                throw failure;
            }
            work.completed(STRIDE);
        });
        Heard early = postHeard(link, plan(ROOM, 0, 0, fence));
        Heard queued = postHeard(link, plan(OTHER_ROOM, 1, 1));
        gate.awaitEntered();
        CompletableFuture<Void> waiting = link.drain(OTHER_ROOM);
        gate.open();

        String violation = "test peer x began reading room 7#1 chunk 0 before the fence of forward step 3 was done, "
                + "though its connection declares FORWARD_SYNC (transfer protocol violation, I1)";
        TransferFailure thrown = refused.get(30, TimeUnit.SECONDS);
        assertThat(thrown.getMessage()).isEqualTo(violation + "; the backend must send nothing");
        assertThat(thrown.settled()).isTrue();
        assertThat(early.await()).isEqualTo("failed: " + violation + "; the connection is fenced");
        assertThat(early.calls()).isEqualTo(1);
        assertFenced(link, peer, fenced, violation, queued, waiting);
        // The chunk's fault point did not run: nothing may be read.
        assertThat(hooks.events).isEmpty();
        assertThat(fence.isDone()).isFalse();
    }

    @Test
    void withForwardSyncCompletingWithoutReadingFailsThePlanAndFencesTheLink()
            throws Exception
    {
        ScriptedPeer peer = new ScriptedPeer(FORWARD_SYNC, DRAIN_ACK);
        TransferLink link = start(peer);
        Fenced fenced = new Fenced(link);
        Gate gate = peer.gate(0, work -> work.completed(STRIDE));
        Heard careless = postHeard(link, plan(ROOM, 0, 0));
        Heard queued = postHeard(link, plan(OTHER_ROOM, 1, 1));
        gate.awaitEntered();
        CompletableFuture<Void> waiting = link.drain(OTHER_ROOM);
        gate.open();

        String violation = "test peer x completed room 7#1 chunk 0 without calling reading() or awaitFence() first, "
                + "though its connection declares FORWARD_SYNC (transfer protocol violation, I1)";
        assertThat(careless.await()).isEqualTo("failed: " + violation + "; the connection is fenced");
        assertThat(careless.calls()).isEqualTo(1);
        assertFenced(link, peer, fenced, violation, queued, waiting);
    }

    @Test
    void withoutForwardSyncCompletingWithoutCallingReadingIsNoViolation()
            throws Exception
    {
        ScriptedPeer peer = new ScriptedPeer(DRAIN_ACK);
        try (TransferLink link = start(peer)) {
            peer.script(0, work -> work.completed(STRIDE));

            assertThat(postHeard(link, plan(ROOM, 0, 0)).await()).isEqualTo("completed " + STRIDE);
            assertThat(link.violation()).isNull();
            link.drain(ROOM).get(30, TimeUnit.SECONDS);
        }
    }

    // --- Exactly one report per plan ---

    @Test
    void aSecondReportInsideSendCompletedThenFailedIsHeardOnceAsAFailureAndFencesTheLink()
            throws Exception
    {
        assertASecondReportInsideSendFencesTheLink(work -> {
            work.completed(STRIDE);
            work.failed(new TransferFailure("changed its mind", true));
        });
    }

    @Test
    void aSecondReportInsideSendFailedThenCompletedIsHeardOnceAsAFailureAndFencesTheLink()
            throws Exception
    {
        assertASecondReportInsideSendFencesTheLink(work -> {
            work.failed(new TransferFailure("the receiver refused the plan", true));
            work.completed(STRIDE);
        });
    }

    @Test
    void aSecondReportAfterTheOutcomeWasDeliveredFencesTheLink()
            throws Exception
    {
        ScriptedPeer peer = new ScriptedPeer(DRAIN_ACK);
        TransferLink link = start(peer);
        Fenced fenced = new Fenced(link);
        CompletableFuture<PlanWork> reported = new CompletableFuture<>();
        peer.script(0, work -> {
            work.completed(STRIDE);
            reported.complete(work);
        });
        Heard first = postHeard(link, plan(ROOM, 0, 0));
        assertThat(first.await()).isEqualTo("completed " + STRIDE);
        PlanWork work = reported.get(30, TimeUnit.SECONDS);
        Gate gate = peer.gate(1);
        Heard inFlight = postHeard(link, plan(OTHER_ROOM, 1, 1));
        gate.awaitEntered();
        Heard queued = postHeard(link, plan(ROOM, 2, 2));
        CompletableFuture<Void> waiting = link.drain(OTHER_ROOM);
        assertThat(link.violation()).isNull();

        // From another thread (this one), long after the link delivered the first outcome.
        work.failed(new TransferFailure("a stale callback", true));

        String violation = "test peer x reported a second outcome for room 7#1 chunk 0 (transfer protocol violation)";
        assertThat(fenced.reason()).isEqualTo(violation);
        assertThat(first.calls()).isEqualTo(1);
        assertThat(first.await()).isEqualTo("completed " + STRIDE);
        // The send in flight is woken, as close() would.
        peer.awaitUnblocked();
        gate.open();
        assertFenced(link, peer, fenced, violation, queued, waiting);
        // The plan in flight had not begun reading when the link was fenced: reading() refuses it, nothing is sent.
        assertThat(inFlight.await()).isEqualTo("failed: test peer x was fenced before room 8#0 chunk 1 was read (" + violation
                + "); nothing was sent");
        assertThat(peer.sent).extracting(TransferPlan::chunk).containsExactly(0, 1);
    }

    @Test
    void aPeerThatNeverReportsFailsThePlanUnsettledAfterTheReportTimeoutAndIsFenced()
            throws Exception
    {
        ScriptedPeer peer = new ScriptedPeer(DRAIN_ACK);
        TransferLink link = start(peer, new TransferLink.Timeouts(LONG, Duration.ofMillis(200), Duration.ofSeconds(10)));
        Fenced fenced = new Fenced(link);
        CompletableFuture<PlanWork> handedOver = new CompletableFuture<>();
        peer.script(0, handedOver::complete);
        Heard silent = postHeard(link, plan(ROOM, 0, 0));
        Heard queued = postHeard(link, plan(OTHER_ROOM, 1, 1));
        CompletableFuture<Void> waiting = link.drain(OTHER_ROOM);

        String violation = "test peer x reported no outcome for room 7#1 chunk 0 within PT0.2S (transfer protocol violation)";
        assertThat(silent.await()).isEqualTo("failed: " + violation + "; the connection is fenced");
        assertFenced(link, peer, fenced, violation, queued, waiting);
        assertThatThrownBy(() -> link.drain(ROOM).join()).hasMessageContaining("cannot prove that no write of room 7#1 is in flight");

        // The report that finally comes is logged and changes nothing.
        handedOver.get(30, TimeUnit.SECONDS).completed(STRIDE);
        assertThat(silent.calls()).isEqualTo(1);
        assertThat(silent.await()).isEqualTo("failed: " + violation + "; the connection is fenced");
        assertThat(link.violation()).isEqualTo(violation);
        assertThat(fenced.calls()).isEqualTo(1);
    }

    @Test
    void aSendThatNeverReturnsIsTimedFromTheHandOverFailsUnsettledAndIsFencedAndWoken()
            throws Exception
    {
        ScriptedPeer peer = new ScriptedPeer(DRAIN_ACK);
        TransferLink link = start(peer, new TransferLink.Timeouts(LONG, Duration.ofMillis(200), Duration.ofSeconds(10)));
        Fenced fenced = new Fenced(link);
        // The send blocks (a transport write to a stalled receiver) and reports nothing, even once woken.
        Gate gate = peer.gate(0, _ -> {});
        Heard stuck = postHeard(link, plan(ROOM, 0, 0));
        Heard queued = postHeard(link, plan(OTHER_ROOM, 1, 1));
        CompletableFuture<Void> waiting = link.drain(OTHER_ROOM);
        gate.awaitEntered();

        String violation = "test peer x reported no outcome for room 7#1 chunk 0 within PT0.2S (transfer protocol violation)";
        // Heard while the send is still blocked: the watchdog, not the transfer thread, failed it.
        assertThat(stuck.await()).isEqualTo("failed: " + violation + "; the connection is fenced");
        peer.awaitUnblocked();
        gate.open();
        assertFenced(link, peer, fenced, violation, queued, waiting);
        assertThat(stuck.calls()).isEqualTo(1);
    }

    @Test
    void completedWithANegativeByteCountIsAViolation()
            throws Exception
    {
        ScriptedPeer peer = new ScriptedPeer(DRAIN_ACK);
        TransferLink link = start(peer);
        Fenced fenced = new Fenced(link);
        Gate gate = peer.gate(0, work -> {
            work.awaitFence();
            work.completed(-5);
        });
        Heard negative = postHeard(link, plan(ROOM, 0, 0));
        Heard queued = postHeard(link, plan(OTHER_ROOM, 1, 1));
        gate.awaitEntered();
        CompletableFuture<Void> waiting = link.drain(OTHER_ROOM);
        gate.open();

        String violation = "test peer x reported -5 bytes moved for room 7#1 chunk 0 (transfer protocol violation)";
        assertThat(negative.await()).isEqualTo("failed: " + violation + "; the connection is fenced");
        assertThat(negative.calls()).isEqualTo(1);
        assertFenced(link, peer, fenced, violation, queued, waiting);
    }

    // --- A runtime exception from send: a bug in the backend ---

    @Test
    void aRuntimeExceptionFromSendEvenBeforeReadingFailsThePlanUnsettledAndTheThreadGoesOn()
            throws Exception
    {
        // A backend without FORWARD_SYNC need not call reading(), so the core cannot tell whether writes were handed
        // to a transport before the exception: it promises nothing.
        ScriptedPeer peer = new ScriptedPeer(DRAIN_ACK);
        try (TransferLink link = start(peer)) {
            peer.script(0, _ -> {
                throw new IllegalStateException("index bug");
            });

            String reason = "test peer x failed unexpectedly on room 7#1 chunk 0: java.lang.IllegalStateException: index bug";
            assertThat(postHeard(link, plan(ROOM, 0, 0)).await()).isEqualTo("failed: " + reason);
            assertThat(postHeard(link, plan(ROOM, 1, 1)).await()).isEqualTo("completed " + STRIDE);
            assertThatThrownBy(() -> link.drain(ROOM).join()).hasMessageContaining("cannot prove that no write of room 7#1 is in flight: " + reason);
            assertThat(link.violation()).isNull();
        }
    }

    @Test
    void aRuntimeExceptionFromSendAfterReadingFailsThePlanUnsettledAndEveryDrainFails()
            throws Exception
    {
        ScriptedPeer peer = new ScriptedPeer(FORWARD_SYNC, DRAIN_ACK);
        try (TransferLink link = start(peer)) {
            peer.script(0, work -> {
                work.awaitFence();
                throw new IllegalStateException("index bug");
            });

            String reason = "test peer x failed unexpectedly on room 7#1 chunk 0: java.lang.IllegalStateException: index bug";
            assertThat(postHeard(link, plan(ROOM, 0, 0)).await()).isEqualTo("failed: " + reason);
            assertThat(postHeard(link, plan(ROOM, 1, 1)).await()).isEqualTo("completed " + STRIDE);
            assertThatThrownBy(() -> link.drain(ROOM).join())
                    .hasMessageContaining("test peer x cannot prove that no write of room 7#1 is in flight: " + reason);
            assertThat(link.drain(OTHER_ROOM)).isCompletedExceptionally();
            // A bug, not a protocol violation: the link is not fenced.
            assertThat(link.violation()).isNull();
        }
    }

    // --- The data path's hooks ---

    @Test
    void readingRunsTheChunksFaultPointAndPageDoneThePageHook()
            throws Exception
    {
        ScriptedPeer peer = new ScriptedPeer(FORWARD_SYNC);
        RecordingHooks hooks = new RecordingHooks();
        try (TransferLink link = TransferLink.start("test", "x", peer, POOL, POOL, TIMEOUTS, hooks)) {
            TransferPlan plan = new TransferPlan(ROOM, 2, 5, new int[] {0, 4}, new int[] {1, 6}, new int[] {1, 2}, ProducerFence.DONE);

            assertThat(postHeard(link, plan).await()).isEqualTo("completed " + 3 * STRIDE);
            assertThat(hooks.events).containsExactly("reading 7#1 chunk 2 on test-x", "page 7#1 5", "page 7#1 6", "page 7#1 7");
        }
    }

    // --- Helpers ---

    private static void assertASecondReportInsideSendFencesTheLink(ScriptedPeer.Send twice)
            throws Exception
    {
        ScriptedPeer peer = new ScriptedPeer(DRAIN_ACK);
        TransferLink link = start(peer);
        Fenced fenced = new Fenced(link);
        Gate gate = peer.gate(0, twice);
        Heard reportedTwice = postHeard(link, plan(ROOM, 0, 0));
        Heard queued = postHeard(link, plan(OTHER_ROOM, 1, 1));
        gate.awaitEntered();
        CompletableFuture<Void> waiting = link.drain(OTHER_ROOM);
        gate.open();

        String violation = "test peer x reported a second outcome for room 7#1 chunk 0 (transfer protocol violation)";
        assertThat(reportedTwice.await()).isEqualTo("failed: " + violation + "; the connection is fenced");
        assertThat(reportedTwice.calls()).isEqualTo(1);
        assertFenced(link, peer, fenced, violation, queued, waiting);
    }

    /**
     * The link was fenced for {@code violation}: the fence listener heard it once, the plan that was queued failed and
     * was never sent, the drain that waited for it failed, later drains and posts fail, and the peer was closed once.
     */
    private static void assertFenced(TransferLink link, ScriptedPeer peer, Fenced fenced, String violation, Heard queued,
            CompletableFuture<Void> waiting)
            throws Exception
    {
        assertThat(fenced.reason()).isEqualTo(violation);
        assertThat(link.violation()).isEqualTo(violation);
        // The queue was failed as the link was fenced: the fenced peer was handed nothing more.
        assertThat(queued.await()).isEqualTo("failed: test peer x was fenced before the plan was sent: " + violation);
        assertThat(queued.calls()).isEqualTo(1);
        assertThat(peer.sent).noneMatch(queued.plan::equals);
        assertThatThrownBy(() -> waiting.get(30, TimeUnit.SECONDS)).hasCauseInstanceOf(IllegalStateException.class)
                .hasMessageContaining("test peer x cannot prove that no write of room 8#0 is in flight: " + violation);
        assertThatThrownBy(() -> link.drain(new RoomKey(99, 0)).join())
                .hasMessageContaining("cannot prove that no write of room 99#0 is in flight: " + violation);
        assertThat(postHeard(link, plan(ROOM, 5, 5)).await()).isEqualTo("failed: test peer x is closed; the plan was not sent");
        peer.awaitClosed();
        assertThat(peer.closes.get()).isEqualTo(1);
        assertThat(peer.closedOn).isEqualTo("test-x");
        assertThat(fenced.calls()).isEqualTo(1);
    }

    /** The plan fails with {@code reason} before send is called, and the failure keeps the drain promise. */
    private static void assertFailsSettledWithNothingSent(TransferLink link, ScriptedPeer peer, TransferPlan plan, String reason)
            throws Exception
    {
        Heard outcome = postHeard(link, plan);
        assertThat(outcome.await()).isEqualTo("failed: " + reason);
        assertThat(outcome.calls()).isEqualTo(1);
        assertThat(peer.sent).isEmpty();
        link.drain(plan.room()).get(30, TimeUnit.SECONDS);
        assertThat(link.violation()).isNull();
    }

    private static TransferLink start(ScriptedPeer peer)
    {
        return start(peer, TIMEOUTS);
    }

    private static TransferLink start(ScriptedPeer peer, TransferLink.Timeouts timeouts)
    {
        return TransferLink.start("test", "x", peer, POOL, POOL, timeouts, TransferHooks.NONE);
    }

    private static Heard postHeard(TransferLink link, TransferPlan plan)
    {
        Heard heard = new Heard();
        link.post(plan, heard);
        return heard;
    }

    private static TransferPlan plan(RoomKey room, int chunk, int page)
    {
        return plan(room, chunk, page, ProducerFence.DONE);
    }

    private static TransferPlan plan(RoomKey room, int chunk, int page, ProducerFence fence)
    {
        return new TransferPlan(room, chunk, chunk, new int[] {page}, new int[] {page}, new int[] {1}, fence);
    }

    /** A fence backed by a future the test completes; counts down {@code waitedOn} when someone waits on it. */
    private static final class ManualFence
            implements ProducerFence
    {
        final CompletableFuture<Void> forward = new CompletableFuture<>();
        final CountDownLatch waitedOn = new CountDownLatch(1);

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
                throws TimeoutException
        {
            waitedOn.countDown();
            try {
                forward.get(timeout.toNanos(), TimeUnit.NANOSECONDS);
            }
            catch (ExecutionException e) {
                throw new IllegalStateException("step 3 failed", e);
            }
            catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new IllegalStateException(e);
            }
        }

        void awaitWaiter()
                throws InterruptedException
        {
            assertThat(waitedOn.await(30, TimeUnit.SECONDS)).as("the transfer thread waited on the fence").isTrue();
        }
    }

    /** The link's fence listener: the reasons it heard. */
    private static final class Fenced
    {
        private final CompletableFuture<String> reason = new CompletableFuture<>();
        private final AtomicInteger calls = new AtomicInteger();

        Fenced(TransferLink link)
        {
            link.onFenced(heard -> {
                calls.incrementAndGet();
                reason.complete(heard);
            });
        }

        String reason()
                throws Exception
        {
            return reason.get(30, TimeUnit.SECONDS);
        }

        int calls()
        {
            return calls.get();
        }
    }

    /** Hooks that log each call, with the thread of the fault point. */
    private static final class RecordingHooks
            implements TransferHooks
    {
        final List<String> events = new CopyOnWriteArrayList<>();

        @Override
        public void beforeReadingChunk(RoomKey room, int chunk)
        {
            events.add("reading " + room + " chunk " + chunk + " on " + Thread.currentThread().getName());
        }

        @Override
        public void afterPage(RoomKey room, int pageIndex)
        {
            events.add("page " + room + " " + pageIndex);
        }
    }

    /** A listener that keeps its one outcome ("completed BYTES" or "failed: REASON") and logs it to an event list. */
    private static class Heard
            implements PlanListener
    {
        private final CompletableFuture<String> outcome = new CompletableFuture<>();
        private volatile TransferPlan plan;
        private final AtomicInteger calls = new AtomicInteger();
        private final List<String> events;

        Heard()
        {
            this(new CopyOnWriteArrayList<>());
        }

        Heard(List<String> events)
        {
            this.events = events;
        }

        @Override
        public void completed(TransferPlan plan, long bytes)
        {
            this.plan = plan;
            calls.incrementAndGet();
            events.add("completed " + plan.room() + " chunk " + plan.chunk());
            outcome.complete("completed " + bytes);
        }

        @Override
        public void failed(TransferPlan plan, String reason)
        {
            this.plan = plan;
            calls.incrementAndGet();
            events.add("failed " + plan.room() + " chunk " + plan.chunk());
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
