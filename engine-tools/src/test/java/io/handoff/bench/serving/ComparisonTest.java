package io.handoff.bench.serving;

import org.junit.jupiter.api.Test;

import java.util.List;
import java.util.Optional;
import java.util.OptionalDouble;

import static org.assertj.core.api.Assertions.assertThat;

class ComparisonTest
{
    private static Sample ok(int index, double ttft, double e2e, int... ids)
    {
        return new Sample(index, "r-" + index, 10, 200, ids, ttft, new double[] {e2e - ttft}, e2e, Optional.empty());
    }

    @Test
    void ratiosAreUrlOverCompareUrlAndOutputsAreComparedTokenForToken()
    {
        List<Sample> url = List.of(ok(0, 20, 40, 1, 2), ok(1, 40, 80, 3, 4), ok(2, 20, 40, 5, 6), SideFiguresTest.failed(3, 502, "x"));
        List<Sample> reference = List.of(ok(0, 10, 20, 1, 2), ok(1, 20, 40, 3, 9), ok(2, 10, 20, 5, 6), ok(3, 10, 20, 7, 8));
        SideFigures a = SideFigures.of(url, 2.0, Slo.NONE);
        SideFigures b = SideFigures.of(reference, 1.0, Slo.NONE);

        Comparison c = Comparison.of(a, b, url, reference);

        assertThat(c.ratios().get("ttft_p50")).isEqualTo(OptionalDouble.of(2.0));
        assertThat(c.ratios().get("e2e_p50")).isEqualTo(OptionalDouble.of(2.0));
        assertThat(c.ratios().get("itl_p50")).isEqualTo(OptionalDouble.of(2.0));
        // 3 requests in 2 s against 4 in 1 s
        assertThat(c.ratios().get("request_throughput")).isEqualTo(OptionalDouble.of(0.375));
        assertThat(c.compared()).isEqualTo(3);
        assertThat(c.outputsEqual()).isEqualTo(2);
        assertThat(c.mismatches()).containsExactly(1);
    }

    @Test
    void aFigureOneSideLacksHasNoRatio()
    {
        List<Sample> none = List.of(SideFiguresTest.failed(0, 503, "down"));
        List<Sample> one = List.of(ok(0, 10, 20, 1, 2));

        Comparison c = Comparison.of(SideFigures.of(one, 1, Slo.NONE), SideFigures.of(none, 1, Slo.NONE), one, none);

        assertThat(c.ratios().get("ttft_p50")).isEmpty();
        assertThat(c.ratios().get("request_throughput")).isEmpty();
        assertThat(c.compared()).isZero();
    }
}
