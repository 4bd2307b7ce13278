package io.handoff.bench.serving;

import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;

import static org.assertj.core.api.Assertions.assertThat;

class InterleavedRunTest
{
    @Test
    void blocksCoverEveryRequestAndTheFirstSideAlternates()
    {
        assertThat(InterleavedRun.blockStarts(10, 4)).containsExactly(0, 4, 8, 10);
        assertThat(InterleavedRun.blockStarts(8, 4)).containsExactly(0, 4, 8);
        assertThat(InterleavedRun.order(0, 2)).containsExactly(0, 1);
        assertThat(InterleavedRun.order(1, 2)).containsExactly(1, 0);
        assertThat(InterleavedRun.order(2, 2)).containsExactly(0, 1);
        assertThat(InterleavedRun.order(1, 1)).containsExactly(0);
    }

    @Test
    void bothUrlsGetTheSameRequestsInAlternatingBlocks()
            throws Exception
    {
        List<BenchRequest> requests = Dataset.RANDOM.requests(6, 3, 100, 2048, 3);
        AtomicInteger ended = new AtomicInteger();
        List<String> log = new CopyOnWriteArrayList<>();
        try (StubServer a = new StubServer(200, log); StubServer b = new StubServer(200, log);
                ServingClient ca = new ServingClient(a.url(), Duration.ofMinutes(1)); ServingClient cb = new ServingClient(b.url(), Duration.ofMinutes(1))) {
            List<InterleavedRun.SideRun> runs = new InterleavedRun(List.of(ca, cb), List.of("a", "b"))
                    .run(requests, new Load.Closed(1), 2, sample -> ended.incrementAndGet());

            // blocks of 2, one request in flight: A B, B A, A B
            assertThat(log).containsExactly("a-0", "a-1", "b-0", "b-1", "b-2", "b-3", "a-2", "a-3", "a-4", "a-5", "b-4", "b-5");
            // the same bodies on both sides, bar the rid
            for (int i = 0; i < 6; i++) {
                assertThat(a.bodies.get(i).get("input_ids")).isEqualTo(b.bodies.get(i).get("input_ids"));
            }
            assertThat(ended).hasValue(12);
            for (InterleavedRun.SideRun run : runs) {
                assertThat(run.samples()).extracting(Sample::index).containsExactly(0, 1, 2, 3, 4, 5);
                assertThat(run.samples()).allMatch(Sample::completed);
                assertThat(run.seconds()).isPositive();
            }
        }
    }

    @Test
    void anOpenLoopSendsEveryRequest()
            throws Exception
    {
        List<BenchRequest> requests = Dataset.RANDOM.requests(5, 3, 100, 2048, 2);
        try (StubServer a = new StubServer(200); ServingClient ca = new ServingClient(a.url(), Duration.ofMinutes(1))) {
            List<InterleavedRun.SideRun> runs = new InterleavedRun(List.of(ca), List.of("a")).run(requests, new Load.Open(Double.POSITIVE_INFINITY, 1), 5,
                    sample -> {});

            assertThat(a.rids()).containsExactlyInAnyOrder("a-0", "a-1", "a-2", "a-3", "a-4");
            assertThat(runs.getFirst().samples()).allMatch(Sample::completed);
        }
    }
}
