package io.handoff.router;

import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.SplittableRandom;
import java.util.stream.IntStream;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class BackoffTest
{
    private final Backoff backoff = new Backoff(Duration.ofMillis(50), Duration.ofSeconds(1), new SplittableRandom(3));

    @Test
    void theCeilingDoublesFromTheInitialPauseUpToTheMaximum()
    {
        assertThat(backoff.ceiling(1)).isEqualTo(Duration.ofMillis(50));
        assertThat(backoff.ceiling(2)).isEqualTo(Duration.ofMillis(100));
        assertThat(backoff.ceiling(3)).isEqualTo(Duration.ofMillis(200));
        assertThat(backoff.ceiling(5)).isEqualTo(Duration.ofMillis(800));
        assertThat(backoff.ceiling(6)).isEqualTo(Duration.ofSeconds(1));
        assertThat(backoff.ceiling(1000)).isEqualTo(Duration.ofSeconds(1));
    }

    @Test
    void eachPauseLiesBetweenHalfItsCeilingAndAllOfItAndTheyDiffer()
    {
        long distinct = IntStream.range(0, 200).mapToObj(i -> backoff.delay(2)).distinct().count();
        assertThat(distinct).as("jittered").isGreaterThan(100);
        for (int retry = 1; retry <= 8; retry++) {
            Duration ceiling = backoff.ceiling(retry);
            for (int i = 0; i < 200; i++) {
                Duration delay = backoff.delay(retry);
                assertThat(delay).isBetween(ceiling.dividedBy(2), ceiling);
            }
        }
    }

    @Test
    void theSameSeedGivesTheSamePauses()
    {
        Backoff again = new Backoff(Duration.ofMillis(50), Duration.ofSeconds(1), new SplittableRandom(3));
        Backoff other = new Backoff(Duration.ofMillis(50), Duration.ofSeconds(1), new SplittableRandom(3));
        for (int retry = 1; retry < 6; retry++) {
            assertThat(again.delay(retry)).isEqualTo(other.delay(retry));
        }
    }

    @Test
    void aZeroInitialPauseNeverWaits()
    {
        Backoff none = new Backoff(Duration.ZERO, Duration.ZERO, new SplittableRandom(1));
        assertThat(none.delay(1)).isZero();
        assertThat(none.delay(9)).isZero();
    }

    @Test
    void refusesAMaximumBelowTheInitialPause()
    {
        assertThatThrownBy(() -> new Backoff(Duration.ofSeconds(2), Duration.ofSeconds(1), new SplittableRandom(1)))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("initial PT2S, max PT1S");
    }
}
