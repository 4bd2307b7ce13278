package io.handoff.testkit.transfer;

import io.handoff.core.transfer.TransferLink;
import io.handoff.spi.Availability;
import io.handoff.spi.PluginSettings;
import io.handoff.spi.transfer.PageGeometry;
import io.handoff.spi.transfer.ProducerFence;
import io.handoff.spi.transfer.RegionSlice;
import io.handoff.spi.transfer.RoomKey;
import io.handoff.spi.transfer.SliceMap;
import io.handoff.spi.transfer.TransferBackendProvider;
import io.handoff.spi.transfer.TransferCapability;
import io.handoff.spi.transfer.TransferPlan;
import io.handoff.spi.transfer.WriteGuard;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;

import static io.handoff.spi.transfer.TransferCapability.ONE_SIDED;
import static io.handoff.spi.transfer.TransferCapability.RECEIVER_VALIDATED_WRITES;
import static io.handoff.spi.transfer.TransferCapability.REMOTE;
import static io.handoff.spi.transfer.TransferCapability.STAGING;
import static io.handoff.testkit.transfer.Plans.bytesOf;
import static io.handoff.testkit.transfer.Plans.pagesOf;
import static io.handoff.testkit.transfer.Plans.plan;
import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/**
 * The transfer SPI's contract as tests: what the core relies on from every backend, proved over a real
 * {@link Link} (two instances of the backend in this JVM, the sender's peer driven by the core's
 * {@link TransferLink} exactly as the engine drives it). Subclass it once per transport or setting that changes
 * the data path, say what the backend promises there, and add the tests only that backend needs next to them.
 *
 * <p>Proved here, for the backend and the core together: pages land bit-exact where the plan says and nowhere
 * else; each listener hears exactly once, and the backend breaks no rule of {@link io.handoff.spi.transfer.PlanWork}
 * (the link is never fenced); the hooks run in order (the core's fault points); no page is read before the producer
 * fence (I1): a FORWARD_SYNC connection waits on it itself, for any other the core waits before it hands the plan
 * over; a plan whose fence failed or timed out fails and nothing of it is sent; drain completes only when no write
 * of the room can still land (I2); closing the link fails what is queued and the plan waiting on its fence; a fault
 * in a hook fails only its plan; a plan outside either pool is refused before anything is sent; a receiver's write
 * guard is never asked by one-sided writes and always obeyed by receiver-validated ones. Failure reasons must carry
 * the phrases operators read in the core's logs ("nothing was sent", "closed before the plan was sent", "is closed",
 * "outside the N source or N destination pages"); the core writes most of them, the backend those of its own
 * fence waits and stops.
 *
 * <p>A backend that reports itself unavailable on this machine (a missing library) has its tests skipped, with
 * the reason. Waits are bounded (30 seconds) and only for what must eventually happen; the races are driven
 * by {@link ControlledFence}s and by parking the transfer thread in a hook ({@link RecordingHooks}).
 */
public abstract class TransferBackendContract
{
    /**
     * System property: a comma-separated list of backend ids whose contract must not be skipped for unavailability.
     * Outside {@code handoff.*}, where the engine would read it as configuration.
     */
    public static final String REQUIRE_BACKENDS = "io.handoff.testkit.require-backends";

    protected static final RoomKey ROOM = new RoomKey(7, 1);
    protected static final RoomKey OTHER_ROOM = new RoomKey(8, 0);
    private static final Duration WAIT = Duration.ofSeconds(30);

    /** Where links put their shared files; a fresh folder for every test. */
    @TempDir
    protected Path folder;

    /** The backend under test, as the engine finds it. */
    protected abstract TransferBackendProvider provider();

    /** What this transport promises, exactly: the provider must declare it and the peer must report it. */
    protected abstract Set<TransferCapability> expectedCapabilities();

    /** What the peer reports as its {@link io.handoff.spi.transfer.TransferPeer#transport() transport}. */
    protected abstract String expectedTransport();

