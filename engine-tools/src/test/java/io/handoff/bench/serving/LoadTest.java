package io.handoff.bench.serving;

import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class LoadTest
{
    @Test
    void poissonArrivalsAreSeededIncreasingAndStartAtZero()
    {
        double[] a = new Load.Open(4, 7).arrivals(200);
        double[] b = new Load.Open(4, 7).arrivals(200);

        assertThat(a).isEqualTo(b);
        assertThat(a[0]).isZero();
        for (int i = 1; i < a.length; i++) {
            assertThat(a[i]).isGreaterThan(a[i - 1]);
        }
        assertThat(new Load.Open(4, 8).arrivals(200)).isNotEqualTo(a);
    }

    @Test
    void anInfiniteRateSendsEverythingAtOnce()
    {
        assertThat(new Load.Open(Load.parseRate("inf"), 1).arrivals(5)).containsOnly(0);
        assertThat(Load.parseRate("2.5")).isEqualTo(2.5);
    }

    @Test
    void badRatesAndConcurrenciesSayWhatIsAllowed()
    {
        assertThatThrownBy(() -> Load.parseRate("fast")).hasMessageContaining("--rate must be a positive number of requests per second or inf");
        assertThatThrownBy(() -> new Load.Open(0, 1)).hasMessageContaining("--rate must be a positive");
        assertThatThrownBy(() -> new Load.Closed(0)).hasMessage("--concurrency must be at least 1, was 0");
    }
}
