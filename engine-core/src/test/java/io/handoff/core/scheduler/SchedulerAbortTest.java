package io.handoff.core.scheduler;

import io.handoff.core.fault.FaultPlan;
import io.handoff.spi.transfer.RoomKey;
import io.handoff.trace.FailureCause;
import io.handoff.trace.FinishReason;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;

import static io.handoff.core.scheduler.SchedulerFixture.TIMEOUT;
import static io.handoff.core.scheduler.SchedulerFixture.await;
import static io.handoff.core.scheduler.SchedulerFixture.greedy;
import static io.handoff.core.scheduler.SchedulerFixture.prompt;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * Abort in every phase returns every page, and never before the last step that touches them has ended.
 * Each test holds the request in its phase with fault-point gates, so what the scheduler has done when
 * the abort lands is fixed, not timed. Step numbers are known because each test controls what is queued.
 */
class SchedulerAbortTest
{
    private static final String MODEL = "tiny-gqa";
    private static final int PAGE = 16;

    private static SchedulerFixture.Builder fixture(boolean overlap)
    {
        return SchedulerFixture.builder(MODEL).pageSize(PAGE).pages(64).overlap(overlap);
    }

    @ParameterizedTest(name = "overlap {0}")
    @ValueSource(booleans = {false, true})
    void abortWhileWaitingReturnsAtOnceWithNothingComputed(boolean overlap)
    {
        try (SchedulerFixture fixture = fixture(overlap).maxRunning(1).build()) {
            FaultPlan.Gate beforeStep1 = fixture.parkBeforeStep(1);
            FaultPlan.Gate beforeStep2 = fixture.parkBeforeStep(2);
            RequestHandle running = fixture.submit(greedy("running", prompt(20, 1), 12));
            beforeStep1.awaitParked(TIMEOUT);
            RequestHandle waiting = fixture.submit(greedy("waiting", prompt(20, 2), 12));
            beforeStep1.release();
            // step 2's iteration has taken "waiting" from the inbox; with one running slot taken it cannot be admitted
            beforeStep2.awaitParked(TIMEOUT);
            fixture.scheduler.abort("waiting");
            beforeStep2.release();

            GenerateResult aborted = await(waiting);
            assertThat(aborted.finishReason()).isEqualTo(FinishReason.ABORT);
            assertThat(aborted.outputIds()).isEmpty();
            assertThat(aborted.logits()).isEmpty();
            assertThat(aborted.cachedTokens()).isZero();
            assertThat(aborted.error()).isEmpty();
            assertThat(aborted.firstTokenNanos()).isZero();

            GenerateResult finished = await(running);
            assertThat(finished.finishReason()).isEqualTo(FinishReason.LENGTH);
            assertThat(finished.outputIds()).hasSize(12);
            fixture.assertIdleAndAccountedFor();
            assertThat(fixture.scheduler.stats().finishedRequests()).isEqualTo(2);
        }
    }

    @Test
    void aRequestAbortedWhileWaitingTellsItsHandoffWhichRoomEndedBeforeAdmission()
    {
        List<String> heard = new CopyOnWriteArrayList<>();
        KvHandoff handoff = new KvHandoff()
        {
            @Override
            public void dequeued(String rid, RoomTicket ticket, FailureCause cause, String reason)
            {
                heard.add(rid + " " + ticket.room() + " " + ticket.bootstrap() + " " + cause + " " + reason);
            }
        };
        try (SchedulerFixture fixture = fixture(false).maxRunning(1).handoff(handoff).build()) {
            FaultPlan.Gate beforeStep1 = fixture.parkBeforeStep(1);
            FaultPlan.Gate beforeStep2 = fixture.parkBeforeStep(2);
            RequestHandle running = fixture.submit(greedy("running", prompt(20, 1), 12));
            beforeStep1.awaitParked(TIMEOUT);
            RoomTicket ticket = new RoomTicket(new RoomKey(77, 2), "127.0.0.1:1");
            RequestHandle waiting = fixture.submit(greedy("waiting", prompt(20, 2), 12).withTicket(ticket));
            beforeStep1.release();
            beforeStep2.awaitParked(TIMEOUT);
            fixture.scheduler.abort("waiting");
            beforeStep2.release();

            assertThat(await(waiting).finishReason()).isEqualTo(FinishReason.ABORT);
            await(running);
            // the abort ran before this request's result was delivered, on the scheduler thread
            assertThat(heard).containsExactly("waiting " + ticket.room() + " 127.0.0.1:1 CLIENT_ABORT null");
            fixture.assertIdleAndAccountedFor();
        }
    }