    /** The overrides of the plugin's reference.conf that choose this transport or setting; none by default. */
    protected Map<String, String> settings()
    {
        return Map.of();
    }

    /**
     * Whether a page is in the receiver's pool when afterPage reports it ("for direct writes, written"): by
     * default for a one-sided backend that writes from the source pool itself rather than from a staging copy.
     */
    protected boolean writesPagesDirectly()
    {
        return expectedCapabilities().contains(ONE_SIDED) && !expectedCapabilities().contains(STAGING);
    }

    /**
     * Whether both sides hold a cluster secret ({@link Link.Wiring#AUTHENTICATED}): the backend's own connections then
     * authenticate and may tag their frames, and the whole contract must hold all the same. No by default.
     */
    protected boolean withClusterSecret()
    {
        return false;
    }

    /** Whether the sender is on the receiver's host; by default only for backends that cannot reach another. */
    protected boolean senderOnReceiversHost()
    {
        return !expectedCapabilities().contains(REMOTE);
    }

    /**
     * The core's timeouts with the fence wait bounded by {@code fence}: the engine's
     * {@code handoff.disaggregation.fence-timeout}, which bounds a FORWARD_SYNC connection's wait as much as the
     * core's own.
     */
    protected static TransferLink.Timeouts fenceTimeout(Duration fence)
    {
        return new TransferLink.Timeouts(fence, Link.TIMEOUTS.report(), Link.TIMEOUTS.closeWait());
    }

    /**
     * Holds a plan stopped part way by a fault to what this backend says and leaves beyond the contract: how far
     * it got, which pages landed. Called as soon as the failure is heard, before anything else is posted.
     *
     * @param pagesRead how many of the plan's pages were read when it stopped (afterPage ran for each)
     */
    protected void assertStoppedPartWay(Link link, TransferPlan plan, int pagesRead, String reason)
    {
    }

    /** This transport's {@link #settings()} with {@code key, value, ...} on top, read as the engine reads them. */
    protected final PluginSettings settingsWith(String... overrides)
    {
        if (overrides.length % 2 != 0) {
            throw new IllegalArgumentException("overrides come in key, value pairs; got " + overrides.length + " strings");
        }
        Map<String, String> values = new LinkedHashMap<>(settings());
        for (int i = 0; i < overrides.length; i += 2) {
            values.put(overrides[i], overrides[i + 1]);
        }
        return ReferenceSettings.of(provider()).with(values);
    }

    /** A link of this transport with {@code key, value, ...} on top of its settings. */
    protected final Link open(String... overrides)
    {
        return open(WriteGuard.ALLOW_ALL, overrides);
    }

    /** A link of this transport whose receiver admits writes as {@code guard} says. */
    protected final Link open(WriteGuard guard, String... overrides)
    {
        return open(Link.TIMEOUTS, guard, overrides);
    }

    /** A link of this transport whose receiver admits writes as {@code guard} says, the core waiting as {@code timeouts} say. */
    protected final Link open(TransferLink.Timeouts timeouts, WriteGuard guard, String... overrides)
    {
        return Link.open(provider(), settingsWith(overrides), folder, guard, senderOnReceiversHost(), timeouts,
                withClusterSecret() ? Link.Wiring.AUTHENTICATED : Link.Wiring.PLAIN);
    }

    /**
     * Skips the contract where the backend is unavailable (a native library missing), unless the system property
     * {@value #REQUIRE_BACKENDS} names it: CI names every backend it installs for, so a backend that stops
     * being available there fails loudly instead of skipping every test of its contract.
     */
    @BeforeEach
    public final void assumeAvailableHere()
    {
        Availability availability = provider().availability(settingsWith());
        String id = provider().id();
        if (!availability.available() && Arrays.asList(System.getProperty(REQUIRE_BACKENDS, "").split(",")).contains(id)) {
            throw new AssertionError("transfer backend '" + id + "' must be available here (" + REQUIRE_BACKENDS + ") but is not: "
                    + availability.reason());
        }
        assumeTrue(availability.available(), () -> "transfer backend '" + id + "' is unavailable here: " + availability.reason());
    }

