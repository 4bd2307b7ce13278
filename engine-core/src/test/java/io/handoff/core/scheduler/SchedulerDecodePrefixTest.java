package io.handoff.core.scheduler;

import io.handoff.core.kv.PageState;
import io.handoff.core.model.SamplingParams;
import io.handoff.spi.transfer.RoomKey;
import org.junit.jupiter.api.Test;

import java.util.Arrays;
import java.util.Set;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

import static io.handoff.core.scheduler.SchedulerFixture.concat;
import static io.handoff.core.scheduler.SchedulerFixture.prompt;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * A decode's prefix cache for routed requests: a turn that resends a conversation's history takes the pages its prefix
 * cache holds and receives only the rest; at least the prompt's last page is always received; what a claim names is
 * decided at admission, so an entry evicted after the claim only means more pages are received.
 */
class SchedulerDecodePrefixTest
{
    private static final String MODEL = "tiny-gqa";
    private static final int PAGE = 16;

    /** A decode's handoff: every ticketed request's prompt comes from a peer; the test says when it landed. */
    private static final class ReceivingHandoff
            implements KvHandoff
    {
        final boolean reuse;
        final BlockingQueue<HandoffRequest> admitted = new LinkedBlockingQueue<>();

        ReceivingHandoff(boolean reuse)
        {
            this.reuse = reuse;
        }

        @Override
        public boolean receivesPrompt(HandoffRequest request)
        {
            return request.ticket().isPresent();
        }

        @Override
        public boolean reusesCachedPrompt()
        {
            return reuse;
        }

        @Override
        public void admitted(HandoffRequest request)
        {
            admitted.add(request);
        }

        HandoffRequest next()
                throws InterruptedException
        {
            HandoffRequest request = admitted.poll(SchedulerFixture.TIMEOUT.toSeconds(), TimeUnit.SECONDS);
            assertThat(request).as("an admitted request").isNotNull();
            return request;
        }
    }

    private static GenerateRequest routed(String rid, int[] prompt, int maxNewTokens, int room)
    {
        // no logits: a decode gets its first token from the prefill without them
        return new GenerateRequest(rid, prompt, maxNewTokens, SamplingParams.GREEDY, Set.of(), true, false).withTicket(new RoomTicket(new RoomKey(room, 1), "127.0.0.1:1"));
    }

    /** Runs a routed request whose KV "lands" as soon as it is admitted; returns what its handoff saw and its result. */
    private static GenerateResult land(SchedulerFixture fixture, ReceivingHandoff handoff, GenerateRequest request, HandoffRequest[] seen)
            throws InterruptedException
    {
        RequestHandle handle = fixture.submit(request);
        seen[0] = handoff.next();
        fixture.scheduler.promptKvArrived(request.rid(), 7);
        return SchedulerFixture.await(handle);
    }

    @Test
    void aTurnThatResendsTheHistoryReceivesOnlyThePagesPastWhatTheDecodeCached()
            throws InterruptedException
    {
        ReceivingHandoff handoff = new ReceivingHandoff(true);
        try (SchedulerFixture fixture = SchedulerFixture.builder(MODEL).handoff(handoff).build()) {
            int[] first = prompt(40, 3);
            HandoffRequest[] seen = new HandoffRequest[1];
            GenerateResult turn1 = land(fixture, handoff, routed("turn-1", first, 8, 1), seen);
            HandoffRequest one = seen[0];
            assertThat(one.heldPages()).isZero();

            // the history (prompt and output: 48 tokens, 2 whole pages with KV here) and a new question
            int[] second = concat(concat(first, turn1.outputIds()), prompt(20, 4));
            RequestHandle handle = fixture.submit(routed("turn-2", second, 8, 2));
            HandoffRequest two = handoff.next();
            assertThat(two.heldPages()).isEqualTo(2);
            assertThat(Arrays.copyOf(two.pages(), 2)).as("the cached pages of turn 1").containsExactly(Arrays.copyOf(one.pages(), 2));
            for (int i = 0; i < two.promptPages(); i++) {
                assertThat(fixture.kv.pagePool().state(two.pages()[i])).as("prompt page " + i)
                        .isEqualTo(i < 2 ? PageState.OWNED : PageState.RECEIVING);
            }
            fixture.scheduler.promptKvArrived("turn-2", 7);
            GenerateResult result = SchedulerFixture.await(handle);
            assertThat(result.cachedTokens()).isEqualTo(2 * PAGE);
            assertThat(result.outputIds()).hasSize(8);
            fixture.assertIdleAndAccountedFor();
        }
    }