    @ParameterizedTest(name = "overlap {0}")
    @ValueSource(booleans = {false, true})
    void abortBetweenPrefillChunksCachesTheFinishedChunksAndReturnsTheRest(boolean overlap)
    {
        // 48 prompt tokens in chunks of 16: steps 0, 1 and 2
        try (SchedulerFixture fixture = fixture(overlap).chunk(PAGE).build()) {
            FaultPlan.Gate inChunk2 = fixture.parkAfterLayer(1, 0);
            // in overlap mode the scheduler runs ahead of the compute stream: hold it too, so the abort lands
            // after step 2 (the last chunk) is scheduled, exactly as it does without overlap
            FaultPlan.Gate beforeStep2 = overlap ? fixture.parkBeforeStep(2) : null;
            RequestHandle handle = fixture.submit(greedy("prefilling", prompt(48, 3), 4));
            inChunk2.awaitParked(TIMEOUT);
            if (overlap) {
                beforeStep2.awaitParked(TIMEOUT);
            }
            fixture.scheduler.abort("prefilling");
            if (overlap) {
                beforeStep2.release();
            }
            inChunk2.release();

            GenerateResult result = await(handle);
            assertThat(result.finishReason()).isEqualTo(FinishReason.ABORT);
            assertThat(result.outputIds()).isEmpty();
            // chunks 1 and 2 were computed: 32 tokens, two whole pages, now a reusable prefix
            assertThat(fixture.scheduler.stats().cachedPages()).isEqualTo(2);
            fixture.assertIdleAndAccountedFor();

            // and they are reused: the same prompt again starts from them and produces full output
            GenerateResult again = fixture.run(greedy("again", prompt(48, 3), 4));
            assertThat(again.cachedTokens()).isEqualTo(32);
            assertThat(again.outputIds()).hasSize(4);
            fixture.assertIdleAndAccountedFor();
        }
    }

    @ParameterizedTest(name = "overlap {0}")
    @ValueSource(booleans = {false, true})
    void abortWhileDecodingKeepsTheTokensProducedSoFar(boolean overlap)
    {
        int[] prompt = prompt(20, 4);
        try (SchedulerFixture fixture = fixture(overlap).build()) {
            // step 0 is the prefill (output 0), step k decodes output k
            FaultPlan.Gate inDecode3 = fixture.parkAfterLayer(3, 1);
            FaultPlan.Gate beforeStep4 = overlap ? fixture.parkBeforeStep(4) : null;
            RequestHandle handle = fixture.submit(greedy("decoding", prompt, 30));
            inDecode3.awaitParked(TIMEOUT);
            if (overlap) {
                beforeStep4.awaitParked(TIMEOUT);
            }
            fixture.scheduler.abort("decoding");
            if (overlap) {
                beforeStep4.release();
            }
            inDecode3.release();

            GenerateResult aborted = await(handle);
            assertThat(aborted.finishReason()).isEqualTo(FinishReason.ABORT);
            assertThat(aborted.outputIds()).hasSize(4);
            assertThat(aborted.logits()).hasSize(4);
            // 20 prompt + 3 fed-back outputs have KV: one whole page is cached
            assertThat(fixture.scheduler.stats().cachedPages()).isEqualTo(1);
            fixture.assertIdleAndAccountedFor();

            GenerateResult complete = fixture.run(greedy("complete", prompt, 30));
            assertThat(complete.outputIds()).hasSize(30).startsWith(aborted.outputIds());
            fixture.assertIdleAndAccountedFor();
        }
    }

