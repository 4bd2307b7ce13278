package io.handoff.core.scheduler;

import io.handoff.trace.FailureCause;
import io.handoff.trace.FinishReason;
import org.junit.jupiter.api.Test;

import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;

import static io.handoff.core.scheduler.SchedulerFixture.TIMEOUT;
import static io.handoff.core.scheduler.SchedulerFixture.await;
import static io.handoff.core.scheduler.SchedulerFixture.concat;
import static io.handoff.core.scheduler.SchedulerFixture.greedy;
import static io.handoff.core.scheduler.SchedulerFixture.prompt;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * A prefill's source pages, its own and those it shares with the prefix cache, stay held while a transfer plan may
 * still read them: not freed, not evicted, not given to another request, until the plan's outcome (here: the
 * release future the handoff returns, which the engine completes when the room's plans reported or drained).
 */
class SchedulerSourcePagesTest
{
    private static final int PAGE = 16;

    /** A prefill's handoff whose plans for requests "sent-…" are parked until the test gives their outcome. */
    private static final class ParkedPlans
            implements KvHandoff
    {
        final Map<String, CompletableFuture<int[]>> admitted = new ConcurrentHashMap<>();
        final Map<String, CompletableFuture<Optional<HandoffFailure>>> outcomes = new ConcurrentHashMap<>();

        CompletableFuture<int[]> admitted(String rid)
        {
            return admitted.computeIfAbsent(rid, r -> new CompletableFuture<>());
        }

        CompletableFuture<Optional<HandoffFailure>> outcome(String rid)
        {
            return outcomes.computeIfAbsent(rid, r -> new CompletableFuture<>());
        }

        @Override
        public void admitted(HandoffRequest request)
        {
            admitted(request.rid()).complete(request.pages());
        }

        @Override
        public Release finished(HandoffRequest request, FinishReason reason, String error, Optional<FailureCause> cause)
        {
            return request.rid().startsWith("sent") ? new AfterTransfers(outcome(request.rid())) : Release.NOW;
        }
    }

    @Test
    void sourcePagesReadByAParkedPlanAreNeitherFreedNorEvictedUntilThePlansOutcome()
            throws Exception
    {
        ParkedPlans handoff = new ParkedPlans();
        try (SchedulerFixture fixture = SchedulerFixture.builder("tiny-gqa").pageSize(PAGE).pages(8).handoff(handoff).build()) {
            int[] prefix = prompt(48, 1);
            fixture.run(greedy("warm", prefix, 1));
            assertThat(fixture.scheduler.stats().cachedPages()).isEqualTo(3);

            // 3 of its 4 prompt pages come from the prefix cache; its plan reads all 4
            RequestHandle sent = fixture.submit(greedy("sent-a", concat(prefix, prompt(16, 2)), 1));
            int[] sources = handoff.admitted("sent-a").get(TIMEOUT.toSeconds(), TimeUnit.SECONDS);
            CompletableFuture<GenerateResult> sentResult = sent.result();
            fixture.scheduler.checkInvariants();

            // a request that needs the whole pool would have to evict the cached prefix and take the request's page
            RequestHandle big = fixture.submit(greedy("big", prompt(112, 3), 16));
            fixture.scheduler.checkInvariants();
            fixture.scheduler.checkInvariants();
            assertThat(big.result()).isNotDone();
            assertThat(handoff.admitted("big")).isNotDone();
            assertThat(sentResult).as("its pages are not back, so its result is not delivered").isNotDone();
            SchedulerStats held = fixture.scheduler.stats();
            assertThat(held.cachedPages()).as("the shared source pages stay in the prefix cache").isEqualTo(3);
            assertThat(held.pages().free()).isEqualTo(4);
            for (int page : sources) {
                assertThat(fixture.kv.pagePool().refCount(page)).as("source page %d", page).isPositive();
            }

            handoff.outcome("sent-a").complete(Optional.empty());
            assertThat(await(sent).finishReason()).isEqualTo(FinishReason.LENGTH);
            GenerateResult served = await(big);
            assertThat(served.finishReason()).isEqualTo(FinishReason.LENGTH);
            assertThat(handoff.admitted("big").get()).contains(sources);
            fixture.assertIdleAndAccountedFor();
        }
    }
}
