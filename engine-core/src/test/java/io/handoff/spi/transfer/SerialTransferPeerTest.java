package io.handoff.spi.transfer;

import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicInteger;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * The promises {@link SerialTransferPeer} keeps for every backend, proven with a scripted subclass: the test
 * decides what each chunk's send does, holds the transfer thread on gates and fences it controls, and never
 * sleeps.
 */
class SerialTransferPeerTest
{
    private static final RoomKey ROOM = new RoomKey(7, 1);
    private static final RoomKey OTHER_ROOM = new RoomKey(8, 0);
    private static final long STRIDE = 64;
    // 8 pages on each side, one region.
    private static final PageGeometry POOL = new PageGeometry(List.of(STRIDE), 8);
    private static final Duration LONG = Duration.ofSeconds(30);

    @Test
    void runsPlansInPostOrderAndReportsEachExactlyOnce()
            throws Exception
    {
        try (ScriptedPeer peer = ScriptedPeer.open(LONG, true)) {
            Gate gate = peer.gateChunk(0);
            List<TransferPlan> plans = List.of(plan(ROOM, 0, 0), plan(OTHER_ROOM, 1, 1), plan(ROOM, 2, 2), plan(OTHER_ROOM, 3, 3));
            List<Heard> heard = plans.stream().map(plan -> peer.postHeard(plan)).toList();
            gate.awaitEntered();
            gate.open();

            for (Heard outcome : heard) {
                assertThat(outcome.await()).isEqualTo("completed " + STRIDE);
            }
            assertThat(peer.sent).containsExactlyElementsOf(plans);
            peer.close();
            assertThat(heard).allSatisfy(outcome -> assertThat(outcome.calls()).isEqualTo(1));
        }
    }

    @Test
    void drainCompletesOnlyAfterTheRoomsOutstandingPlansWereReported()
            throws Exception
    {
        try (ScriptedPeer peer = ScriptedPeer.open(LONG, true)) {
            Gate gate = peer.gateChunk(0);
            List<String> events = new CopyOnWriteArrayList<>();
            peer.post(plan(ROOM, 0, 0), new Heard(events));
            peer.post(plan(ROOM, 1, 1), new Heard(events));
            peer.post(plan(OTHER_ROOM, 0, 2), new Heard(events));
            gate.awaitEntered();

            CompletableFuture<Void> drained = peer.drain(ROOM);
            CompletableFuture<Void> drainHeard = drained.thenRun(() -> events.add("drained " + ROOM));
            assertThat(drained).isNotDone();
            assertThat(peer.drain(OTHER_ROOM)).isNotDone();
            gate.open();

            drainHeard.get(30, TimeUnit.SECONDS);
            // The drain completes on the transfer thread right after the room's last listener, before the next plan runs.
            assertThat(List.copyOf(events).subList(0, 3)).containsExactly("completed 7#1 chunk 0", "completed 7#1 chunk 1", "drained 7#1");
        }
    }

    @Test
    void drainOfARoomWithNothingOutstandingCompletesAtOnce()
    {
        try (ScriptedPeer peer = ScriptedPeer.open(LONG, true)) {
            assertThat(peer.drain(new RoomKey(99, 0))).isCompleted();
        }
    }

    @Test
    void anUnsettledFailureMakesEveryLaterDrainFailNamingItsReason()
            throws Exception
    {
        try (ScriptedPeer peer = ScriptedPeer.open(LONG, true)) {
            Gate gate = peer.gateChunk(0, plan -> {
                throw new TransferFailure("the flush did not complete; the puts may still land", false);
            });
            Heard failing = peer.postHeard(plan(ROOM, 0, 0));
            gate.awaitEntered();
            CompletableFuture<Void> waiting = peer.drain(ROOM);
            gate.open();

            assertThat(failing.await()).isEqualTo("failed: the flush did not complete; the puts may still land");
            assertThatThrownBy(() -> waiting.get(30, TimeUnit.SECONDS)).hasCauseInstanceOf(IllegalStateException.class)
                    .hasMessageContaining("test peer x cannot prove that no write of room 7#1 is in flight: the flush did not complete");
            // A later plan that completes does not bring the promise back, for any room.
            assertThat(peer.postHeard(plan(OTHER_ROOM, 1, 1)).await()).startsWith("completed");
            assertThat(peer.drain(OTHER_ROOM)).isCompletedExceptionally();
            assertThatThrownBy(() -> peer.drain(new RoomKey(99, 0)).join())
                    .hasMessageContaining("cannot prove that no write of room 99#0 is in flight: the flush did not complete");
        }
    }

