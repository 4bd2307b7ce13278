package io.handoff.plugin.mori;

import io.handoff.spi.transfer.ProducerFence;
import io.handoff.spi.transfer.RoomKey;
import io.handoff.spi.transfer.TransferPlan;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import static io.handoff.plugin.mori.Link.FIRST_FORWARD;
import static io.handoff.plugin.mori.Link.bytesOf;
import static io.handoff.plugin.mori.Link.pagesOf;
import static io.handoff.plugin.mori.Link.plan;
import static org.assertj.core.api.Assertions.assertThat;

/** The same-host data path: what lands where, the hooks, drain, close and faults, with forward-sync on and off. */
class SharedMemoryTransferTest
{
    private static final RoomKey ROOM = new RoomKey(7, 1);
    private static final RoomKey OTHER_ROOM = new RoomKey(8, 0);

    @TempDir
    Path folder;

    @ParameterizedTest
    @ValueSource(booleans = {true, false})
    void copiesExactlyThePlannedPagesOfEveryRegionAndNothingElse(boolean forwardSync)
            throws Exception
    {
        try (Link link = Link.open(folder, "forward-sync", String.valueOf(forwardSync))) {
            // Three regions of two page strides; runs of different lengths, out of order on both sides.
            TransferPlan first = plan(ROOM, 0, 0, ProducerFence.DONE, new int[] {3, 50, 2}, new int[] {20, 0, 10}, new int[] {40, 10, 1});
            TransferPlan second = plan(ROOM, 1, 13, ProducerFence.DONE, new int[] {60, 30, 4});
            Outcome firstOutcome = link.post(first);
            Outcome secondOutcome = link.post(second);

            assertThat(firstOutcome.await()).isEqualTo(new Outcome.Result(bytesOf(first), null));
            assertThat(secondOutcome.await()).isEqualTo(new Outcome.Result(bytesOf(second), null));
            assertThat(link.destination.mismatches(pagesOf(first, second), FIRST_FORWARD)).isEmpty();
            assertThat(List.of(firstOutcome.calls(), secondOutcome.calls())).containsExactly(1, 1);
            assertThat(link.peer.transport()).isEqualTo("shm");
        }
    }

    @ParameterizedTest
    @ValueSource(booleans = {true, false})
    void callsBeforeReadingChunkThenAfterPageOncePerPageEachAfterThatPageLanded(boolean forwardSync)
            throws Exception
    {
        try (Link link = Link.open(folder, "forward-sync", String.valueOf(forwardSync))) {
            // Room-relative pages 5, 6 are destination 8, 9 (source 0, 1); pages 7..11 are destination 20..24 (source 9..13).
            TransferPlan plan = plan(ROOM, 2, 5, ProducerFence.DONE, new int[] {0, 8, 2}, new int[] {9, 20, 5});
            List<Boolean> landed = new CopyOnWriteArrayList<>();
            link.senderContext.onAfterPage((room, page) -> landed.add(page < 7
                    ? link.destination.holds(8 + page - 5, page - 5, FIRST_FORWARD)
                    : link.destination.holds(20 + page - 7, 9 + page - 7, FIRST_FORWARD)));

            assertThat(link.post(plan).await().completed()).isTrue();

            List<String> expected = new ArrayList<>(List.of("before 7#1 chunk 2"));
            for (int page = 5; page < 12; page++) {
                expected.add("after 7#1 page " + page);
            }
            expected.add("completed 7#1 chunk 2");
            assertThat(link.events).containsExactlyElementsOf(expected);
            assertThat(landed).hasSize(7).containsOnly(true);
        }
    }

    @Test
    void withForwardSyncAPendingFenceHoldsTheCopyAndThePagesLandAsTheForwardLeftThem()
            throws Exception
    {
        try (Link link = Link.open(folder, "forward-sync", "true")) {
            ControlledFence fence = new ControlledFence(41);
            TransferPlan plan = plan(ROOM, 0, 0, fence, new int[] {1, 2, 6});
            Outcome outcome = link.post(plan);
            fence.awaitWaiter();

            // The transfer thread waits on the fence: nothing was read, nothing landed, nothing was reported.
            assertThat(link.destination.mismatches(Map.of(), FIRST_FORWARD)).isEmpty();
            assertThat(link.events).isEmpty();
            assertThat(outcome.isDone()).isFalse();

            // The forward finishes writing its pages, then completes its fence.
            for (int page = 1; page < 7; page++) {
                link.source.writePage(page, FIRST_FORWARD + 1);
            }
            link.events.add("fence completed");
            fence.complete();

            assertThat(outcome.await().completed()).isTrue();
            assertThat(link.destination.mismatches(pagesOf(plan), FIRST_FORWARD + 1)).isEmpty();
            assertThat(link.events.subList(0, 2)).containsExactly("fence completed", "before 7#1 chunk 0");
        }
    }