    @Test
    public final void thePeerPromisesWhatTheProviderDeclaresAndNamesItsTransport()
    {
        try (Link link = open()) {
            assertThat(provider().capabilities(settingsWith())).isEqualTo(expectedCapabilities());
            assertThat(link.peer().capabilities()).isEqualTo(expectedCapabilities());
            assertThat(link.transferLink().capabilities()).isEqualTo(expectedCapabilities());
            assertThat(link.peer().transport()).isEqualTo(expectedTransport());
            assertThat(link.peer().receiverGeometry()).isEqualTo(PageGeometry.of(link.destination().regions()));
        }
    }

    @Test
    public final void copiesExactlyThePlannedPagesOfEveryRegionAndNothingElse()
            throws Exception
    {
        try (Link link = open()) {
            // Three regions of two page strides; runs of different lengths, out of order on both sides.
            TransferPlan first = plan(ROOM, 0, 0, ProducerFence.DONE, new int[] {3, 50, 2}, new int[] {20, 0, 10}, new int[] {40, 10, 1});
            TransferPlan second = plan(ROOM, 1, 13, ProducerFence.DONE, new int[] {60, 30, 4});
            Outcome firstOutcome = link.post(first);
            Outcome secondOutcome = link.post(second);

            assertThat(firstOutcome.await()).isEqualTo(new Outcome.Result(bytesOf(first), null));
            assertThat(secondOutcome.await()).isEqualTo(new Outcome.Result(bytesOf(second), null));
            assertThat(link.destination().mismatches(pagesOf(first, second))).isEmpty();
            link.closeLink(); // joins the transfer thread: a second report would have come by now
            assertThat(List.of(firstOutcome.calls(), secondOutcome.calls())).containsExactly(1, 1);
            assertThat(link.transferLink().violation()).isNull();
        }
    }

    /**
     * A backend declaring HEAD_SLICES moves what a slice map says and nothing else: here two source regions of rows of
     * three 16-byte heads give one destination region of rows of two heads, the second head of the first and the third of
     * the second (a gather between tensor-parallel layouts, offsets on both sides); every row of the planned pages lands,
     * every other byte of the receiver keeps its canary.
     */
    @Test
    public final void movesEachPagesHeadSlicesWhereTheSliceMapSays()
            throws Exception
    {
        assumeTrue(expectedCapabilities().contains(io.handoff.spi.transfer.TransferCapability.HEAD_SLICES),
                provider().id() + " does not declare HEAD_SLICES");
        int rows = 4;
        long[] sourceStrides = {rows * 48L, rows * 48L};
        long[] destinationStrides = {rows * 32L};
        SliceMap slices = new SliceMap(rows, List.of(new RegionSlice(0, 0, 48, 32, 16, 0, 16), new RegionSlice(1, 0, 48, 32, 32, 16, 16)));
        try (Link link = Link.sliced(provider(), settingsWith(), folder, WriteGuard.ALLOW_ALL, senderOnReceiversHost(),
                withClusterSecret() ? Link.Wiring.AUTHENTICATED : Link.Wiring.PLAIN, sourceStrides, destinationStrides, slices)) {
            TransferPlan plan = plan(ROOM, 0, 0, ProducerFence.DONE, new int[] {3, 20, 2}, new int[] {9, 1, 1});

            assertThat(link.post(plan).await()).isEqualTo(new Outcome.Result(3L * slices.bytesPerPage(), null));
            MemorySegment destination = link.destination().regions().getFirst().segment();
            Map<Integer, Integer> planned = Map.of(20, 3, 21, 4, 1, 9);
            for (int page = 0; page < Pool.PAGES; page++) {
                for (int row = 0; row < rows; row++) {
                    for (int offset = 0; offset < 32; offset++) {
                        byte landed = destination.get(ValueLayout.JAVA_BYTE, (page * rows + row) * 32L + offset);
                        Integer src = planned.get(page);
                        byte expected = src == null ? Pool.CANARY
                                : link.source().regions().get(offset < 16 ? 0 : 1).segment().get(ValueLayout.JAVA_BYTE,
                                        (src * rows + row) * 48L + (offset < 16 ? 16 + offset : 32 + offset - 16));
                        assertThat(landed).as("destination page %d row %d byte %d", page, row, offset).isEqualTo(expected);
                    }
                }
            }
            assertThat(link.transferLink().violation()).isNull();
        }
    }