    @Test
    void abortedRequestsPagesStayTakenUntilTheStepReadingThemEnds()
    {
        int[] promptA = prompt(24, 5);
        int[] promptB = prompt(40, 6);
        try (SchedulerFixture fixture = fixture(true).build()) {
            FaultPlan.Gate beforeStep0 = fixture.parkBeforeStep(0);
            FaultPlan.Gate beforeStep2 = fixture.parkBeforeStep(2);
            FaultPlan.Gate inStep2 = fixture.parkAfterLayer(2, 0);
            FaultPlan.Gate beforeStep3 = fixture.parkBeforeStep(3);
            // step 0: A's prefill; step 1: A's decode 1 + B's prefill; step 2: A's decode 2 + B's decode 1
            RequestHandle a = fixture.submit(greedy("a", promptA, 20));
            beforeStep0.awaitParked(TIMEOUT);
            RequestHandle b = fixture.submit(greedy("b", promptB, 6));
            beforeStep0.release();
            beforeStep2.awaitParked(TIMEOUT);
            // handled at the start of step 3's iteration, while step 2 (which decodes A) is still running
            fixture.scheduler.abort("a");
            beforeStep2.release();
            beforeStep3.awaitParked(TIMEOUT);
            inStep2.awaitParked(TIMEOUT);

            // A is aborted, but step 2 still writes its KV: nothing of A's may be free, and no result yet
            int pagesA = Math.ceilDiv(24 + 20 - 1, PAGE);
            int pagesB = Math.ceilDiv(40 + 6 - 1, PAGE);
            assertThat(fixture.freePages()).isEqualTo(fixture.totalPages() - pagesA - pagesB);
            assertThat(a.result()).isNotDone();
            assertThat(fixture.scheduler.inFlightFence(2)).hasValueSatisfying(fence -> assertThat(fence.isDone()).isFalse());

            beforeStep3.release();
            assertThat(a.result()).isNotDone();
            inStep2.release();
            GenerateResult aborted = await(a);
            assertThat(aborted.finishReason()).isEqualTo(FinishReason.ABORT);
            assertThat(aborted.outputIds()).hasSize(2);
            assertThat(aborted.logits()).hasSize(2);

            GenerateResult finished = await(b);
            assertThat(finished.finishReason()).isEqualTo(FinishReason.LENGTH);
            fixture.assertIdleAndAccountedFor();
            // B lost its batch mate mid-step; its tokens are the ones it produces alone
            GenerateResult alone = fixture.run(greedy("b-alone", promptB, 6));
            assertThat(finished.outputIds()).isEqualTo(alone.outputIds());
            assertThat(SchedulerFixture.logitBits(finished)).isDeepEqualTo(SchedulerFixture.logitBits(alone));
        }
    }

    @Test
    void abortInOverlapModeHandsTheRunningSlotToTheNextRequestOnlyOnceReleased()
    {
        // one running slot: the next request must wait for the aborted one's req_to_token row, which it keeps
        // until the step already scheduled past the abort has ended
        int[] promptB = prompt(30, 8);
        try (SchedulerFixture fixture = fixture(true).maxRunning(1).build()) {
            FaultPlan.Gate inDecode2 = fixture.parkAfterLayer(2, 0);
            RequestHandle a = fixture.submit(greedy("a", prompt(30, 7), 20));
            RequestHandle b = fixture.submit(greedy("b", promptB, 5));
            inDecode2.awaitParked(TIMEOUT);
            fixture.scheduler.abort("a");
            inDecode2.release();

            assertThat(await(a).finishReason()).isEqualTo(FinishReason.ABORT);
            GenerateResult finished = await(b);
            assertThat(finished.finishReason()).isEqualTo(FinishReason.LENGTH);
            assertThat(finished.error()).isEmpty();
            fixture.assertIdleAndAccountedFor();
            assertThat(finished.outputIds()).isEqualTo(fixture.run(greedy("b-again", promptB, 5)).outputIds());
        }
    }

    @Test
    void abortAfterFinishOrOfAnUnknownIdChangesNothing()
    {
        try (SchedulerFixture fixture = fixture(false).build()) {
            GenerateResult first = fixture.run(greedy("done", prompt(20, 9), 5));
            int free = fixture.freePages();
            fixture.scheduler.abort("done");
            fixture.scheduler.abort("never-submitted");
            GenerateResult second = fixture.run(greedy("next", prompt(21, 10), 5));

            assertThat(first.finishReason()).isEqualTo(FinishReason.LENGTH);
            assertThat(second.finishReason()).isEqualTo(FinishReason.LENGTH);
            assertThat(fixture.scheduler.stats().finishedRequests()).isEqualTo(2);
            // the second request's prompt+outputs add one cached page; nothing of the first moved
            assertThat(fixture.freePages()).isEqualTo(free - 1);
            fixture.assertIdleAndAccountedFor();
        }
    }

    @Test
    void closeAbortsRunningAndWaitingRequestsAndReturnsEveryPage()
    {
        SchedulerFixture fixture = fixture(true).maxRunning(1).build();
        FaultPlan.Gate inDecode1 = fixture.parkAfterLayer(1, 0);
        RequestHandle running = fixture.submit(greedy("running", prompt(20, 11), 50));
        RequestHandle waiting = fixture.submit(greedy("waiting", prompt(20, 12), 50));
        inDecode1.awaitParked(TIMEOUT);
        inDecode1.release();
        // close checks that every page is free once the cache is emptied
        fixture.close();

        assertThat(await(running).finishReason()).isEqualTo(FinishReason.ABORT);
        assertThat(await(running).error()).hasValue("the engine shut down");
        assertThat(await(waiting).finishReason()).isEqualTo(FinishReason.ABORT);
        assertThat(await(waiting).error()).hasValue("the engine shut down");
    }
}
