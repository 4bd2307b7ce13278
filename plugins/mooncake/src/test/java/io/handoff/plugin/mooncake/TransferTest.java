package io.handoff.plugin.mooncake;

import io.handoff.spi.transfer.ProducerFence;
import io.handoff.spi.transfer.RoomKey;
import io.handoff.spi.transfer.TransferPlan;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import static io.handoff.plugin.mooncake.Link.bytesOf;
import static io.handoff.plugin.mooncake.Link.pagesOf;
import static io.handoff.plugin.mooncake.Link.plan;
import static org.assertj.core.api.Assertions.assertThat;

/** The data path of both transports: what lands where, the producer fence (I1), the hooks, drain and close. */
class TransferTest
{
    private static final RoomKey ROOM = new RoomKey(7, 1);
    private static final RoomKey OTHER_ROOM = new RoomKey(8, 0);

    @TempDir
    Path folder;

    @ParameterizedTest
    @EnumSource(names = {"TCP", "SHM"})
    void copiesExactlyThePlannedPagesOfEveryRegionAndNothingElse(Transport transport)
            throws Exception
    {
        try (Link link = Link.open(transport, folder)) {
            // Runs longer than a frame (4 pages of 1KiB), over three regions of two page strides.
            TransferPlan first = plan(ROOM, 0, 0, ProducerFence.DONE, new int[] {3, 50, 2}, new int[] {20, 0, 10}, new int[] {40, 10, 1});
            TransferPlan second = plan(ROOM, 1, 13, ProducerFence.DONE, new int[] {60, 30, 4});
            Outcome firstOutcome = link.post(first);
            Outcome secondOutcome = link.post(second);

            assertThat(firstOutcome.await()).isEqualTo(new Outcome.Result(bytesOf(first), null));
            assertThat(secondOutcome.await()).isEqualTo(new Outcome.Result(bytesOf(second), null));
            assertThat(link.destination.mismatches(pagesOf(first, second))).isEmpty();
            assertThat(firstOutcome.calls()).isEqualTo(1);
            assertThat(secondOutcome.calls()).isEqualTo(1);
        }
    }

    @ParameterizedTest
    @EnumSource(names = {"TCP", "SHM"})
    void callsTheHooksInOrderOnlyAfterTheProducerFence(Transport transport)
            throws Exception
    {
        try (Link link = Link.open(transport, folder)) {
            ControlledFence fence = new ControlledFence(41);
            Outcome outcome = link.post(plan(ROOM, 2, 5, fence, new int[] {0, 8, 2}, new int[] {9, 20, 5}));
            fence.awaitWaiter();
            link.events.add("fence completed");
            fence.complete();
            outcome.await();

            List<String> expected = new ArrayList<>(List.of("fence completed", "before 7#1 chunk 2"));
            for (int page = 5; page < 12; page++) {
                expected.add("after 7#1 page " + page);
            }
            expected.add("completed 7#1 chunk 2");
            assertThat(link.events).containsExactlyElementsOf(expected);
        }
    }

    @ParameterizedTest
    @EnumSource(names = {"TCP", "SHM"})
    void anUnfinishedProducerFenceHoldsTheTransfer(Transport transport)
            throws Exception
    {
        try (Link link = Link.open(transport, folder)) {
            ControlledFence fence = new ControlledFence(3);
            TransferPlan plan = plan(ROOM, 0, 0, fence, new int[] {1, 2, 6});
            Outcome outcome = link.post(plan);

            fence.awaitWaiter();
            // The transfer thread is waiting on the fence: nothing was read, nothing landed, nothing reported.
            assertThat(link.destination.mismatches(Map.of())).isEmpty();
            assertThat(link.events).isEmpty();
            assertThat(outcome.isDone()).isFalse();

            fence.complete();
            assertThat(outcome.await().completed()).isTrue();
            assertThat(link.destination.mismatches(pagesOf(plan))).isEmpty();
        }
    }