    @Test
    void aSettledFailureKeepsTheDrainPromise()
            throws Exception
    {
        try (ScriptedPeer peer = ScriptedPeer.open(LONG, true)) {
            peer.script(0, plan -> {
                throw new TransferFailure("the receiver refused the plan", true);
            });
            assertThat(peer.postHeard(plan(ROOM, 0, 0)).await()).isEqualTo("failed: the receiver refused the plan");
            peer.drain(ROOM).get(30, TimeUnit.SECONDS);
            assertThat(peer.drain(OTHER_ROOM)).isCompleted();
        }
    }

    @Test
    void closeFailsTheQueuedPlansAndLetsThePlanInFlightEnd()
            throws Exception
    {
        try (ScriptedPeer peer = ScriptedPeer.open(LONG, true)) {
            Gate gate = peer.gateChunk(0);
            Heard inFlight = peer.postHeard(plan(ROOM, 0, 0));
            Heard queued = peer.postHeard(plan(ROOM, 1, 1));
            gate.awaitEntered();

            // close() waits for the plan in flight, so it runs on another thread while the gate holds that plan.
            CompletableFuture<Void> closing = CompletableFuture.runAsync(peer::close);
            assertThat(queued.await()).isEqualTo("failed: test peer x was closed before the plan was sent");
            assertThat(closing).isNotDone();
            gate.open();
            closing.get(30, TimeUnit.SECONDS);

            assertThat(inFlight.await()).startsWith("completed");
            assertThat(peer.sent).extracting(TransferPlan::chunk).containsExactly(0);
            assertThat(peer.releasedOn).isEqualTo("test-x");
            peer.close();
            assertThat(peer.unblocked.get()).isEqualTo(1);
            assertThat(peer.releases.get()).isEqualTo(1);
        }
    }

    @Test
    void aPlanPostedAfterCloseFailsAtOnce()
            throws Exception
    {
        ScriptedPeer peer = ScriptedPeer.open(LONG, true);
        peer.close();

        Heard late = peer.postHeard(plan(ROOM, 0, 0));
        assertThat(late.await()).isEqualTo("failed: test peer x is closed; the plan was not sent");
        assertThat(late.calls()).isEqualTo(1);
        assertThat(peer.sent).isEmpty();
        assertThat(peer.drain(ROOM)).isCompleted();
    }

    @Test
    void closeFromTheTransferThreadItselfReturnsAndTheThreadStillReleases()
            throws Exception
    {
        ScriptedPeer peer = ScriptedPeer.open(LONG, true);
        Gate gate = peer.gateChunk(0);
        AtomicInteger closedFromListener = new AtomicInteger();
        peer.post(plan(ROOM, 0, 0), new Heard(new CopyOnWriteArrayList<>())
        {
            @Override
            public void completed(TransferPlan plan, long bytes)
            {
                peer.close();
                closedFromListener.incrementAndGet();
                super.completed(plan, bytes);
            }
        });
        Heard queued = peer.postHeard(plan(ROOM, 1, 1));
        gate.awaitEntered();
        gate.open();

        assertThat(queued.await()).isEqualTo("failed: test peer x was closed before the plan was sent");
        assertThat(peer.released.await(30, TimeUnit.SECONDS)).isTrue();
        assertThat(closedFromListener.get()).isEqualTo(1);
        assertThat(peer.sent).extracting(TransferPlan::chunk).containsExactly(0);
    }