    @Test
    public final void callsBeforeReadingChunkThenAfterPageForEachPageInOrderThenTheListener()
            throws Exception
    {
        try (Link link = open()) {
            TransferPlan plan = plan(ROOM, 2, 5, ProducerFence.DONE, new int[] {0, 8, 2}, new int[] {9, 20, 5});

            assertThat(link.post(plan).await().completed()).isTrue();
            assertThat(link.events()).containsExactlyElementsOf(hooksThenCompletion(plan));
            assertThat(link.transferLink().violation()).isNull();
        }
    }

    @Test
    public final void eachPageHasLandedWhenAfterPageIsCalled()
            throws Exception
    {
        assumeTrue(writesPagesDirectly(), "this backend does not write pages directly: afterPage says read, not landed");
        try (Link link = open()) {
            TransferPlan plan = plan(ROOM, 2, 5, ProducerFence.DONE, new int[] {0, 8, 2}, new int[] {9, 20, 5});
            List<Map.Entry<Integer, Integer>> pages = List.copyOf(pagesOf(plan).entrySet());
            List<Boolean> landed = new CopyOnWriteArrayList<>();
            link.hooks().onAfterPage((room, page) -> {
                Map.Entry<Integer, Integer> dstToSrc = pages.get(page - plan.firstPageIndex());
                landed.add(link.destination().holds(dstToSrc.getKey(), dstToSrc.getValue()));
            });

            assertThat(link.post(plan).await().completed()).isTrue();
            assertThat(landed).hasSize(plan.pages()).containsOnly(true);
        }
    }

    @Test
    public final void aPendingProducerFenceHoldsTheTransferAndThePagesLandAsTheForwardLeftThem()
            throws Exception
    {
        try (Link link = open()) {
            ControlledFence fence = new ControlledFence(41);
            TransferPlan plan = plan(ROOM, 2, 5, fence, new int[] {0, 8, 2}, new int[] {9, 20, 5});
            Outcome outcome = link.post(plan);
            fence.awaitWaiter();

            // The transfer thread waits on the fence: nothing was read, nothing landed, nothing was reported.
            assertThat(link.destination().mismatches(Map.of())).isEmpty();
            assertThat(link.events()).isEmpty();
            assertThat(outcome.isDone()).isFalse();

            // The forward finishes writing its pages, then completes its fence: only what it left may land.
            for (int source : pagesOf(plan).values()) {
                link.source().writePage(source, 1);
            }
            link.events().add("fence completed");
            fence.complete();

            assertThat(outcome.await().completed()).isTrue();
            assertThat(link.destination().mismatches(1, pagesOf(plan))).isEmpty();
            List<String> expected = new ArrayList<>(List.of("fence completed"));
            expected.addAll(hooksThenCompletion(plan));
            assertThat(link.events()).containsExactlyElementsOf(expected);
        }
    }

