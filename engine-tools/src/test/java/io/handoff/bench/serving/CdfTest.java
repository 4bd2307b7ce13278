package io.handoff.bench.serving;

import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class CdfTest
{
    @Test
    void eachSampleInOrderWithTheFractionAtOrBelowIt()
    {
        Cdf cdf = Cdf.of(new double[] {3, 1, Double.NaN, 2, 2}, 100);

        assertThat(cdf.x()).containsExactly(1, 2, 2, 3);
        assertThat(cdf.y()).containsExactly(0.25, 0.5, 0.75, 1.0);
    }

    @Test
    void manySamplesAreThinnedToEvenlySpacedRanksKeepingBothEnds()
    {
        double[] samples = new double[101];
        for (int i = 0; i < samples.length; i++) {
            samples[i] = 100 - i;
        }

        Cdf cdf = Cdf.of(samples, 3);

        assertThat(cdf.x()).containsExactly(0, 50, 100);
        assertThat(cdf.y()).containsExactly(1 / 101.0, 51 / 101.0, 1.0);
    }

    @Test
    void noSamplesNoPoints()
    {
        assertThat(Cdf.of(new double[0], 10).x()).isEmpty();
        assertThatThrownBy(() -> Cdf.of(new double[] {1}, 1)).hasMessageContaining("at least 2");
    }
}