    @ParameterizedTest
    @EnumSource(names = {"TCP", "SHM"})
    void aFailedProducerFenceFailsThePlanAndNothingIsSent(Transport transport)
            throws Exception
    {
        try (Link link = Link.open(transport, folder)) {
            ControlledFence fence = new ControlledFence(12);
            Outcome outcome = link.post(plan(ROOM, 0, 0, fence, new int[] {1, 2, 6}));
            fence.awaitWaiter();
            fence.fail();

            Outcome.Result result = outcome.await();
            assertThat(result.failure()).contains("forward step 12").contains("nothing was sent");
            assertThat(link.events).containsExactly("failed 7#1 chunk 0");
            assertThat(link.destination.mismatches(Map.of())).isEmpty();

            // The peer goes on with the next plan.
            TransferPlan next = plan(ROOM, 1, 6, ProducerFence.DONE, new int[] {7, 8, 1});
            assertThat(link.post(next).await().completed()).isTrue();
            assertThat(link.destination.mismatches(pagesOf(next))).isEmpty();
        }
    }

    @ParameterizedTest
    @EnumSource(names = {"TCP", "SHM"})
    void aProducerFenceThatNeverFinishesFailsThePlanAtTheFenceTimeout(Transport transport)
            throws Exception
    {
        try (Link link = Link.open(transport, folder, "fence-timeout", "200ms")) {
            Outcome outcome = link.post(plan(ROOM, 0, 0, new ControlledFence(5), new int[] {1, 2, 6}));

            assertThat(outcome.await().failure()).contains("did not finish within fence-timeout").contains("nothing was sent");
            assertThat(link.destination.mismatches(Map.of())).isEmpty();
        }
    }

    @ParameterizedTest
    @EnumSource(names = {"TCP", "SHM"})
    void drainCompletesOnlyAfterThePlanInFlightAndThoseQueuedBehindIt(Transport transport)
            throws Exception
    {
        try (Link link = Link.open(transport, folder)) {
            ControlledFence fence = new ControlledFence(1);
            Outcome held = link.post(plan(ROOM, 0, 0, fence, new int[] {0, 0, 4}));
            Outcome queued = link.post(plan(ROOM, 1, 4, ProducerFence.DONE, new int[] {4, 4, 4}));
            Outcome otherRoom = link.post(plan(OTHER_ROOM, 0, 0, ProducerFence.DONE, new int[] {8, 8, 4}));
            fence.awaitWaiter();

            CompletableFuture<Void> drain = link.peer.drain(ROOM);
            // What the listeners had heard at the moment the drain completed.
            CompletableFuture<List<Integer>> callsAtDrain = drain.thenApply(_ -> List.of(held.calls(), queued.calls()));
            assertThat(link.peer.drain(new RoomKey(99, 0))).isCompleted();
            assertThat(drain).isNotDone();

            fence.complete();
            assertThat(callsAtDrain.get(30, TimeUnit.SECONDS)).containsExactly(1, 1);
            assertThat(held.await().completed()).isTrue();
            assertThat(queued.await().completed()).isTrue();
            assertThat(link.peer.drain(OTHER_ROOM).get(30, TimeUnit.SECONDS)).isNull();
            assertThat(otherRoom.calls()).isEqualTo(1);
        }
    }

    @ParameterizedTest
    @EnumSource(names = {"TCP", "SHM"})
    void drainWaitsForAPlanStoppedPartWayThroughItsPages(Transport transport)
            throws Exception
    {
        try (Link link = Link.open(transport, folder)) {
            CountDownLatch parked = new CountDownLatch(1);
            CountDownLatch release = new CountDownLatch(1);
            // Park the transfer thread after page 5 of 12, as a fault plan's "park" would.
            link.senderContext.onAfterPage((room, page) -> {
                if (page == 5) {
                    parked.countDown();
                    await(release);
                }
            });
            TransferPlan plan = plan(ROOM, 0, 0, ProducerFence.DONE, new int[] {0, 20, 12});
            Outcome outcome = link.post(plan);
            await(parked);

            CompletableFuture<Void> drain = link.peer.drain(ROOM);
            assertThat(drain).isNotDone();
            assertThat(outcome.isDone()).isFalse();

            release.countDown();
            drain.get(30, TimeUnit.SECONDS);
            assertThat(outcome.calls()).isEqualTo(1);
            assertThat(outcome.await().completed()).isTrue();
            assertThat(link.destination.mismatches(pagesOf(plan))).isEmpty();
        }
    }