    @Test
    public final void aFailedProducerFenceFailsThePlanAndNothingIsSent()
            throws Exception
    {
        try (Link link = open()) {
            ControlledFence fence = new ControlledFence(12);
            Outcome outcome = link.post(plan(ROOM, 0, 0, fence, new int[] {1, 2, 6}));
            fence.awaitWaiter();
            fence.fail();

            assertThat(outcome.await().failure()).contains("forward step 12").contains("nothing was sent");
            assertThat(link.events()).containsExactly("failed 7#1 chunk 0");
            assertThat(link.destination().mismatches(Map.of())).isEmpty();

            // The peer goes on with the next plan.
            TransferPlan next = plan(ROOM, 1, 6, ProducerFence.DONE, new int[] {7, 8, 1});
            assertThat(link.post(next).await().completed()).isTrue();
            assertThat(link.destination().mismatches(pagesOf(next))).isEmpty();
        }
    }

    @Test
    public final void aProducerFenceThatNeverFinishesFailsThePlanAtTheFenceTimeout()
            throws Exception
    {
        try (Link link = open(fenceTimeout(Duration.ofMillis(200)), WriteGuard.ALLOW_ALL)) {
            Outcome outcome = link.post(plan(ROOM, 0, 0, new ControlledFence(5), new int[] {1, 2, 6}));

            assertThat(outcome.await().failure())
                    .contains("did not finish within fence-timeout " + Duration.ofMillis(200))
                    .contains("nothing was sent");
            assertThat(link.destination().mismatches(Map.of())).isEmpty();
        }
    }

    @Test
    public final void drainCompletesOnlyAfterThePlanHeldOnItsFenceAndThoseQueuedBehindIt()
            throws Exception
    {
        try (Link link = open()) {
            ControlledFence fence = new ControlledFence(1);
            TransferPlan held = plan(ROOM, 0, 0, fence, new int[] {0, 0, 4});
            TransferPlan queued = plan(ROOM, 1, 4, ProducerFence.DONE, new int[] {4, 4, 4});
            Outcome heldOutcome = link.post(held);
            Outcome queuedOutcome = link.post(queued);
            Outcome otherRoom = link.post(plan(OTHER_ROOM, 0, 0, ProducerFence.DONE, new int[] {8, 8, 4}));
            fence.awaitWaiter();

            CompletableFuture<Void> drain = link.drain(ROOM);
            // What the listeners had heard, and what had landed, at the moment the drain completed.
            // (only the room's own pages: with plans in flight, the other room's plan may have landed too)
            CompletableFuture<List<Object>> atDrain = drain.thenApply(_ -> List.of(heldOutcome.calls(), queuedOutcome.calls(),
                    pagesOf(held, queued).entrySet().stream().allMatch(page -> link.destination().holds(page.getKey(), page.getValue()))));
            assertThat(link.drain(new RoomKey(99, 0))).isCompleted();
            assertThat(drain).isNotDone();

            fence.complete();
            assertThat(atDrain.get(30, TimeUnit.SECONDS)).containsExactly(1, 1, true);
            assertThat(heldOutcome.await().completed()).isTrue();
            assertThat(queuedOutcome.await().completed()).isTrue();
            assertThat(link.drain(ROOM)).succeedsWithin(WAIT);
            assertThat(link.drain(OTHER_ROOM).get(30, TimeUnit.SECONDS)).isNull();
            link.closeLink();
            assertThat(List.of(heldOutcome.calls(), queuedOutcome.calls(), otherRoom.calls())).containsExactly(1, 1, 1);
        }
    }

    @Test
    public final void drainWaitsForAPlanParkedPartWayThroughItsPages()
            throws Exception
    {
        try (Link link = open()) {
            // Park the transfer thread after page 5 of 12.
            RecordingHooks.Park park = link.hooks().parkAfterPage(5);
            TransferPlan plan = plan(ROOM, 0, 0, ProducerFence.DONE, new int[] {0, 20, 12});
            Outcome outcome = link.post(plan);
            park.awaitParked();

            CompletableFuture<Void> drain = link.drain(ROOM);
            assertThat(drain).isNotDone();
            assertThat(outcome.isDone()).isFalse();

            park.release();
            drain.get(30, TimeUnit.SECONDS);
            assertThat(outcome.await().completed()).isTrue();
            link.closeLink();
            assertThat(outcome.calls()).isEqualTo(1);
            assertThat(link.destination().mismatches(pagesOf(plan))).isEmpty();
        }
    }

