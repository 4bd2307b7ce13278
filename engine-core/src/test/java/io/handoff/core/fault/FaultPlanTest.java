package io.handoff.core.fault;

import io.handoff.core.fault.FaultPlan.Match;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatCode;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class FaultPlanTest
{
    private static final Duration TIMEOUT = Duration.ofSeconds(30);

    @Test
    void parkHoldsOnlyMatchingHitsUntilReleasedAndThenLetsEveryHitThrough()
            throws Exception
    {
        FaultPlan plan = new FaultPlan();
        FaultPlan.Gate gate = plan.park(FaultPoint.FORWARD_AFTER_LAYER, Match.is(3), Match.is(1));
        // other coordinates and other points pass straight through
        plan.hit(FaultPoint.FORWARD_AFTER_LAYER, 3, 0);
        plan.hit(FaultPoint.FORWARD_AFTER_LAYER, 2, 1);
        plan.hit(FaultPoint.SCHEDULER_BEFORE_STEP, 3, 1);
        assertThat(gate.hasParked()).isFalse();

        CompletableFuture<Void> parked = CompletableFuture.runAsync(() -> plan.hit(FaultPoint.FORWARD_AFTER_LAYER, 3, 1));
        gate.awaitParked(TIMEOUT);
        assertThat(gate.hasParked()).isTrue();
        assertThat(gate.parkedNow()).isEqualTo(1);
        assertThat(parked).isNotDone();

        gate.release();
        parked.get(TIMEOUT.toMillis(), TimeUnit.MILLISECONDS);
        assertThat(gate.parkedNow()).isZero();
        // released for good
        plan.hit(FaultPoint.FORWARD_AFTER_LAYER, 3, 1);
    }

    @Test
    void failThrowsForTheGivenNumberOfMatchingHitsOnly()
    {
        FaultPlan plan = new FaultPlan();
        plan.fail(FaultPoint.TRANSFER_AFTER_PAGE, Match.is(9), Match.ANY, 2);
        assertThatCode(() -> plan.hit(FaultPoint.TRANSFER_AFTER_PAGE, 8, 0)).doesNotThrowAnyException();
        assertThatThrownBy(() -> plan.hit(FaultPoint.TRANSFER_AFTER_PAGE, 9, 4))
                .isInstanceOf(InjectedFault.class)
                .hasMessage("injected fault at transfer: after page (9, 4)");
        assertThatThrownBy(() -> plan.hit(FaultPoint.TRANSFER_AFTER_PAGE, 9, 5)).isInstanceOf(InjectedFault.class);
        assertThatCode(() -> plan.hit(FaultPoint.TRANSFER_AFTER_PAGE, 9, 6)).doesNotThrowAnyException();
    }

    @Test
    void rulesApplyInTheOrderTheyWereAdded()
            throws Exception
    {
        FaultPlan plan = new FaultPlan();
        FaultPlan.Gate gate = plan.park(FaultPoint.PREFILL_BEFORE_POST, Match.ANY, Match.ANY);
        plan.fail(FaultPoint.PREFILL_BEFORE_POST, Match.ANY, Match.ANY, 1);
        CompletableFuture<Void> hit = CompletableFuture.runAsync(() -> plan.hit(FaultPoint.PREFILL_BEFORE_POST, 1, 1));
        gate.awaitParked(TIMEOUT);
        assertThat(hit).isNotDone();
        gate.release();
        assertThat(hit).failsWithin(TIMEOUT).withThrowableOfType(java.util.concurrent.ExecutionException.class)
                .withCauseInstanceOf(InjectedFault.class);
    }

    @Test
    void awaitParkedFailsLoudlyWhenNothingArrives()
    {
        FaultPlan plan = new FaultPlan();
        FaultPlan.Gate gate = plan.park(FaultPoint.TRANSFER_BEFORE_CHUNK, Match.ANY, Match.ANY);
        assertThatThrownBy(() -> gate.awaitParked(Duration.ofMillis(1)))
                .isInstanceOf(AssertionError.class)
                .hasMessage("nothing reached transfer: before reading chunk within PT0.001S");
    }

    @Test
    void zeroDelayAndTheEmptyInjectorChangeNothing()
    {
        FaultPlan plan = new FaultPlan();
        plan.delay(FaultPoint.TRANSFER_AFTER_PAGE, Match.ANY, Match.ANY, Duration.ZERO);
        assertThatCode(() -> plan.hit(FaultPoint.TRANSFER_AFTER_PAGE, 1, 2)).doesNotThrowAnyException();
        assertThatCode(() -> FaultInjector.NONE.hit(FaultPoint.FORWARD_AFTER_LAYER, 0, 0)).doesNotThrowAnyException();
        assertThatThrownBy(() -> plan.delay(FaultPoint.TRANSFER_AFTER_PAGE, Match.ANY, Match.ANY, null))
                .isInstanceOf(NullPointerException.class)
                .hasMessage("duration is null");
    }

    @Test
    void watchesSaysWhichCoordinatesARuleMatchesAndCountsNoHit()
    {
        FaultPlan plan = new FaultPlan();
        plan.fail(FaultPoint.TRANSFER_AFTER_PAGE, Match.ANY, Match.is(4), 1);

        assertThat(plan.watches(FaultPoint.TRANSFER_AFTER_PAGE, 9, 4)).isTrue();
        assertThat(plan.watches(FaultPoint.TRANSFER_AFTER_PAGE, 9, 3)).isFalse();
        assertThat(plan.watches(FaultPoint.TRANSFER_BEFORE_CHUNK, 9, 4)).isFalse();
        assertThat(FaultInjector.NONE.watches(FaultPoint.TRANSFER_AFTER_PAGE, 9, 4)).isFalse();
        // asking spent nothing: the one failure is still to come
        assertThatThrownBy(() -> plan.hit(FaultPoint.TRANSFER_AFTER_PAGE, 9, 4)).isInstanceOf(InjectedFault.class);
    }
}
