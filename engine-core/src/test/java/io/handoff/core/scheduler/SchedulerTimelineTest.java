package io.handoff.core.scheduler;

import io.handoff.trace.FinishReason;
import io.handoff.trace.RequestTimeline;
import io.handoff.trace.TimelineEvent;
import org.junit.jupiter.api.Test;

import java.util.List;

import static io.handoff.core.scheduler.SchedulerFixture.greedy;
import static io.handoff.core.scheduler.SchedulerFixture.prompt;
import static org.assertj.core.api.Assertions.assertThat;

/** What the scheduler writes into a request's timeline: its transitions in order, one entry per chunk, none per token. */
class SchedulerTimelineTest
{
    private static final String MODEL = "tiny-gqa";

    @Test
    void aChunkedRequestRecordsQueuedAdmittedEachChunkFirstTokenAndDoneInOrder()
    {
        try (SchedulerFixture fixture = SchedulerFixture.builder(MODEL).chunk(16).build()) {
            GenerateResult result = fixture.run(greedy("chunked", prompt(40, 1), 12));

            List<RequestTimeline.Entry> entries = fixture.scheduler.timelines().find("chunked").orElseThrow().snapshot().entries();
            assertThat(entries).extracting(RequestTimeline.Entry::event).containsExactly(TimelineEvent.QUEUED, TimelineEvent.ADMITTED,
                    TimelineEvent.FORWARD_DONE, TimelineEvent.FORWARD_DONE, TimelineEvent.FORWARD_DONE, TimelineEvent.FIRST_TOKEN, TimelineEvent.DONE);
            assertThat(entries.get(0).detail()).isEqualTo("prompt_tokens=40 max_new_tokens=12");
            assertThat(entries).extracting(RequestTimeline.Entry::detail).filteredOn(detail -> detail.startsWith("step="))
                    .satisfiesExactly(d -> assertThat(d).endsWith("tokens=0..16"), d -> assertThat(d).endsWith("tokens=16..32"),
                            d -> assertThat(d).endsWith("tokens=32..40 last"));
            assertThat(entries.get(5).detail()).isEqualTo("token=" + result.outputIds()[0]);
            assertThat(entries.getLast().detail()).isEqualTo("reason=length");
            assertThat(entries).extracting(RequestTimeline.Entry::offsetNanos).isSorted();
            fixture.assertIdleAndAccountedFor();
        }
    }

    @Test
    void anAbortedRequestEndsItsTimelineAsFailedWithTheAbort()
    {
        try (SchedulerFixture fixture = SchedulerFixture.builder(MODEL).build()) {
            // the abort is in the inbox before the request's first step runs, so it ends long before its 50 tokens
            SchedulerFixture.await(fixture.scheduler.submit(greedy("warm", prompt(8, 3), 1), (i, t) -> { }));
            var gate = fixture.parkBeforeStep(1);
            RequestHandle handle = fixture.scheduler.submit(greedy("aborted", prompt(20, 2), 50), (i, t) -> { });
            gate.awaitParked(SchedulerFixture.TIMEOUT);
            fixture.scheduler.abort("aborted");
            gate.release();
            GenerateResult result = SchedulerFixture.await(handle);

            assertThat(result.finishReason()).isEqualTo(FinishReason.ABORT);
            RequestTimeline.Snapshot snapshot = fixture.scheduler.timelines().find("aborted").orElseThrow().snapshot();
            assertThat(snapshot.entries().getFirst().event()).isEqualTo(TimelineEvent.QUEUED);
            assertThat(snapshot.entries().getLast().event()).isEqualTo(TimelineEvent.FAILED);
            assertThat(snapshot.entries().getLast().detail()).startsWith("reason=abort");
            assertThat(snapshot.ended()).isTrue();
        }
    }
}
