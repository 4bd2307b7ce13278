package io.handoff.chaos;

import org.junit.jupiter.api.Test;

import java.util.EnumMap;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;

class AbortPlanTest
{
    @Test
    void theSameSeedAndIndexGiveTheSamePlanAndAnotherSeedOtherPlans()
    {
        int differ = 0;
        for (int index = 0; index < 500; index++) {
            assertThat(AbortPlan.draw(3, index, 0.5, 8)).isEqualTo(AbortPlan.draw(3, index, 0.5, 8));
            if (!AbortPlan.draw(3, index, 0.5, 8).equals(AbortPlan.draw(4, index, 0.5, 8))) {
                differ++;
            }
        }
        assertThat(differ).isGreaterThan(100);
    }

    @Test
    void aboutTheAbortRateOfRequestsIsAbortedSpreadOverTheThreePhases()
    {
        Map<AbortPlan.Phase, Integer> phases = new EnumMap<>(AbortPlan.Phase.class);
        for (int index = 0; index < 10_000; index++) {
            AbortPlan plan = AbortPlan.draw(1, index, 0.2, 8);
            phases.merge(plan.phase(), 1, Integer::sum);
            if (plan.phase() == AbortPlan.Phase.BEFORE_BOOTSTRAP) {
                assertThat(plan.method()).isEqualTo(AbortPlan.Method.ABORT_REQUEST);
            }
            if (plan.phase() == AbortPlan.Phase.DURING_DECODE) {
                assertThat(plan.afterTokens()).isBetween(1, 7);
            }
        }
        assertThat(phases.get(AbortPlan.Phase.NONE)).isBetween(7_700, 8_300);
        for (AbortPlan.Phase phase : new AbortPlan.Phase[] {AbortPlan.Phase.BEFORE_BOOTSTRAP, AbortPlan.Phase.DURING_TRANSFER, AbortPlan.Phase.DURING_DECODE}) {
            assertThat(phases.get(phase)).as(phase.label()).isBetween(550, 780);
        }
    }

    @Test
    void rateZeroAbortsNothingAndRateOneEverything()
    {
        for (int index = 0; index < 200; index++) {
            assertThat(AbortPlan.draw(9, index, 0, 8).aborts()).isFalse();
            assertThat(AbortPlan.draw(9, index, 1, 8).aborts()).isTrue();
        }
    }
}
