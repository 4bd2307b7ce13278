package io.handoff.plugin.nixl;

import io.handoff.spi.transfer.ProducerFence;
import io.handoff.spi.transfer.RoomKey;
import io.handoff.spi.transfer.TransferPlan;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import static io.handoff.plugin.nixl.Link.bytesOf;
import static io.handoff.plugin.nixl.Link.pagesOf;
import static io.handoff.plugin.nixl.Link.plan;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * The data path over UCX's tcp transport and over its shared-memory transports, two backends in one JVM: what lands
 * where, the producer fence (I1), the hooks, drain and close.
 */
class TransferTest
{
    private static final RoomKey ROOM = new RoomKey(7, 1);
    private static final RoomKey OTHER_ROOM = new RoomKey(8, 0);

    @BeforeAll
    static void ucx()
    {
        Ucx.assumeAvailable();
    }

    @ParameterizedTest
    @ValueSource(strings = {"tcp", "posix,self", "sysv,self"})
    void putsExactlyThePlannedPagesOfEveryRegionAndNothingElse(String tls)
            throws Exception
    {
        try (Link link = Link.open(tls)) {
            // Coalesced runs over three regions of two page strides.
            TransferPlan first = plan(ROOM, 0, 0, ProducerFence.DONE, new int[] {3, 50, 2}, new int[] {20, 0, 10}, new int[] {40, 10, 1});
            TransferPlan second = plan(ROOM, 1, 13, ProducerFence.DONE, new int[] {60, 30, 4});
            Outcome firstOutcome = link.post(first);
            Outcome secondOutcome = link.post(second);

            assertThat(firstOutcome.await()).isEqualTo(new Outcome.Result(bytesOf(first), null));
            assertThat(secondOutcome.await()).isEqualTo(new Outcome.Result(bytesOf(second), null));
            assertThat(link.destination.mismatches(0, pagesOf(first, second))).isEmpty();
            assertThat(firstOutcome.calls()).isEqualTo(1);
            assertThat(secondOutcome.calls()).isEqualTo(1);
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"tcp", "posix,self"})
    void callsTheHooksInOrderOnlyAfterTheProducerFence(String tls)
            throws Exception
    {
        try (Link link = Link.open(tls)) {
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

    /**
     * STAGING: the copy is taken when the fence completes, and the puts read the copy. The source holds pattern 0
     * when the plan is posted and pattern 1 when the fence completes; the afterPage hook (after the gather, before
     * any put) overwrites it with pattern 2. Only pattern 1 may land: 0 would mean a snapshot before the fence,
     * 2 a put from the live pool.
     */
    @ParameterizedTest
    @ValueSource(strings = {"tcp", "posix,self"})
    void sendsTheSnapshotTakenWhenTheFenceCompletedNotTheSourceBeforeOrAfter(String tls)
            throws Exception
    {
        try (Link link = Link.open(tls)) {
            ControlledFence fence = new ControlledFence(9);
            TransferPlan plan = plan(ROOM, 0, 0, fence, new int[] {1, 2, 6}, new int[] {30, 40, 3});
            Outcome outcome = link.post(plan);
            fence.awaitWaiter();
            link.source.fill(1);
            link.senderContext.onAfterPage((room, page) -> {
                if (page == 0) {
                    link.source.fill(2);
                }
            });
            fence.complete();

            assertThat(outcome.await().completed()).isTrue();
            assertThat(link.destination.mismatches(1, pagesOf(plan))).isEmpty();
            assertThat(link.source.mismatches(2, Pool.everyPage())).as("the hook changed the source before the puts").isEmpty();
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"tcp", "posix,self"})
    void anUnfinishedProducerFenceHoldsTheTransfer(String tls)
            throws Exception
    {
        try (Link link = Link.open(tls)) {
            ControlledFence fence = new ControlledFence(3);
            TransferPlan plan = plan(ROOM, 0, 0, fence, new int[] {1, 2, 6});
            Outcome outcome = link.post(plan);

            fence.awaitWaiter();
            // The transfer thread waits on the fence: nothing was read, nothing landed, nothing reported.
            assertThat(link.destination.mismatches(0, Map.of())).isEmpty();
            assertThat(link.events).isEmpty();
            assertThat(outcome.isDone()).isFalse();

            fence.complete();
            assertThat(outcome.await().completed()).isTrue();
            assertThat(link.destination.mismatches(0, pagesOf(plan))).isEmpty();
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"tcp", "posix,self"})
    void aFailedProducerFenceFailsThePlanAndNothingIsSent(String tls)
            throws Exception
    {
        try (Link link = Link.open(tls)) {
            ControlledFence fence = new ControlledFence(12);
            Outcome outcome = link.post(plan(ROOM, 0, 0, fence, new int[] {1, 2, 6}));
            fence.awaitWaiter();
            fence.fail();

            Outcome.Result result = outcome.await();
            assertThat(result.failure()).contains("forward step 12").contains("nothing was sent");
            assertThat(link.events).containsExactly("failed 7#1 chunk 0");
            assertThat(link.destination.mismatches(0, Map.of())).isEmpty();

            // The peer goes on with the next plan.
            TransferPlan next = plan(ROOM, 1, 6, ProducerFence.DONE, new int[] {7, 8, 1});
            assertThat(link.post(next).await().completed()).isTrue();
            assertThat(link.destination.mismatches(0, pagesOf(next))).isEmpty();
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"tcp", "posix,self"})
    void aProducerFenceThatNeverFinishesFailsThePlanAtTheFenceTimeout(String tls)
            throws Exception
    {
        try (Link link = Link.open(tls, "fence-timeout", "200ms")) {
            Outcome outcome = link.post(plan(ROOM, 0, 0, new ControlledFence(5), new int[] {1, 2, 6}));

            assertThat(outcome.await().failure()).contains("did not finish within fence-timeout").contains("nothing was sent");
            assertThat(link.destination.mismatches(0, Map.of())).isEmpty();
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"tcp", "posix,self"})
    void drainCompletesOnlyAfterThePlanInFlightAndThoseQueuedBehindIt(String tls)
            throws Exception
    {
        try (Link link = Link.open(tls)) {
            ControlledFence fence = new ControlledFence(1);
            TransferPlan held = plan(ROOM, 0, 0, fence, new int[] {0, 0, 4});
            TransferPlan queued = plan(ROOM, 1, 4, ProducerFence.DONE, new int[] {4, 4, 4});
            Outcome heldOutcome = link.post(held);
            Outcome queuedOutcome = link.post(queued);
            fence.awaitWaiter();

            CompletableFuture<Void> drain = link.peer.drain(ROOM);
            assertThat(link.peer.drain(OTHER_ROOM)).succeedsWithin(java.time.Duration.ofSeconds(30));
            assertThat(drain).isNotDone();

            fence.complete();
            drain.get(30, TimeUnit.SECONDS);
            // Drained means reported and landed: both outcomes are in, and so are their pages.
            assertThat(heldOutcome.isDone()).isTrue();
            assertThat(queuedOutcome.isDone()).isTrue();
            assertThat(link.destination.mismatches(0, pagesOf(held, queued))).isEmpty();
            assertThat(link.peer.drain(ROOM)).succeedsWithin(java.time.Duration.ofSeconds(30));
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"tcp", "posix,self"})
    void closeFailsTheQueuedPlansAndSendsNothingMore(String tls)
            throws Exception
    {
        try (Link link = Link.open(tls)) {
            ControlledFence fence = new ControlledFence(2);
            Outcome held = link.post(plan(ROOM, 0, 0, fence, new int[] {0, 0, 4}));
            Outcome queued = link.post(plan(ROOM, 1, 4, ProducerFence.DONE, new int[] {4, 4, 4}));
            fence.awaitWaiter();
            CompletableFuture<Void> drain = link.peer.drain(ROOM);

            link.peer.close();

            assertThat(queued.await().failure()).contains("closed before the plan was sent");
            assertThat(held.await().failure()).contains("closed").contains("nothing was sent");
            assertThat(queued.calls()).isEqualTo(1);
            assertThat(held.calls()).isEqualTo(1);
            // Nothing was sent, so the room is provably drained.
            drain.get(30, TimeUnit.SECONDS);
            assertThat(link.destination.mismatches(0, Map.of())).isEmpty();
            Outcome late = link.post(plan(ROOM, 2, 8, ProducerFence.DONE, new int[] {8, 8, 1}));
            assertThat(late.await().failure()).contains("is closed");
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"tcp", "posix,self"})
    void aPlanLargerThanTheStagingBufferIsSentInParts(String tls)
            throws Exception
    {
        // A page of all three regions is 2.5KiB, so a 6KiB buffer holds two pages: five parts for this plan.
        try (Link link = Link.open(tls, "staging-buffer", "6KiB")) {
            TransferPlan plan = plan(ROOM, 3, 20, ProducerFence.DONE, new int[] {5, 9, 3}, new int[] {30, 50, 6});
            Outcome outcome = link.post(plan);

            assertThat(outcome.await()).isEqualTo(new Outcome.Result(bytesOf(plan), null));
            assertThat(link.destination.mismatches(0, pagesOf(plan))).isEmpty();
            List<String> expected = new ArrayList<>(List.of("before 7#1 chunk 3"));
            for (int page = 20; page < 29; page++) {
                expected.add("after 7#1 page " + page);
            }
            expected.add("completed 7#1 chunk 3");
            assertThat(link.events).containsExactlyElementsOf(expected);
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"tcp", "posix,self"})
    void aHookThatThrowsFailsThePlanBeforeItsPartIsPutAndThePeerGoesOn(String tls)
            throws Exception
    {
        try (Link link = Link.open(tls)) {
            link.senderContext.onAfterPage((room, page) -> {
                if (page == 1) {
                    throw new IllegalStateException("injected fault");
                }
            });
            Outcome outcome = link.post(plan(ROOM, 0, 0, ProducerFence.DONE, new int[] {0, 10, 3}));

            assertThat(outcome.await().failure()).contains("stopped at page 1").contains("injected fault").contains("pages before 0 landed, nothing after");
            assertThat(link.destination.mismatches(0, Map.of())).isEmpty();
            assertThat(link.peer.drain(ROOM).get(30, TimeUnit.SECONDS)).isNull();

            link.senderContext.onAfterPage((room, page) -> {});
            TransferPlan next = plan(ROOM, 1, 3, ProducerFence.DONE, new int[] {3, 13, 2});
            assertThat(link.post(next).await().completed()).isTrue();
            assertThat(link.destination.mismatches(0, pagesOf(next))).isEmpty();
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"tcp"})
    void aPlanOutsideThePoolFailsWithoutSending(String tls)
            throws Exception
    {
        try (Link link = Link.open(tls)) {
            Outcome outcome = link.post(plan(ROOM, 0, 0, ProducerFence.DONE, new int[] {0, 62, 3}));

            assertThat(outcome.await().failure()).contains("outside the 64 source or 64 destination pages").contains("nothing was sent");
            assertThat(link.events).containsExactly("failed 7#1 chunk 0");
            assertThat(link.destination.mismatches(0, Map.of())).isEmpty();
        }
    }
}
