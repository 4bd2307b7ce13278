package io.handoff.core.scheduler;

import io.handoff.core.fault.FaultPlan;
import io.handoff.core.fault.FaultPlan.Match;
import io.handoff.core.fault.FaultPoint;
import io.handoff.trace.FinishReason;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.util.Arrays;
import java.util.Optional;

import static io.handoff.core.scheduler.SchedulerFixture.TIMEOUT;
import static io.handoff.core.scheduler.SchedulerFixture.await;
import static io.handoff.core.scheduler.SchedulerFixture.greedy;
import static io.handoff.core.scheduler.SchedulerFixture.logitBits;
import static io.handoff.core.scheduler.SchedulerFixture.prompt;
import static org.assertj.core.api.Assertions.assertThat;

/** Steps parked and failed at the scheduler's fault points: fences, errors, and recovery. */
class SchedulerFaultTest
{
    private static final String MODEL = "tiny-gqa";

    @ParameterizedTest(name = "overlap {0}")
    @ValueSource(booleans = {false, true})
    void stepFenceCompletesOnlyAfterItsParkedForwardIsReleased(boolean overlap)
    {
        try (SchedulerFixture fixture = SchedulerFixture.builder(MODEL).overlap(overlap).build()) {
            FaultPlan.Gate afterLayer2 = fixture.parkAfterLayer(1, 2);
            RequestHandle handle = fixture.submit(greedy("a", prompt(20, 1), 4));
            afterLayer2.awaitParked(TIMEOUT);

            Optional<Fence> fence = fixture.scheduler.inFlightFence(1);
            assertThat(fence).isPresent();
            assertThat(fence.get().step()).isEqualTo(1);
            assertThat(fence.get().isDone()).isFalse();
            assertThat(fence.get()).hasToString("Fence[step 1, pending]");
            assertThat(afterLayer2.parkedNow()).isEqualTo(1);
            assertThat(handle.result()).isNotDone();

            afterLayer2.release();
            GenerateResult result = await(handle);
            assertThat(fence.get().isDone()).isTrue();
            assertThat(fence.get().failed()).isFalse();
            assertThat(result.outputIds()).hasSize(4);
            // a delivered result means every step that touched the request has completed
            assertThat(fixture.scheduler.inFlightFence(1)).isEmpty();
            fixture.assertIdleAndAccountedFor();
        }
    }

    @ParameterizedTest(name = "overlap {0}")
    @ValueSource(booleans = {false, true})
    void failedStepFinishesItsRequestsWithErrorAndLaterRequestsStillWork(boolean overlap)
    {
        int[] promptA = prompt(20, 2);
        int[] promptB = prompt(36, 3);
        // the chunk cache reuses nothing, so the retries below recompute everything in pages the failed step wrote
        try (SchedulerFixture fixture = SchedulerFixture.builder(MODEL).chunkCache().pages(16).overlap(overlap).build()) {
            GenerateResult referenceA = fixture.run(greedy("reference-a", promptA, 5));
            GenerateResult referenceB = fixture.run(greedy("reference-b", promptB, 5));
            long failingStep = fixture.scheduler.stats().steps() + 1;
            fixture.faults.fail(FaultPoint.FORWARD_AFTER_LAYER, Match.is(failingStep), Match.is(1), 1);
            // A's prefill runs alone; the failing step is A's first decode together with B's prefill
            FaultPlan.Gate beforeFirst = fixture.parkBeforeStep(failingStep - 1);
            RequestHandle a = fixture.submit(greedy("a", promptA, 5));
            beforeFirst.awaitParked(TIMEOUT);
            RequestHandle b = fixture.submit(greedy("b", promptB, 5));
            beforeFirst.release();

            GenerateResult failedA = await(a);
            GenerateResult failedB = await(b);
            String expectedError = "forward step " + failingStep + " failed: injected fault at forward: after layer (" + failingStep + ", 1)";
            assertThat(failedA.finishReason()).isEqualTo(FinishReason.ERROR);
            assertThat(failedA.error()).hasValue(expectedError);
            assertThat(failedA.outputIds()).containsExactly(referenceA.outputIds()[0]);
            assertThat(failedA.logits()).hasSize(1);
            assertThat(failedB.finishReason()).isEqualTo(FinishReason.ERROR);
            assertThat(failedB.error()).hasValue(expectedError);
            assertThat(failedB.outputIds()).isEmpty();
            assertThat(fixture.freePages()).isEqualTo(fixture.totalPages());
            fixture.assertIdleAndAccountedFor();

            GenerateResult retryA = fixture.run(greedy("retry-a", promptA, 5));
            GenerateResult retryB = fixture.run(greedy("retry-b", promptB, 5));
            assertThat(retryA.finishReason()).isEqualTo(FinishReason.LENGTH);
            assertThat(logitBits(retryA)).isDeepEqualTo(logitBits(referenceA));
            assertThat(logitBits(retryB)).isDeepEqualTo(logitBits(referenceB));
            fixture.assertIdleAndAccountedFor();
        }
    }

    @Test
    void failedStepIsNeverCachedAsAPrefix()
    {
        int[] prompt = prompt(40, 4);
        try (SchedulerFixture fixture = SchedulerFixture.builder(MODEL).chunk(16).build()) {
            // the failure hits the second chunk: the first chunk's page is final, but a failed request caches nothing
            fixture.faults.fail(FaultPoint.FORWARD_AFTER_LAYER, Match.is(1), Match.is(0), 1);
            GenerateResult failed = fixture.run(greedy("failed", prompt, 3));
            assertThat(failed.finishReason()).isEqualTo(FinishReason.ERROR);
            assertThat(fixture.scheduler.stats().cachedPages()).isZero();
            assertThat(fixture.freePages()).isEqualTo(fixture.totalPages());

            GenerateResult retry = fixture.run(greedy("retry", prompt, 3));
            assertThat(retry.cachedTokens()).isZero();
            assertThat(retry.finishReason()).isEqualTo(FinishReason.LENGTH);
            fixture.assertIdleAndAccountedFor();
        }
    }

    @ParameterizedTest(name = "overlap {0}")
    @ValueSource(booleans = {false, true})
    void schedulerLoopFailureFailsRunningRequestsAndTheSchedulerCarriesOn(boolean overlap)
    {
        try (SchedulerFixture fixture = SchedulerFixture.builder(MODEL).overlap(overlap).build()) {
            fixture.faults.fail(FaultPoint.SCHEDULER_BEFORE_STEP, Match.is(1), Match.ANY, 1);
            GenerateResult failed = fixture.run(greedy("failed", prompt(20, 5), 4));
            assertThat(failed.finishReason()).isEqualTo(FinishReason.ERROR);
            assertThat(failed.error()).hasValueSatisfying(error -> assertThat(error)
                    .startsWith("scheduler failure: ")
                    .contains("injected fault at scheduler: before step (1, 0)"));
            fixture.assertIdleAndAccountedFor();

            // the prefill (step 0) completed without overlap; with overlap the loop failed before taking its output
            assertThat(failed.outputIds()).hasSize(overlap ? 0 : 1);
            GenerateResult next = fixture.run(greedy("next", prompt(20, 5), 4));
            assertThat(next.finishReason()).isEqualTo(FinishReason.LENGTH);
            assertThat(Arrays.copyOf(next.outputIds(), failed.outputIds().length)).isEqualTo(failed.outputIds());
            fixture.assertIdleAndAccountedFor();
        }
    }
}