    @Test
    public final void closingThePeerFailsQueuedPlansAndThePlanWaitingOnItsFence()
            throws Exception
    {
        try (Link link = open()) {
            ControlledFence fence = new ControlledFence(9);
            Outcome waiting = link.post(plan(ROOM, 0, 0, fence, new int[] {0, 0, 4}));
            Outcome queued = link.post(plan(ROOM, 1, 4, ProducerFence.DONE, new int[] {4, 4, 4}));
            fence.awaitWaiter();
            CompletableFuture<Void> drainBeforeClose = link.drain(ROOM);

            link.closeLink();

            assertThat(queued.await().failure()).contains("closed before the plan was sent");
            assertThat(waiting.await().failure()).contains("closed").contains("nothing was sent");
            // Nothing was sent, so the room is provably drained, for a drain asked before the close and after it.
            assertThat(drainBeforeClose).succeedsWithin(WAIT);
            assertThat(link.drain(ROOM)).succeedsWithin(WAIT);
            Outcome late = link.post(plan(ROOM, 2, 8, ProducerFence.DONE, new int[] {8, 8, 1}));
            assertThat(late.await().failure()).contains("is closed");
            fence.complete();
            assertThat(link.destination().mismatches(Map.of())).isEmpty();
            assertThat(List.of(waiting.calls(), queued.calls(), late.calls())).containsExactly(1, 1, 1);
        }
    }

    @Test
    public final void aFaultInAHookFailsThePlanAndTheNextPlanStillLands()
            throws Exception
    {
        try (Link link = open()) {
            // Only page 2 is watched: a backend that batches pages ends a batch there, and writes nothing after it.
            link.hooks().onAfterPage(page -> page == 2, (room, page) -> {
                if (room.equals(ROOM) && page == 2) {
                    throw new IllegalStateException("injected fault after page 2");
                }
            });
            TransferPlan failing = plan(ROOM, 0, 0, ProducerFence.DONE, new int[] {0, 0, 8});
            String reason = link.post(failing).await().failure();
            assertThat(reason).contains("injected fault after page 2");
            assertStoppedPartWay(link, failing, 3, reason);

            TransferPlan next = plan(OTHER_ROOM, 0, 0, ProducerFence.DONE, new int[] {30, 40, 6});
            assertThat(link.post(next).await().completed()).isTrue();
            pagesOf(next).forEach((dst, src) -> assertThat(link.destination().holds(dst, src)).as("page %d", dst).isTrue());
            assertThat(link.drain(ROOM)).succeedsWithin(WAIT);
        }
    }

    @Test
    public final void aFaultBeforeReadingAChunkFailsThePlanWithoutWriting()
            throws Exception
    {
        try (Link link = open()) {
            link.hooks().onBeforeChunk((room, chunk) -> {
                throw new IllegalStateException("injected fault before chunk " + chunk);
            });
            TransferPlan failing = plan(ROOM, 3, 0, ProducerFence.DONE, new int[] {0, 0, 8});
            String reason = link.post(failing).await().failure();

            assertThat(reason).contains("injected fault before chunk 3");
            assertStoppedPartWay(link, failing, 0, reason);
            assertThat(link.destination().mismatches(Map.of())).isEmpty();
        }
    }

    @Test
    public final void aPlanOutsideEitherPoolFailsWithoutSendingAnything()
            throws Exception
    {
        try (Link link = open()) {
            Outcome tooFar = link.post(plan(ROOM, 0, 0, ProducerFence.DONE, new int[] {0, 0, 2}, new int[] {2, Pool.PAGES - 1, 2}));
            Outcome negative = link.post(plan(ROOM, 1, 0, ProducerFence.DONE, new int[] {-1, 0, 2}));

            assertThat(tooFar.await().failure())
                    .contains("outside the " + Pool.PAGES + " source or " + Pool.PAGES + " destination pages")
                    .contains("nothing was sent");
            assertThat(negative.await().failure()).contains("outside");
            assertThat(link.events()).containsExactly("failed 7#1 chunk 0", "failed 7#1 chunk 1");
            assertThat(link.destination().mismatches(Map.of())).isEmpty();
        }
    }

