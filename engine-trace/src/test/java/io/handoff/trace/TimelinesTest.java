package io.handoff.trace;

import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicLong;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** The bounded store of request timelines: eviction, the per-request entry cap, rid reuse, both clocks, concurrent writers. */
class TimelinesTest
{
    /** A clock the test moves: wall time in microseconds, monotonic time in nanoseconds, both advanced by {@link #advance}. */
    private static final class TestClock
            implements TimelineClock
    {
        final AtomicLong micros = new AtomicLong(1_700_000_000_000_000L);
        final AtomicLong nanos = new AtomicLong(5_000);

        void advance(long byMicros)
        {
            micros.addAndGet(byMicros);
            nanos.addAndGet(byMicros * 1000);
        }

        @Override
        public long epochMicros()
        {
            return micros.get();
        }

        @Override
        public long nanos()
        {
            return nanos.get();
        }
    }

    @Test
    void keepsTheLastNRequestsAndEvictsTheOldestFirst()
    {
        Timelines timelines = new Timelines(3);
        for (String rid : List.of("a", "b", "c", "d", "e")) {
            timelines.begin(rid, TimelineEvent.QUEUED, "");
        }

        assertThat(timelines.rids()).containsExactly("c", "d", "e");
        assertThat(timelines.find("a")).isEmpty();
        assertThat(timelines.find("b")).isEmpty();
        assertThat(timelines.find("e")).isPresent();
        // a hook of an evicted request records into nothing instead of failing
        timelines.of("a").record(TimelineEvent.ADMITTED);
        assertThat(timelines.find("a")).isEmpty();
    }

    @Test
    void aReusedRidStartsAFreshTimelineAndDoesNotCountTwice()
    {
        Timelines timelines = new Timelines(2);
        RequestTimeline first = timelines.begin("a", TimelineEvent.QUEUED, "attempt=1");
        first.ended(FinishReason.LENGTH, null, null);
        timelines.begin("b", TimelineEvent.QUEUED, "");
        RequestTimeline second = timelines.begin("a", TimelineEvent.QUEUED, "attempt=2");

        assertThat(second).isNotSameAs(first);
        assertThat(timelines.rids()).containsExactly("b", "a");
        assertThat(timelines.find("a")).containsSame(second);
        assertThat(second.snapshot().entries()).extracting(RequestTimeline.Entry::detail).containsExactly("attempt=2");
        // the store holds two distinct requests: a third evicts only the oldest
        timelines.begin("c", TimelineEvent.QUEUED, "");
        assertThat(timelines.rids()).containsExactly("a", "c");
    }

    @Test
    void aRetryOfAFailedRequestContinuesItsTimelineSoTheFailureStaysVisible()
    {
        Timelines timelines = new Timelines(2);
        RequestTimeline first = timelines.begin("a", TimelineEvent.QUEUED, "prompt_tokens=3");
        first.record(TimelineEvent.CHECKSUM_MISMATCH, "error=KV checksum mismatch on room page 0");
        first.ended(FinishReason.ERROR, FailureCause.CHECKSUM_MISMATCH, "KV checksum mismatch on room page 0");
        timelines.begin("b", TimelineEvent.QUEUED, "");
        RequestTimeline retry = timelines.begin("a", TimelineEvent.QUEUED, "prompt_tokens=3");
        retry.ended(FinishReason.LENGTH, null, null);

        assertThat(retry).isSameAs(first);
        assertThat(retry.snapshot().entries()).extracting(entry -> entry.event().label() + " " + entry.detail()).containsExactly(
                "queued prompt_tokens=3", "checksum_mismatch error=KV checksum mismatch on room page 0",
                "failed reason=error cause=checksum_mismatch error=KV checksum mismatch on room page 0",
                "queued retry prompt_tokens=3", "done reason=length");
        assertThat(retry.snapshot().failed()).isFalse();
        // the retry made it the most recent: the next new request evicts "b"
        timelines.begin("c", TimelineEvent.QUEUED, "");
        assertThat(timelines.rids()).containsExactly("a", "c");
    }

    @Test
    void entriesAfterTheEndDoNotReopenItButARetryDoes()
    {
        Timelines timelines = new Timelines(1);
        RequestTimeline routed = timelines.begin("r", TimelineEvent.RECEIVED, "path=/generate");
        routed.record(TimelineEvent.ROUTED, "status=502 error=transfer failed");
        // a server's answer the router records after the client had its own
        routed.record(TimelineEvent.RESPONSE, "from=prefill status=200");
        assertThat(routed.snapshot().ended()).isTrue();
        assertThat(routed.snapshot().failed()).isTrue();

        RequestTimeline retry = timelines.begin("r", TimelineEvent.RECEIVED, "path=/generate");
        assertThat(retry).isSameAs(routed);
        assertThat(retry.snapshot().ended()).as("the retry runs").isFalse();
        assertThat(retry.snapshot().failed()).isFalse();
        retry.record(TimelineEvent.ROUTED, "status=200 stream events=3");
        retry.record(TimelineEvent.RESPONSE, "from=prefill status=200");
        assertThat(retry.snapshot().ended()).isTrue();
        assertThat(retry.snapshot().failed()).isFalse();
    }