    @Test
    void aPlanOutsideThePagesFailsWithNothingSent()
            throws Exception
    {
        try (ScriptedPeer peer = ScriptedPeer.open(LONG, true)) {
            TransferPlan outside = new TransferPlan(ROOM, 0, 0, new int[] {1, 6}, new int[] {1, 6}, new int[] {1, 3}, ProducerFence.DONE);

            assertFailsSettledWithNothingSent(peer, outside, "plan for room 7#1 chunk 0: run 1 copies pages 6+3 to 6+3, "
                    + "outside the 8 source or 8 destination pages; nothing was sent");
        }
    }

    @Test
    void aPendingFenceHoldsThePlanUntilTheForwardFinished()
            throws Exception
    {
        try (ScriptedPeer peer = ScriptedPeer.open(LONG, true)) {
            ManualFence fence = new ManualFence();
            Heard outcome = peer.postHeard(plan(ROOM, 0, 0, fence));
            fence.awaitWaiter();
            assertThat(peer.sent).isEmpty();
            assertThat(outcome.calls()).isZero();

            fence.forward.complete(null);
            assertThat(outcome.await()).startsWith("completed");
            assertThat(peer.sent).hasSize(1);
        }
    }

    @Test
    void aFenceThatDoesNotFinishInTimeFailsThePlanSettled()
            throws Exception
    {
        try (ScriptedPeer peer = ScriptedPeer.open(Duration.ZERO, true)) {
            assertFailsSettledWithNothingSent(peer, plan(ROOM, 0, 0, new ManualFence()),
                    "the forward step 3 that wrote room 7#1 chunk 0 did not finish within fence-timeout PT0S; nothing was sent");
        }
    }

    @Test
    void aFailedFenceFailsThePlanWithNothingSent()
            throws Exception
    {
        try (ScriptedPeer peer = ScriptedPeer.open(LONG, true)) {
            ManualFence fence = new ManualFence();
            fence.forward.completeExceptionally(new IllegalStateException("the forward threw"));

            assertFailsSettledWithNothingSent(peer, plan(ROOM, 0, 0, fence),
                    "the forward step 3 that wrote room 7#1 chunk 0 failed; nothing was sent");
        }
    }

    /** A backend that reads without the fence (mori without forward-sync, seed 000) sends while the forward may still run. */
    @Test
    void aPeerThatDoesNotAwaitTheFenceSendsWhileItIsPending()
            throws Exception
    {
        try (ScriptedPeer peer = ScriptedPeer.open(LONG, false)) {
            ManualFence fence = new ManualFence();

            assertThat(peer.postHeard(plan(ROOM, 0, 0, fence)).await()).startsWith("completed");
            assertThat(fence.isDone()).isFalse();
            assertThat(fence.waitedOn.getCount()).isEqualTo(1);
        }
    }

