package io.handoff.bench.serving;

import org.junit.jupiter.api.Test;

import java.util.List;
import java.util.Optional;
import java.util.OptionalDouble;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

class SideFiguresTest
{
    // TTFT 10, gaps 5 and 15, E2E 30: TPOT (30 - 10) / 2 = 10; 100 prompt tokens
    static final Sample FAST_START = new Sample(0, "r-0", 100, 200, new int[] {1, 2, 3}, 10, new double[] {5, 15}, 30, Optional.empty());
    // TTFT 20, gaps 10 and 10, E2E 40: TPOT 10; 50 prompt tokens
    static final Sample EVEN = new Sample(1, "r-1", 50, 200, new int[] {4, 5, 6}, 20, new double[] {10, 10}, 40, Optional.empty());

    static Sample failed(int index, int status, String reason)
    {
        return new Sample(index, "r-" + index, 10, status, new int[0], Double.NaN, new double[0], 5, Optional.of(reason));
    }

    private static final List<Sample> RUN = List.of(FAST_START, EVEN, failed(2, 503, "queue full"), failed(3, 503, "queue full"),
            failed(4, 0, "connection refused"));

    @Test
    void latenciesAreOverCompletedRequestsAndThroughputsOverTheSidesSeconds()
    {
        SideFigures f = SideFigures.of(RUN, 2.0, Slo.NONE);

        Distribution ttft = f.ttft().orElseThrow();
        assertThat(new double[] {ttft.mean(), ttft.p50(), ttft.p90(), ttft.p99()}).containsExactly(new double[] {15, 15, 19, 19.9}, within(1e-9));
        assertThat(f.tpot()).contains(new Distribution(10, 10, 10, 10));
        assertThat(f.e2e().orElseThrow().mean()).isEqualTo(35);
        // ITL is every gap of every completed request: 5, 10, 10, 15
        assertThat(f.itl().orElseThrow().mean()).isEqualTo(10);
        assertThat(f.itl().orElseThrow().p50()).isEqualTo(10);
        assertThat(f.requestThroughput()).isEqualTo(1.0);
        assertThat(f.outputTokenThroughput()).isEqualTo(3.0);
        assertThat(f.inputTokenThroughput()).isEqualTo(75.0);
        assertThat(f.completed()).isEqualTo(2);
        assertThat(f.failed()).isEqualTo(3);
        assertThat(f.goodput()).isEmpty();
    }

    @Test
    void everyFailureIsCountedWithItsStatusAndReason()
    {
        assertThat(SideFigures.of(RUN, 2.0, Slo.NONE).failures()).containsExactly(new SideFigures.Failure(503, "queue full", 2),
                new SideFigures.Failure(0, "connection refused", 1));
    }

    @Test
    void goodputCountsTheCompletedRequestsWithinEverySloGivenPerSecond()
    {
        assertThat(SideFigures.of(RUN, 2.0, slo(15.0, null, null)).goodput()).isEqualTo(OptionalDouble.of(0.5));
        // the ITL bound holds for every gap of a request: FAST_START's 15 ms gap misses 12
        assertThat(SideFigures.of(RUN, 2.0, slo(null, 12.0, null)).goodput()).isEqualTo(OptionalDouble.of(0.5));
        assertThat(SideFigures.of(RUN, 2.0, slo(25.0, 15.0, 45.0)).goodput()).isEqualTo(OptionalDouble.of(1.0));
        assertThat(SideFigures.of(RUN, 2.0, slo(25.0, null, 35.0)).goodput()).isEqualTo(OptionalDouble.of(0.5));
        assertThat(SideFigures.of(RUN, 2.0, slo(1.0, null, null)).goodput()).isEqualTo(OptionalDouble.of(0));
    }

    @Test
    void aSideWithNothingCompletedHasNoLatencies()
    {
        SideFigures f = SideFigures.of(List.of(failed(0, 502, "decode unreachable")), 1.0, Slo.NONE);

        assertThat(f.ttft()).isEmpty();
        assertThat(f.itl()).isEmpty();
        assertThat(f.requestThroughput()).isZero();
        assertThat(f.failed()).isEqualTo(1);
    }

    private static Slo slo(Double ttft, Double itl, Double e2e)
    {
        return new Slo(ttft == null ? OptionalDouble.empty() : OptionalDouble.of(ttft), itl == null ? OptionalDouble.empty() : OptionalDouble.of(itl),
                e2e == null ? OptionalDouble.empty() : OptionalDouble.of(e2e));
    }
}
