package io.handoff.demo;

import org.junit.jupiter.api.Test;

import java.util.stream.IntStream;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.within;

class PercentilesTest
{
    @Test
    void interpolatesBetweenNearestRanksLikeNumpy()
    {
        // numpy.percentile(range(1, 101), [50, 99]) == [50.5, 99.01]
        double[] samples = IntStream.rangeClosed(1, 100).asDoubleStream().toArray();
        Percentiles percentiles = Percentiles.of(samples).orElseThrow();
        assertThat(percentiles.p50()).isCloseTo(50.5, within(1e-9));
        assertThat(percentiles.p99()).isCloseTo(99.01, within(1e-9));
    }

    @Test
    void orderOfSamplesDoesNotMatter()
    {
        assertThat(Percentiles.of(new double[] {9, 1, 5, 3, 7})).isEqualTo(Percentiles.of(new double[] {1, 3, 5, 7, 9}));
        assertThat(Percentiles.of(new double[] {9, 1, 5, 3, 7}).orElseThrow().p50()).isEqualTo(5);
    }

    @Test
    void oneSampleIsEveryPercentile()
    {
        assertThat(Percentiles.of(new double[] {4.25})).contains(new Percentiles(4.25, 4.25));
    }

    @Test
    void extremesAreTheMinimumAndMaximum()
    {
        double[] sorted = {2, 4, 8};
        assertThat(Percentiles.percentile(sorted, 0)).isEqualTo(2);
        assertThat(Percentiles.percentile(sorted, 100)).isEqualTo(8);
        assertThat(Percentiles.percentile(sorted, 75)).isEqualTo(6);
    }

    @Test
    void noSamplesNoPercentiles()
    {
        assertThat(Percentiles.of(new double[0])).isEmpty();
        assertThatThrownBy(() -> Percentiles.percentile(new double[] {1}, 101)).hasMessageContaining("0..100");
    }

    @Test
    void doesNotReorderTheCallersArray()
    {
        double[] samples = {3, 1, 2};
        Percentiles.of(samples);
        assertThat(samples).containsExactly(3, 1, 2);
    }
}