    @Test
    public final void aOneSidedWriteNeverAsksTheReceiversGuard()
            throws Exception
    {
        assumeTrue(expectedCapabilities().contains(ONE_SIDED), "this transport does not write one-sided");
        List<String> asked = new CopyOnWriteArrayList<>();
        WriteGuard recording = (room, page, count) -> asked.add(room + " " + page) ? () -> {} : null;
        try (Link link = open(recording)) {
            TransferPlan plan = plan(ROOM, 0, 0, ProducerFence.DONE, new int[] {0, 0, 6});

            assertThat(link.post(plan).await().completed()).isTrue();
            assertThat(link.destination().mismatches(pagesOf(plan))).isEmpty();
            assertThat(asked).isEmpty();
        }
    }

    @Test
    public final void aValidatingReceiverAsksItsGuardForEveryPageItWrites()
            throws Exception
    {
        assumeReceiverValidates();
        List<String> asked = new CopyOnWriteArrayList<>();
        WriteGuard recording = (room, page, count) -> {
            for (int i = 0; i < count; i++) {
                asked.add(room + " " + (page + i));
            }
            return () -> {};
        };
        try (Link link = open(recording)) {
            TransferPlan plan = plan(ROOM, 0, 0, ProducerFence.DONE, new int[] {0, 8, 6}, new int[] {30, 40, 2});

            assertThat(link.post(plan).await().completed()).isTrue();
            assertThat(link.destination().mismatches(pagesOf(plan))).isEmpty();
            assertThat(Set.copyOf(asked)).containsExactlyInAnyOrderElementsOf(pagesOf(plan).keySet().stream().map(page -> ROOM + " " + page).toList());
        }
    }

    @Test
    public final void aValidatingReceiverLandsNothingItsGuardRefusesAndThePeerGoesOn()
            throws Exception
    {
        assumeReceiverValidates();
        WriteGuard retiredRoom = (room, page, count) -> room.equals(ROOM) ? null : () -> {};
        try (Link link = open(retiredRoom)) {
            Outcome refused = link.post(plan(ROOM, 0, 0, ProducerFence.DONE, new int[] {0, 40, 8}, new int[] {10, 50, 3}));

            assertThat(refused.await().failure()).contains("refused").contains(ROOM.toString());
            assertThat(link.destination().mismatches(Map.of())).isEmpty();
            assertThat(link.drain(ROOM)).succeedsWithin(WAIT);

            TransferPlan next = plan(OTHER_ROOM, 0, 0, ProducerFence.DONE, new int[] {20, 40, 8});
            assertThat(link.post(next).await().completed()).isTrue();
            assertThat(link.destination().mismatches(pagesOf(next))).isEmpty();
            link.closeLink();
            assertThat(refused.calls()).isEqualTo(1);
        }
    }

    /** The hooks a plan's pages call, then its listener's completion, as {@link Link#events()} logs them. */
    protected static List<String> hooksThenCompletion(TransferPlan plan)
    {
        List<String> events = new ArrayList<>(List.of("before " + plan.room() + " chunk " + plan.chunk()));
        for (int page = plan.firstPageIndex(); page < plan.firstPageIndex() + plan.pages(); page++) {
            events.add("after " + plan.room() + " page " + page);
        }
        events.add("completed " + plan.room() + " chunk " + plan.chunk());
        return events;
    }

    private void assumeReceiverValidates()
    {
        assumeTrue(expectedCapabilities().contains(RECEIVER_VALIDATED_WRITES), "this transport's receiver does not validate writes");
    }

}