    @ParameterizedTest
    @EnumSource(names = {"TCP", "SHM"})
    void closingThePeerFailsQueuedPlansAndThePlanWaitingOnItsFence(Transport transport)
            throws Exception
    {
        try (Link link = Link.open(transport, folder)) {
            ControlledFence fence = new ControlledFence(9);
            Outcome waiting = link.post(plan(ROOM, 0, 0, fence, new int[] {0, 0, 4}));
            Outcome queued = link.post(plan(ROOM, 1, 4, ProducerFence.DONE, new int[] {4, 4, 4}));
            fence.awaitWaiter();

            link.peer.close();

            assertThat(queued.await().failure()).contains("closed before the plan was sent");
            assertThat(waiting.await().failure()).contains("closed").contains("nothing was sent");
            assertThat(link.peer.drain(ROOM)).succeedsWithin(java.time.Duration.ofSeconds(30));
            Outcome late = link.post(plan(ROOM, 2, 8, ProducerFence.DONE, new int[] {8, 8, 1}));
            assertThat(late.await().failure()).contains("is closed");
            fence.complete();
            assertThat(link.destination.mismatches(Map.of())).isEmpty();
            assertThat(List.of(waiting.calls(), queued.calls(), late.calls())).containsExactly(1, 1, 1);
        }
    }

    @ParameterizedTest
    @EnumSource(names = {"TCP", "SHM"})
    void aFaultInAHookFailsThePlanAndTheNextPlanStillLands(Transport transport)
            throws Exception
    {
        try (Link link = Link.open(transport, folder)) {
            link.senderContext.onAfterPage((room, page) -> {
                if (room.equals(ROOM) && page == 2) {
                    throw new IllegalStateException("injected fault after page 2");
                }
            });
            Outcome failed = link.post(plan(ROOM, 0, 0, ProducerFence.DONE, new int[] {0, 0, 8}));
            assertThat(failed.await().failure()).contains("injected fault after page 2");

            TransferPlan next = plan(OTHER_ROOM, 0, 0, ProducerFence.DONE, new int[] {30, 40, 6});
            assertThat(link.post(next).await().completed()).isTrue();
            assertThat(link.destination.holds(40, 30)).isTrue();
            assertThat(link.destination.holds(45, 35)).isTrue();
            assertThat(link.peer.drain(ROOM)).succeedsWithin(java.time.Duration.ofSeconds(30));
        }
    }

    @ParameterizedTest
    @EnumSource(names = {"TCP", "SHM"})
    void aPlanOutsideEitherPoolFailsWithoutSendingAnything(Transport transport)
            throws Exception
    {
        try (Link link = Link.open(transport, folder)) {
            Outcome tooFar = link.post(plan(ROOM, 0, 0, ProducerFence.DONE, new int[] {0, 0, 2}, new int[] {2, Pool.PAGES - 1, 2}));
            Outcome negative = link.post(plan(ROOM, 1, 0, ProducerFence.DONE, new int[] {-1, 0, 2}));

            assertThat(tooFar.await().failure()).contains("outside").contains("nothing was sent");
            assertThat(negative.await().failure()).contains("outside");
            assertThat(link.events).doesNotContain("before 7#1 chunk 0", "before 7#1 chunk 1");
            assertThat(link.destination.mismatches(Map.of())).isEmpty();
        }
    }

    private static void await(CountDownLatch latch)
    {
        try {
            if (!latch.await(30, TimeUnit.SECONDS)) {
                throw new AssertionError("latch not released");
            }
        }
        catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new AssertionError(e);
        }
    }
}