    @Test
    void entriesCarryWallClockAndMonotonicOffsetFromTheFirst()
    {
        TestClock clock = new TestClock();
        Timelines timelines = new Timelines(10, clock);
        RequestTimeline timeline = timelines.begin("r", TimelineEvent.QUEUED, "prompt_tokens=3");
        clock.advance(250);
        timeline.record(TimelineEvent.ADMITTED, "pages=1");
        clock.advance(1_000);
        timeline.ended(FinishReason.LENGTH, null, null);

        RequestTimeline.Snapshot snapshot = timeline.snapshot();
        assertThat(snapshot.startEpochMicros()).isEqualTo(1_700_000_000_000_000L);
        assertThat(snapshot.entries()).extracting(RequestTimeline.Entry::event)
                .containsExactly(TimelineEvent.QUEUED, TimelineEvent.ADMITTED, TimelineEvent.DONE);
        assertThat(snapshot.entries()).extracting(RequestTimeline.Entry::offsetNanos).containsExactly(0L, 250_000L, 1_250_000L);
        assertThat(snapshot.entries()).extracting(RequestTimeline.Entry::epochMicros)
                .containsExactly(1_700_000_000_000_000L, 1_700_000_000_000_250L, 1_700_000_000_001_250L);
        assertThat(snapshot.entries().getLast().detail()).isEqualTo("reason=length");
        assertThat(snapshot.ended()).isTrue();
    }

    @Test
    void aFailureRecordsItsCauseAndError()
    {
        RequestTimeline timeline = new Timelines(1).begin("r", TimelineEvent.QUEUED, "");
        timeline.ended(FinishReason.ERROR, FailureCause.CHECKSUM_MISMATCH, "KV checksum mismatch on room page 0");

        RequestTimeline.Entry last = timeline.snapshot().entries().getLast();
        assertThat(last.event()).isEqualTo(TimelineEvent.FAILED);
        assertThat(last.detail()).isEqualTo("reason=error cause=checksum_mismatch error=KV checksum mismatch on room page 0");
    }

    @Test
    void pastTheEntryCapOnlyTheTerminalEntryIsKeptAndTheRestAreCounted()
    {
        RequestTimeline timeline = new Timelines(1).begin("long", TimelineEvent.QUEUED, "");
        for (int i = 0; i < RequestTimeline.MAX_ENTRIES + 10; i++) {
            timeline.record(TimelineEvent.FORWARD_DONE, "chunk=" + i);
        }
        timeline.ended(FinishReason.LENGTH, null, null);

        RequestTimeline.Snapshot snapshot = timeline.snapshot();
        assertThat(snapshot.entries()).hasSize(RequestTimeline.MAX_ENTRIES + 1);
        assertThat(snapshot.dropped()).isEqualTo(11);
        assertThat(snapshot.entries().getLast().event()).isEqualTo(TimelineEvent.DONE);
        assertThat(snapshot.entries().get(RequestTimeline.MAX_ENTRIES - 1).detail()).isEqualTo("chunk=" + (RequestTimeline.MAX_ENTRIES - 2));
    }

    @Test
    void capacityZeroKeepsNothingAndTheBoundIsEnforced()
    {
        Timelines none = new Timelines(0);
        RequestTimeline timeline = none.begin("r", TimelineEvent.QUEUED, "");
        timeline.record(TimelineEvent.ADMITTED);

        assertThat(timeline).isSameAs(RequestTimeline.NONE);
        assertThat(RequestTimeline.NONE.snapshot().entries()).isEmpty();
        assertThat(none.rids()).isEmpty();
        assertThatThrownBy(() -> new Timelines(Timelines.MAX_REQUESTS + 1))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("0..100000").hasMessageContaining("handoff.debug.timeline-requests");
        assertThatThrownBy(() -> new Timelines(-1)).isInstanceOf(IllegalArgumentException.class);
    }

    @Test
    void concurrentWritersLoseNoEntryAndTheStoreStaysWithinItsBound()
            throws Exception
    {
        int threads = 8;
        int requestsEach = 200;
        Timelines timelines = new Timelines(50);
        RequestTimeline shared = timelines.begin("shared", TimelineEvent.QUEUED, "");
        CountDownLatch start = new CountDownLatch(1);
        List<Thread> writers = new ArrayList<>();
        for (int t = 0; t < threads; t++) {
            int id = t;
            writers.add(Thread.ofPlatform().start(() -> {
                try {
                    start.await();
                }
                catch (InterruptedException e) {
                    throw new AssertionError(e);
                }
                for (int i = 0; i < requestsEach; i++) {
                    RequestTimeline own = timelines.begin("w" + id + "-" + i, TimelineEvent.QUEUED, "");
                    own.record(TimelineEvent.ADMITTED);
                    timelines.of("w" + id + "-" + (i - 1)).record(TimelineEvent.FIRST_TOKEN);
                    if (i < 7) {
                        shared.record(TimelineEvent.PLAN_LANDED, "writer=" + id);
                    }
                }
            }));
        }
        start.countDown();
        for (Thread writer : writers) {
            writer.join();
        }

        assertThat(timelines.rids()).hasSize(50);
        for (String rid : timelines.rids()) {
            assertThat(timelines.find(rid)).isPresent();
            assertThat(timelines.find(rid).get().snapshot().entries()).extracting(RequestTimeline.Entry::event)
                    .startsWith(TimelineEvent.QUEUED, TimelineEvent.ADMITTED);
        }
        // "shared" was evicted long ago, but the writers holding it still recorded every entry: 1 + 8 x 7, under the cap
        assertThat(shared.snapshot().entries()).hasSize(1 + threads * 7);
        assertThat(shared.snapshot().dropped()).isZero();
    }
}
