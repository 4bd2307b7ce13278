package io.handoff.router;

import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class RetryPlanTest
{
    private final List<Duration> slept = new ArrayList<>();

    @Test
    void eachRetryWaitsAJitteredDoublingPauseWithinItsBounds()
            throws InterruptedException
    {
        RetryPlan plan = new RetryPlan(new RouterConfig.Retry(4, Duration.ofMillis(100), Duration.ofMillis(300)), new SplittableRandom(5), slept::add);
        assertThat(plan.last(3)).isFalse();
        assertThat(plan.last(4)).isTrue();
        for (int attempt = 2; attempt <= 4; attempt++) {
            plan.pauseBefore(attempt);
        }
        assertThat(slept).hasSize(3);
        assertThat(slept.get(0)).isBetween(Duration.ofMillis(50), Duration.ofMillis(100));
        assertThat(slept.get(1)).isBetween(Duration.ofMillis(100), Duration.ofMillis(200));
        assertThat(slept.get(2)).isBetween(Duration.ofMillis(150), Duration.ofMillis(300));
    }

    @Test
    void noPauseIsSleptWhenTheBackoffIsZero()
            throws InterruptedException
    {
        RetryPlan plan = new RetryPlan(new RouterConfig.Retry(3, Duration.ZERO, Duration.ZERO), new SplittableRandom(5), slept::add);
        plan.pauseBefore(2);
        plan.pauseBefore(3);
        assertThat(slept).isEmpty();
    }

    @Test
    void retriesRunUnderNumberedRids()
    {
        assertThat(RetryPlan.rid("r", 1)).isEqualTo("r");
        assertThat(RetryPlan.rid("r", 2)).isEqualTo("r-retry1");
        assertThat(RetryPlan.rid("r", 3)).isEqualTo("r-retry2");
    }

    @Test
    void aPlanWithoutAttemptsIsRefusedNamingTheKey()
    {
        assertThatThrownBy(() -> new RouterConfig.Retry(0, Duration.ZERO, Duration.ZERO)).hasMessageContaining("handoff.router.retry.max-attempts");
    }
}