    @Test
    void theLastPromptPageIsReceivedEvenWhenTheCacheHoldsTheWholePrompt()
            throws InterruptedException
    {
        ReceivingHandoff handoff = new ReceivingHandoff(true);
        try (SchedulerFixture fixture = SchedulerFixture.builder(MODEL).handoff(handoff).build()) {
            int[] prompt = prompt(4 * PAGE, 5);
            HandoffRequest[] seen = new HandoffRequest[1];
            land(fixture, handoff, routed("first", prompt, 4, 1), seen);
            land(fixture, handoff, routed("again", prompt, 4, 2), seen);
            assertThat(seen[0].heldPages()).isEqualTo(3);
            assertThat(seen[0].promptPages()).isEqualTo(4);
            fixture.assertIdleAndAccountedFor();
        }
    }

    @Test
    void withTheDecodeCacheOffEveryPromptPageIsReceived()
            throws InterruptedException
    {
        ReceivingHandoff handoff = new ReceivingHandoff(false);
        try (SchedulerFixture fixture = SchedulerFixture.builder(MODEL).handoff(handoff).build()) {
            int[] prompt = prompt(4 * PAGE, 5);
            HandoffRequest[] seen = new HandoffRequest[1];
            land(fixture, handoff, routed("first", prompt, 4, 1), seen);
            land(fixture, handoff, routed("again", prompt, 4, 2), seen);
            assertThat(seen[0].heldPages()).isZero();
            fixture.assertIdleAndAccountedFor();
        }
    }

    @Test
    void aCacheEntryEvictedAfterTheClaimWasSentOnlyMeansMorePagesAreReceived()
            throws InterruptedException
    {
        ReceivingHandoff handoff = new ReceivingHandoff(true);
        // 16 pages: turn 1 leaves 2 cached; the big request needs 15, so its admission evicts them
        try (SchedulerFixture fixture = SchedulerFixture.builder(MODEL).handoff(handoff).pages(16).build()) {
            int[] first = prompt(40, 3);
            HandoffRequest[] seen = new HandoffRequest[1];
            GenerateResult turn1 = land(fixture, handoff, routed("turn-1", first, 8, 1), seen);
            assertThat(fixture.scheduler.stats().cachedPages()).isEqualTo(2);

            RequestHandle big = fixture.submit(routed("big", prompt(200, 9), 30, 2));
            // turn 2 is claimed now (its handoff hears of it at submission) and waits behind the big one for pages
            int[] second = concat(concat(first, turn1.outputIds()), prompt(20, 4));
            RequestHandle turn2 = fixture.submit(routed("turn-2", second, 8, 3));
            assertThat(handoff.next().rid()).isEqualTo("big");
            // an audit is a barrier: the stats show what the admission did
            fixture.scheduler.checkInvariants();
            assertThat(fixture.scheduler.stats().cachedPages()).as("evicted for the big request").isZero();
            fixture.scheduler.promptKvArrived("big", 7);
            SchedulerFixture.await(big);

            HandoffRequest two = handoff.next();
            assertThat(two.rid()).isEqualTo("turn-2");
            assertThat(two.heldPages()).as("nothing of turn 1 is cached any more: the whole prompt is received").isZero();
            fixture.scheduler.promptKvArrived("turn-2", 7);
            assertThat(SchedulerFixture.await(turn2).outputIds()).hasSize(8);
            fixture.assertIdleAndAccountedFor();
        }
    }
}
