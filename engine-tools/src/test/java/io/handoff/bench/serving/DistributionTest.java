package io.handoff.bench.serving;

import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

class DistributionTest
{
    @Test
    void meanAndPercentilesInterpolateBetweenTheNearestRanks()
    {
        // 1..10 in any order: ranks 0..9; p50 at rank 4.5, p90 at 8.1, p99 at 8.91
        Distribution d = Distribution.of(new double[] {7, 3, 10, 1, 5, 9, 2, 8, 4, 6}).orElseThrow();

        assertThat(d.mean()).isEqualTo(5.5);
        assertThat(d.p50()).isEqualTo(5.5);
        assertThat(d.p90()).isCloseTo(9.1, within(1e-9));
        assertThat(d.p99()).isCloseTo(9.91, within(1e-9));
    }

    @Test
    void nanSamplesAreLeftOutAndNoSamplesGiveNothing()
    {
        assertThat(Distribution.of(new double[] {Double.NaN, 4, Double.NaN})).contains(new Distribution(4, 4, 4, 4));
        assertThat(Distribution.of(new double[] {Double.NaN})).isEmpty();
        assertThat(Distribution.of(new double[0])).isEmpty();
    }
}
