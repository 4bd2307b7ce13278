package io.handoff.router;

import org.junit.jupiter.api.Test;

import java.time.Duration;

import static org.assertj.core.api.Assertions.assertThat;

class CircuitBreakerTest
{
    private long now = 1_000;
    private final CircuitBreaker breaker = new CircuitBreaker(3, Duration.ofSeconds(10), () -> now);

    private void advance(Duration duration)
    {
        now += duration.toNanos();
    }

    @Test
    void failuresInARowOpenItAndASuccessBetweenThemDoesNot()
    {
        breaker.failed();
        breaker.failed();
        breaker.succeeded();
        breaker.failed();
        breaker.failed();
        assertThat(breaker.state()).isEqualTo(CircuitBreaker.State.CLOSED);
        assertThat(breaker.available()).isTrue();
        breaker.failed();
        assertThat(breaker.state()).isEqualTo(CircuitBreaker.State.OPEN);
        assertThat(breaker.available()).isFalse();
        assertThat(breaker.describe()).isEqualTo("open (3 failures in a row)");
    }

    @Test
    void afterItsOpenDurationOneTrialGoesAndItsSuccessCloses()
    {
        open();
        advance(Duration.ofSeconds(9));
        assertThat(breaker.available()).isFalse();
        advance(Duration.ofSeconds(1));
        assertThat(breaker.state()).isEqualTo(CircuitBreaker.State.HALF_OPEN);
        assertThat(breaker.available()).isTrue();
        breaker.chosen();
        assertThat(breaker.available()).as("only one trial at a time").isFalse();
        breaker.succeeded();
        assertThat(breaker.state()).isEqualTo(CircuitBreaker.State.CLOSED);
        assertThat(breaker.available()).isTrue();
        assertThat(breaker.describe()).isEqualTo("closed");
    }

    @Test
    void aFailedTrialOpensItForAnotherDuration()
    {
        open();
        advance(Duration.ofSeconds(10));
        assertThat(breaker.available()).isTrue();
        breaker.chosen();
        breaker.failed();
        assertThat(breaker.state()).isEqualTo(CircuitBreaker.State.OPEN);
        advance(Duration.ofSeconds(5));
        assertThat(breaker.available()).isFalse();
        advance(Duration.ofSeconds(5));
        assertThat(breaker.available()).isTrue();
    }

    @Test
    void aTrialThatNeverReportsLetsAnotherGoAfterTheDuration()
    {
        open();
        advance(Duration.ofSeconds(10));
        breaker.chosen();
        advance(Duration.ofSeconds(9));
        assertThat(breaker.available()).isFalse();
        advance(Duration.ofSeconds(1));
        assertThat(breaker.available()).isTrue();
        assertThat(breaker.state()).isEqualTo(CircuitBreaker.State.HALF_OPEN);
    }

    @Test
    void aThresholdOfZeroNeverOpens()
    {
        CircuitBreaker never = new CircuitBreaker(0, Duration.ofSeconds(1), () -> now);
        for (int i = 0; i < 100; i++) {
            never.failed();
        }
        assertThat(never.available()).isTrue();
        assertThat(never.state()).isEqualTo(CircuitBreaker.State.CLOSED);
    }

    private void open()
    {
        for (int i = 0; i < 3; i++) {
            breaker.failed();
        }
        assertThat(breaker.state()).isEqualTo(CircuitBreaker.State.OPEN);
    }
}
