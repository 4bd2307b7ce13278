package io.handoff.core.scheduler;

import io.handoff.core.fault.FaultPlan;
import io.handoff.trace.FailureCause;
import io.handoff.trace.FinishReason;
import org.junit.jupiter.api.Test;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import static io.handoff.core.scheduler.SchedulerFixture.TIMEOUT;
import static io.handoff.core.scheduler.SchedulerFixture.await;
import static io.handoff.core.scheduler.SchedulerFixture.greedy;
import static io.handoff.core.scheduler.SchedulerFixture.prompt;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * {@link Scheduler#flushCache()}: on an idle engine every cached page goes back to the free pool and a later request
 * computes its whole prompt again; while a request runs, waits, or (on a decode) receives its prompt's KV, nothing is
 * dropped.
 */
class SchedulerCacheFlushTest
{
    private static final int PAGE = 16;

    private static CacheFlush flush(SchedulerFixture fixture)
            throws Exception
    {
        return fixture.scheduler.flushCache().get(TIMEOUT.toSeconds(), TimeUnit.SECONDS);
    }

    @Test
    void flushOnAnIdleEngineReturnsEveryCachedPageToTheFreePoolAndTheNextRequestReusesNothing()
            throws Exception
    {
        int[] prompt = prompt(70, 1);
        try (SchedulerFixture fixture = SchedulerFixture.builder("tiny-gqa").pageSize(PAGE).pages(64).build()) {
            GenerateResult first = fixture.run(greedy("first", prompt, 4));
            int cached = fixture.scheduler.stats().cachedPages();
            assertThat(cached).isPositive();
            assertThat(fixture.freePages()).isEqualTo(fixture.totalPages() - cached);

            CacheFlush flush = flush(fixture);
            assertThat(flush.flushed()).isTrue();
            assertThat(flush.droppedPages()).isEqualTo(cached);
            assertThat(flush.freePages()).isEqualTo(fixture.totalPages());
            assertThat(flush.refusal()).isEmpty();
            // the stats are published before the flush's caller hears of it
            assertThat(fixture.scheduler.stats().cachedPages()).isZero();
            assertThat(fixture.scheduler.stats().pages().free()).isEqualTo(fixture.totalPages());
            fixture.assertIdleAndAccountedFor();

            GenerateResult again = fixture.run(greedy("again", prompt, 4));
            assertThat(again.cachedTokens()).isZero();
            assertThat(again.outputIds()).isEqualTo(first.outputIds());
            // and a flush of an empty cache is a success that drops nothing
            assertThat(flush(fixture).flushed()).isTrue();
            assertThat(flush(fixture).droppedPages()).isZero();
        }
    }

    @Test
    void flushIsRefusedWhileARequestRunsAndAnotherWaitsAndTheCacheStaysIntact()
            throws Exception
    {
        try (SchedulerFixture fixture = SchedulerFixture.builder("tiny-gqa").pageSize(PAGE).pages(64).maxRunning(1).build()) {
            fixture.run(greedy("warm", prompt(40, 1), 2));
            int cached = fixture.scheduler.stats().cachedPages();
            assertThat(cached).isPositive();

            FaultPlan.Gate beforeStep3 = fixture.parkBeforeStep(3);
            FaultPlan.Gate beforeStep4 = fixture.parkBeforeStep(4);
            RequestHandle running = fixture.submit(greedy("running", prompt(20, 2), 12));
            beforeStep3.awaitParked(TIMEOUT);
            // both reach the inbox before the scheduler's next turn: "waiting" is queued behind the one running slot
            RequestHandle waiting = fixture.submit(greedy("waiting", prompt(20, 3), 2));
            CompletableFuture<CacheFlush> refused = fixture.scheduler.flushCache();
            beforeStep3.release();
            beforeStep4.awaitParked(TIMEOUT);
            CacheFlush outcome = refused.get(TIMEOUT.toSeconds(), TimeUnit.SECONDS);
            assertThat(outcome.flushed()).isFalse();
            assertThat(outcome.droppedPages()).isZero();
            assertThat(outcome.running()).isEqualTo(1);
            assertThat(outcome.waiting()).isEqualTo(1);
            assertThat(outcome.refusal()).contains("1 request(s) running and 1 waiting");
            beforeStep4.release();

            assertThat(await(running).finishReason()).isEqualTo(FinishReason.LENGTH);
            assertThat(await(waiting).finishReason()).isEqualTo(FinishReason.LENGTH);
            // what was cached before the refusal is still there: the refused flush dropped nothing
            assertThat(fixture.scheduler.stats().cachedPages()).isGreaterThanOrEqualTo(cached);
            assertThat(fixture.run(greedy("warm-again", prompt(40, 1), 2)).cachedTokens()).isEqualTo(32);
            assertThat(flush(fixture).flushed()).isTrue();
            fixture.assertIdleAndAccountedFor();
        }
    }

    /** A decode's handoff without a peer: every request receives its prompt's KV, which never comes until the test says. */
    private static final class DecodeWithoutPeer
            implements KvHandoff
    {
        final CompletableFuture<String> admitted = new CompletableFuture<>();

        @Override
        public boolean receivesPrompt(HandoffRequest request)
        {
            return true;
        }

        @Override
        public void admitted(HandoffRequest request)
        {
            admitted.complete(request.rid());
        }
    }

    @Test
    void onADecodeARequestReceivingItsPromptsKvCountsAsRunning()
            throws Exception
    {
        DecodeWithoutPeer handoff = new DecodeWithoutPeer();
        try (SchedulerFixture fixture = SchedulerFixture.builder("tiny-gqa").pageSize(PAGE).pages(16).handoff(handoff).build()) {
            RequestHandle receiving = fixture.submit(greedy("remote", prompt(40, 1), 4));
            assertThat(handoff.admitted.get(TIMEOUT.toSeconds(), TimeUnit.SECONDS)).isEqualTo("remote");
            CacheFlush outcome = flush(fixture);
            assertThat(outcome.flushed()).isFalse();
            assertThat(outcome.running()).isEqualTo(1);
            assertThat(outcome.waiting()).isZero();

            fixture.scheduler.promptKvFailed("remote", FailureCause.PEER_LOST, "the prefill went away");
            assertThat(await(receiving).finishReason()).isEqualTo(FinishReason.ERROR);
            assertThat(flush(fixture).flushed()).isTrue();
            assertThat(fixture.scheduler.stats().pages().free()).isEqualTo(fixture.totalPages());
            assertThat(fixture.scheduler.stats().running()).isZero();
        }
    }
}