    /** The field bug of seed 000: the copy does not wait for the forward, which is why the core must not early-send here. */
    @Test
    void withoutForwardSyncThePagesAreCopiedWhileTheFenceIsStillPending()
            throws Exception
    {
        try (Link link = Link.open(folder, "forward-sync", "false")) {
            ControlledFence fence = new ControlledFence(41);
            TransferPlan plan = plan(ROOM, 0, 0, fence, new int[] {1, 2, 6});

            assertThat(link.post(plan).await().completed()).isTrue();
            assertThat(fence.isDone()).isFalse();
            assertThat(fence.wasAwaited()).isFalse();

            // The forward then writes the pages and completes: the decode keeps what was there before it.
            for (int page = 1; page < 7; page++) {
                link.source.writePage(page, FIRST_FORWARD + 1);
            }
            fence.complete();
            assertThat(link.destination.mismatches(pagesOf(plan), FIRST_FORWARD)).isEmpty();
            assertThat(link.destination.mismatches(pagesOf(plan), FIRST_FORWARD + 1)).hasSize(6 * Pool.STRIDES.length);
        }
    }

    @Test
    void withoutForwardSyncAForwardStillWritingTearsTheCopy()
            throws Exception
    {
        try (Link link = Link.open(folder, "forward-sync", "false")) {
            ControlledFence fence = new ControlledFence(42);
            // The forward writes every page of the plan while the copy is between its first and second page.
            link.senderContext.onAfterPage((room, page) -> {
                if (page == 0) {
                    for (int source = 10; source < 14; source++) {
                        link.source.writePage(source, FIRST_FORWARD + 1);
                    }
                }
            });
            TransferPlan plan = plan(ROOM, 0, 0, fence, new int[] {10, 30, 4});

            assertThat(link.post(plan).await().completed()).isTrue();
            fence.complete();

            // A torn chunk: its first page from before the forward, the rest from after it.
            assertThat(link.destination.holds(30, 10, FIRST_FORWARD)).isTrue();
            for (int page = 1; page < 4; page++) {
                assertThat(link.destination.holds(30 + page, 10 + page, FIRST_FORWARD + 1)).isTrue();
            }
        }
    }

    @Test
    void withForwardSyncAFailedFenceFailsThePlanWithoutWritingAndTheNextPlanLands()
            throws Exception
    {
        try (Link link = Link.open(folder)) {
            ControlledFence fence = new ControlledFence(12);
            Outcome outcome = link.post(plan(ROOM, 0, 0, fence, new int[] {1, 2, 6}));
            fence.awaitWaiter();
            fence.fail();

            assertThat(outcome.await().failure()).contains("forward step 12").contains("nothing was sent");
            assertThat(link.events).containsExactly("failed 7#1 chunk 0");
            assertThat(link.destination.mismatches(Map.of(), FIRST_FORWARD)).isEmpty();

            TransferPlan next = plan(ROOM, 1, 6, ProducerFence.DONE, new int[] {7, 8, 1});
            assertThat(link.post(next).await().completed()).isTrue();
            assertThat(link.destination.mismatches(pagesOf(next), FIRST_FORWARD)).isEmpty();
        }
    }

    @Test
    void withForwardSyncAFenceThatNeverFinishesFailsThePlanAtTheFenceTimeout()
            throws Exception
    {
        try (Link link = Link.open(folder, "fence-timeout", "200ms")) {
            Outcome outcome = link.post(plan(ROOM, 0, 0, new ControlledFence(5), new int[] {1, 2, 6}));

            assertThat(outcome.await().failure()).contains("did not finish within fence-timeout PT0.2S").contains("nothing was sent");
            assertThat(link.destination.mismatches(Map.of(), FIRST_FORWARD)).isEmpty();
        }
    }