    @Test
    void aListenerThatThrowsDoesNotStopTheTransferThread()
            throws Exception
    {
        try (ScriptedPeer peer = ScriptedPeer.open(LONG, true)) {
            AtomicInteger calls = new AtomicInteger();
            peer.post(plan(ROOM, 0, 0), new TransferListener()
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

            assertThat(peer.postHeard(plan(ROOM, 1, 1)).await()).startsWith("completed");
            assertThat(calls.get()).isEqualTo(1);
            peer.drain(ROOM).get(30, TimeUnit.SECONDS);
        }
    }

    @Test
    void aBugInSendIsReportedUnsettledAndTheThreadGoesOn()
            throws Exception
    {
        try (ScriptedPeer peer = ScriptedPeer.open(LONG, true)) {
            peer.script(0, plan -> {
                throw new IllegalStateException("index bug");
            });

            assertThat(peer.postHeard(plan(ROOM, 0, 0)).await())
                    .isEqualTo("failed: test peer x failed unexpectedly on room 7#1 chunk 0: java.lang.IllegalStateException: index bug");
            assertThat(peer.postHeard(plan(ROOM, 1, 1)).await()).startsWith("completed");
            assertThat(peer.drain(ROOM)).isCompletedExceptionally();
        }
    }

    @Test
    void anErrorInSendFailsItsPlanAndTheQueuedOnesAndClosesThePeer()
            throws Exception
    {
        try (ScriptedPeer peer = ScriptedPeer.open(LONG, true)) {
            Gate gate = peer.gateChunk(0, plan -> {
                throw new StackOverflowError("deep");
            });
            Heard failing = peer.postHeard(plan(ROOM, 0, 0));
            Heard queued = peer.postHeard(plan(OTHER_ROOM, 1, 1));
            gate.awaitEntered();
            gate.open();

            assertThat(failing.await()).isEqualTo("failed: test peer x stopped on room 7#1 chunk 0: java.lang.StackOverflowError: deep");
            assertThat(queued.await()).isEqualTo("failed: test peer x stopped on room 7#1 chunk 0: java.lang.StackOverflowError: deep; "
                    + "the plan was not sent");
            assertThat(peer.released.await(30, TimeUnit.SECONDS)).isTrue();
            assertThat(peer.postHeard(plan(ROOM, 2, 2)).await()).isEqualTo("failed: test peer x is closed; the plan was not sent");
            assertThat(peer.drain(ROOM)).isCompletedExceptionally();
            assertThat(peer.sent).extracting(TransferPlan::chunk).containsExactly(0);
        }
    }

    @Test
    void aListenerThatThrowsAnErrorStopsTheThreadButLeavesNoPlanOrDrainWaiting()
            throws Exception
    {
        try (ScriptedPeer peer = ScriptedPeer.open(LONG, true)) {
            Gate gate = peer.gateChunk(0);
            peer.post(plan(ROOM, 0, 0), new Heard(new CopyOnWriteArrayList<>())
            {
                @Override
                public void completed(TransferPlan plan, long bytes)
                {
                    throw new AssertionError("a listener's own bug");
                }
            });
            Heard queued = peer.postHeard(plan(OTHER_ROOM, 1, 1));
            gate.awaitEntered();
            CompletableFuture<Void> drained = peer.drain(ROOM);
            gate.open();

            drained.get(30, TimeUnit.SECONDS);
            assertThat(queued.await()).isEqualTo("failed: test peer x: its transfer thread stopped on java.lang.AssertionError: "
                    + "a listener's own bug; the plan was not sent");
            assertThat(peer.released.await(30, TimeUnit.SECONDS)).isTrue();
            assertThat(peer.drain(OTHER_ROOM)).isCompleted();
            assertThat(peer.postHeard(plan(ROOM, 2, 2)).await()).isEqualTo("failed: test peer x is closed; the plan was not sent");
        }
    }

    /** The plan fails with {@code reason} before send is called, and the failure keeps the drain promise. */
    private static void assertFailsSettledWithNothingSent(ScriptedPeer peer, TransferPlan plan, String reason)
            throws Exception
    {
        assertThat(peer.postHeard(plan).await()).isEqualTo("failed: " + reason);
        assertThat(peer.sent).isEmpty();
        peer.drain(plan.room()).get(30, TimeUnit.SECONDS);
    }

    private static TransferPlan plan(RoomKey room, int chunk, int page)
    {
        return plan(room, chunk, page, ProducerFence.DONE);
    }

    private static TransferPlan plan(RoomKey room, int chunk, int page, ProducerFence fence)
    {
        return new TransferPlan(room, chunk, chunk, new int[] {page}, new int[] {page}, new int[] {1}, fence);
    }

    /** What a scripted send does for one chunk. */
    @FunctionalInterface
    private interface Send
    {
        long send(TransferPlan plan)
                throws TransferFailure;
    }

    /** A backend whose data movement the test scripts per chunk; by default a plan "moves" one stride per page. */
    private static final class ScriptedPeer
            extends SerialTransferPeer
    {
        final List<TransferPlan> sent = new CopyOnWriteArrayList<>();
        final AtomicInteger unblocked = new AtomicInteger();
        final AtomicInteger releases = new AtomicInteger();
        final CountDownLatch released = new CountDownLatch(1);
        volatile String releasedOn;
        private final Map<Integer, Send> scripts = new ConcurrentHashMap<>();
        private final boolean awaitsFence;

        private ScriptedPeer(Duration fenceTimeout, boolean awaitsFence)
        {
            super("test", "x", POOL, POOL, fenceTimeout, LONG);
            this.awaitsFence = awaitsFence;
        }

        static ScriptedPeer open(Duration fenceTimeout, boolean awaitsFence)
        {
            ScriptedPeer peer = new ScriptedPeer(fenceTimeout, awaitsFence);
            peer.start();
            return peer;
        }

        void script(int chunk, Send send)
        {
            scripts.put(chunk, send);
        }

        /** Holds the send of {@code chunk} until the gate opens; it then moves one stride per page. */
        Gate gateChunk(int chunk)
        {
            return gateChunk(chunk, plan -> plan.pages() * STRIDE);
        }

        /** Holds the send of {@code chunk} until the gate opens, then does {@code then}. */
        Gate gateChunk(int chunk, Send then)
        {
            Gate gate = new Gate();
            script(chunk, plan -> {
                gate.pass();
                return then.send(plan);
            });
            return gate;
        }

        Heard postHeard(TransferPlan plan)
        {
            Heard heard = new Heard(new CopyOnWriteArrayList<>());
            post(plan, heard);
            return heard;
        }

        @Override
        protected long send(TransferPlan plan)
                throws TransferFailure
        {
            sent.add(plan);
            return scripts.getOrDefault(plan.chunk(), p -> p.pages() * STRIDE).send(plan);
        }

        @Override
        protected boolean awaitsFence()
        {
            return awaitsFence;
        }

        @Override
        protected void unblock()
        {
            unblocked.incrementAndGet();
        }

        @Override
        protected void release()
        {
            releasedOn = Thread.currentThread().getName();
            releases.incrementAndGet();
            released.countDown();
        }

        @Override
        public String transport()
        {
            return "scripted";
        }

        @Override
        public Set<TransferCapability> capabilities()
        {
            return Set.of(TransferCapability.DRAIN_ACK, TransferCapability.FORWARD_SYNC);
        }
    }

    /** Holds the transfer thread inside a send until the test opens it. */
    private static final class Gate
    {
        private final CountDownLatch entered = new CountDownLatch(1);
        private final CountDownLatch opened = new CountDownLatch(1);

        void pass()
        {
            entered.countDown();
            try {
                if (!opened.await(30, TimeUnit.SECONDS)) {
                    throw new IllegalStateException("the test never opened the gate");
                }
            }
            catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new IllegalStateException(e);
            }
        }

        void awaitEntered()
                throws InterruptedException
        {
            assertThat(entered.await(30, TimeUnit.SECONDS)).as("the transfer thread reached the gate").isTrue();
        }

        void open()
        {
            opened.countDown();
        }
    }

    /** A fence backed by a future the test completes; counts down {@code waitedOn} when the transfer thread waits on it. */
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

    /** A listener that keeps its one outcome ("completed BYTES" or "failed: REASON") and logs it to an event list. */
    private static class Heard
            implements TransferListener
    {
        private final CompletableFuture<String> outcome = new CompletableFuture<>();
        private final AtomicInteger calls = new AtomicInteger();
        private final List<String> events;

        Heard(List<String> events)
        {
            this.events = events;
        }

        @Override
        public void completed(TransferPlan plan, long bytes)
        {
            calls.incrementAndGet();
            events.add("completed " + plan.room() + " chunk " + plan.chunk());
            outcome.complete("completed " + bytes);
        }

        @Override
        public void failed(TransferPlan plan, String reason)
        {
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
