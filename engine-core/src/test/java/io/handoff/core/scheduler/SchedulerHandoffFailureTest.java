package io.handoff.core.scheduler;

import io.handoff.core.scheduler.KvHandoff.HandoffFailure;
import io.handoff.trace.FailureCause;
import io.handoff.trace.FinishReason;
import org.junit.jupiter.api.Test;

import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import static io.handoff.core.scheduler.SchedulerFixture.greedy;
import static io.handoff.core.scheduler.SchedulerFixture.prompt;
import static org.assertj.core.api.Assertions.assertThat;

/** A prefill's room that fails after its request generated: the request's result reports the room's failure, not success. */
class SchedulerHandoffFailureTest
{
    private static final String MODEL = "tiny-gqa";

    /** A prefill's handoff whose rooms end when the test says, with the outcome it says. */
    private static final class HeldTransfers
            implements KvHandoff
    {
        final CompletableFuture<Optional<HandoffFailure>> done = new CompletableFuture<>();
        final CountDownLatch finished = new CountDownLatch(1);
        volatile FinishReason finishedWith;

        @Override
        public Release finished(HandoffRequest request, FinishReason reason, String error, Optional<FailureCause> cause)
        {
            finishedWith = reason;
            finished.countDown();
            return new AfterTransfers(done);
        }
    }

    @Test
    void aRoomThatFailsAfterTheGenerationEndedFailsTheRequestWithTheRoomsCauseAndMessage()
            throws InterruptedException
    {
        HeldTransfers handoff = new HeldTransfers();
        try (SchedulerFixture fixture = SchedulerFixture.builder(MODEL).handoff(handoff).build()) {
            RequestHandle handle = fixture.submit(greedy("unclaimed", prompt(20, 5), 1));
            // the generation ends; its result waits for the room
            assertThat(handoff.finished.await(SchedulerFixture.TIMEOUT.toSeconds(), TimeUnit.SECONDS)).isTrue();
            fixture.scheduler.checkInvariants();
            assertThat(handle.result()).isNotDone();

            handoff.done.complete(Optional.of(new HandoffFailure(FailureCause.ROOM_UNCLAIMED, "no decode claimed room 9")));
            GenerateResult result = SchedulerFixture.await(handle);

            assertThat(handoff.finishedWith).isEqualTo(FinishReason.LENGTH);
            assertThat(result.finishReason()).isEqualTo(FinishReason.ERROR);
            assertThat(result.cause()).contains(FailureCause.ROOM_UNCLAIMED);
            assertThat(result.error()).contains("no decode claimed room 9");
            fixture.assertIdleAndAccountedFor();
        }
    }

    @Test
    void aRoomThatSucceededLeavesTheResultAsTheGenerationEnded()
    {
        HeldTransfers handoff = new HeldTransfers();
        try (SchedulerFixture fixture = SchedulerFixture.builder(MODEL).handoff(handoff).build()) {
            RequestHandle handle = fixture.submit(greedy("claimed", prompt(20, 5), 1));
            handoff.done.complete(Optional.empty());
            GenerateResult result = SchedulerFixture.await(handle);

            assertThat(result.finishReason()).isEqualTo(FinishReason.LENGTH);
            assertThat(result.cause()).isEmpty();
            assertThat(result.error()).isEmpty();
            assertThat(result.outputIds()).hasSize(1);
        }
    }
}