    @Test
    void drainCompletesOnlyAfterThePlanHeldOnItsFenceAndThoseQueuedBehindIt()
            throws Exception
    {
        try (Link link = Link.open(folder)) {
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
    @ValueSource(booleans = {true, false})
    void drainWaitsForAPlanParkedPartWayThroughItsPages(boolean forwardSync)
            throws Exception
    {
        try (Link link = Link.open(folder, "forward-sync", String.valueOf(forwardSync))) {
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
            assertThat(link.destination.mismatches(pagesOf(plan), FIRST_FORWARD)).isEmpty();
        }
    }

    @Test
    void closingThePeerFailsQueuedPlansAndThePlanWaitingOnItsFence()
            throws Exception
    {
        try (Link link = Link.open(folder)) {
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
            assertThat(link.destination.mismatches(Map.of(), FIRST_FORWARD)).isEmpty();
            assertThat(List.of(waiting.calls(), queued.calls(), late.calls())).containsExactly(1, 1, 1);
        }
    }

    @Test
    void closingWhileAPlanIsParkedFailsTheQueueAtOnceAndStopsThePlanAtTheNextPage()
            throws Exception
    {
        try (Link link = Link.open(folder, "forward-sync", "false")) {
            CountDownLatch parked = new CountDownLatch(1);
            CountDownLatch release = new CountDownLatch(1);
            link.senderContext.onAfterPage((room, page) -> {
                if (page == 2) {
                    parked.countDown();
                    await(release);
                }
            });
            Outcome inFlight = link.post(plan(ROOM, 0, 0, ProducerFence.DONE, new int[] {0, 10, 8}));
            Outcome queued = link.post(plan(OTHER_ROOM, 0, 0, ProducerFence.DONE, new int[] {20, 30, 2}));
            await(parked);

            CompletableFuture<Void> closing = CompletableFuture.runAsync(link.peer::close);
            assertThat(queued.await().failure()).contains("closed before the plan was sent");
            CompletableFuture<Void> drain = link.peer.drain(ROOM);
            assertThat(drain).isNotDone();

            release.countDown();
            closing.get(30, TimeUnit.SECONDS);
            assertThat(inFlight.await().failure()).contains("closed while sending room 7#1 chunk 0").contains("3 of 8 pages were written");
            assertThat(drain).succeedsWithin(java.time.Duration.ofSeconds(30));
            // Pages 0..2 landed before the close was seen; nothing after them did.
            assertThat(link.destination.mismatches(Map.of(10, 0, 11, 1, 12, 2), FIRST_FORWARD)).isEmpty();
        }
    }

    @ParameterizedTest
    @ValueSource(booleans = {true, false})
    void aFaultInAHookFailsThePlanAndTheNextPlanStillLands(boolean forwardSync)
            throws Exception
    {
        try (Link link = Link.open(folder, "forward-sync", String.valueOf(forwardSync))) {
            link.senderContext.onAfterPage((room, page) -> {
                if (room.equals(ROOM) && page == 2) {
                    throw new IllegalStateException("injected fault after page 2");
                }
            });
            Outcome failed = link.post(plan(ROOM, 0, 0, ProducerFence.DONE, new int[] {0, 0, 8}));
            assertThat(failed.await().failure()).contains("stopped after 3 of 8 pages").contains("injected fault after page 2");

            TransferPlan next = plan(OTHER_ROOM, 0, 0, ProducerFence.DONE, new int[] {30, 40, 6});
            assertThat(link.post(next).await().completed()).isTrue();
            assertThat(link.destination.mismatches(Map.of(0, 0, 1, 1, 2, 2, 40, 30, 41, 31, 42, 32, 43, 33, 44, 34, 45, 35), FIRST_FORWARD))
                    .isEmpty();
            assertThat(link.peer.drain(ROOM)).succeedsWithin(java.time.Duration.ofSeconds(30));
        }
    }

    @Test
    void aFaultBeforeReadingAChunkFailsThePlanWithoutWriting()
            throws Exception
    {
        try (Link link = Link.open(folder)) {
            link.senderContext.onBeforeChunk((room, chunk) -> {
                throw new IllegalStateException("injected fault before chunk " + chunk);
            });
            Outcome failed = link.post(plan(ROOM, 3, 0, ProducerFence.DONE, new int[] {0, 0, 8}));

            assertThat(failed.await().failure()).contains("stopped after 0 of 8 pages").contains("injected fault before chunk 3");
            assertThat(link.destination.mismatches(Map.of(), FIRST_FORWARD)).isEmpty();
        }
    }

    @Test
    void aPlanOutsideEitherPoolFailsWithoutWritingAnything()
            throws Exception
    {
        try (Link link = Link.open(folder)) {
            Outcome tooFar = link.post(plan(ROOM, 0, 0, ProducerFence.DONE, new int[] {0, 0, 2}, new int[] {2, Pool.PAGES - 1, 2}));
            Outcome negative = link.post(plan(ROOM, 1, 0, ProducerFence.DONE, new int[] {-1, 0, 2}));

            assertThat(tooFar.await().failure()).contains("outside").contains("nothing was sent");
            assertThat(negative.await().failure()).contains("outside");
            assertThat(link.events).doesNotContain("before 7#1 chunk 0", "before 7#1 chunk 1");
            assertThat(link.destination.mismatches(Map.of(), FIRST_FORWARD)).isEmpty();
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
