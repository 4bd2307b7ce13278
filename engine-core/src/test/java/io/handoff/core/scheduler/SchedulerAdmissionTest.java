package io.handoff.core.scheduler;

import io.handoff.core.fault.FaultPlan;
import io.handoff.core.model.SamplingParams;
import io.handoff.trace.FinishReason;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;

import static io.handoff.core.scheduler.SchedulerFixture.TIMEOUT;
import static io.handoff.core.scheduler.SchedulerFixture.await;
import static io.handoff.core.scheduler.SchedulerFixture.greedy;
import static io.handoff.core.scheduler.SchedulerFixture.logitBits;
import static io.handoff.core.scheduler.SchedulerFixture.prompt;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** What the scheduler refuses at once, and what it makes wait: a full pool is a normal state, not an error. */
class SchedulerAdmissionTest
{
    private static final String MODEL = "tiny-gqa";

    @Test
    void requestsThatCanNeverRunAreRejectedAtSubmitWithTheReason()
    {
        // 8 pages of 16 tokens
        try (SchedulerFixture fixture = SchedulerFixture.builder(MODEL).pageSize(16).pages(8).build()) {
            assertRejected(() -> fixture.submit(greedy("long", prompt(4000, 1), 200)), RequestRejectedException.Kind.INVALID,
                    "prompt (4000 tokens) + max_new_tokens (200) = 4200 exceeds the model's context of 4096");
            assertRejected(() -> fixture.submit(greedy("big", prompt(100, 2), 40)), RequestRejectedException.Kind.INVALID,
                    "the request needs 9 KV pages but the pool has 8: shorten it or enlarge handoff.kv.pool-pages");
            assertRejected(() -> fixture.submit(greedy("vocab", new int[] {1, 259}, 4)), RequestRejectedException.Kind.INVALID,
                    "token id 259 is outside the vocabulary [0, 259)");
            assertRejected(() -> greedy("empty", new int[0], 4), RequestRejectedException.Kind.INVALID, "the prompt is empty");
            assertRejected(() -> greedy("none", prompt(4, 3), 0), RequestRejectedException.Kind.INVALID, "max_new_tokens must be at least 1, got 0");

            // exactly the pool fits
            GenerateResult fits = fixture.run(greedy("fits", prompt(100, 2), 29));
            assertThat(fits.finishReason()).isEqualTo(FinishReason.LENGTH);
            fixture.assertIdleAndAccountedFor();
        }
    }

    @Test
    void fullWaitingQueueRejectsWithOverloadedUntilRequestsAreAdmitted()
    {
        try (SchedulerFixture fixture = SchedulerFixture.builder(MODEL).maxQueued(2).build()) {
            FaultPlan.Gate beforeStep0 = fixture.parkBeforeStep(0);
            RequestHandle first = fixture.submit(greedy("first", prompt(10, 1), 3));
            beforeStep0.awaitParked(TIMEOUT);
            RequestHandle second = fixture.submit(greedy("second", prompt(10, 2), 3));
            assertRejected(() -> fixture.submit(greedy("third", prompt(10, 3), 3)), RequestRejectedException.Kind.OVERLOADED,
                    "the waiting queue is full (2 requests): retry later");
            beforeStep0.release();

            assertThat(await(first).finishReason()).isEqualTo(FinishReason.LENGTH);
            assertThat(await(second).finishReason()).isEqualTo(FinishReason.LENGTH);
            // admitted requests no longer count against the queue
            assertThat(fixture.run(greedy("third", prompt(10, 3), 3)).finishReason()).isEqualTo(FinishReason.LENGTH);
            fixture.assertIdleAndAccountedFor();
        }
    }

    @Test
    void submitAfterCloseIsRejectedAsShuttingDown()
    {
        SchedulerFixture fixture = SchedulerFixture.builder(MODEL).build();
        fixture.close();
        assertRejected(() -> fixture.submit(greedy("late", prompt(10, 1), 3)), RequestRejectedException.Kind.SHUTTING_DOWN,
                "the engine is shutting down");
    }

    @Test
    void poolThatFitsTwoRequestsRunsSixOneAfterAnotherWithTheSameResults()
    {
        // each request reserves ceil((40 + 9 - 1) / 16) = 3 pages; 7 pages hold two at a time
        List<GenerateRequest> requests = new ArrayList<>();
        for (int i = 0; i < 6; i++) {
            requests.add(greedy("r" + i, prompt(40, 10 + i), 9));
        }
        List<GenerateResult> roomy;
        try (SchedulerFixture fixture = SchedulerFixture.builder(MODEL).pageSize(16).pages(64).chunkCache().build()) {
            roomy = fixture.runAll(requests);
        }
        try (SchedulerFixture fixture = SchedulerFixture.builder(MODEL).pageSize(16).pages(7).maxRunning(6).overlap(true).build()) {
            Set<String> active = new HashSet<>();
            int[] mostActive = {0};
            List<RequestHandle> handles = requests.stream().map(request -> fixture.scheduler.submit(request, (index, token) -> {
                // listeners run on the scheduler thread, one at a time
                if (index == 0) {
                    active.add(request.rid());
                    mostActive[0] = Math.max(mostActive[0], active.size());
                }
                if (index == request.maxNewTokens() - 1) {
                    active.remove(request.rid());
                }
            })).toList();
            for (int i = 0; i < requests.size(); i++) {
                GenerateResult result = await(handles.get(i));
                assertThat(result.finishReason()).isEqualTo(FinishReason.LENGTH);
                assertThat(result.outputIds()).isEqualTo(roomy.get(i).outputIds());
                assertThat(logitBits(result)).isDeepEqualTo(logitBits(roomy.get(i)));
            }
            assertThat(mostActive[0]).isBetween(1, 2);
            assertThat(fixture.scheduler.stats().finishedRequests()).isEqualTo(6);
            fixture.assertIdleAndAccountedFor();
        }
    }

    @Test
    void cachedPrefixesAreEvictedToAdmitNewRequests()
    {
        // 6 pages: each finished request leaves 2 cached pages behind, which later admissions must evict
        try (SchedulerFixture fixture = SchedulerFixture.builder(MODEL).pageSize(16).pages(6).build()) {
            for (int i = 0; i < 5; i++) {
                GenerateResult result = fixture.run(new GenerateRequest("r" + i, prompt(40, 20 + i), 9, SamplingParams.GREEDY, Set.of(), true, false));
                assertThat(result.finishReason()).isEqualTo(FinishReason.LENGTH);
                fixture.assertIdleAndAccountedFor();
            }
            assertThat(fixture.scheduler.stats().cachedPages()).isPositive();
        }
    }

    private static void assertRejected(Runnable submit, RequestRejectedException.Kind kind, String message)
    {
        assertThatThrownBy(submit::run)
                .isInstanceOfSatisfying(RequestRejectedException.class, e -> assertThat(e.kind()).isEqualTo(kind))
                .hasMessage(message);
    }
}
