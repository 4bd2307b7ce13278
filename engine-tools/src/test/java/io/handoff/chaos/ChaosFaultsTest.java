package io.handoff.chaos;

import io.handoff.core.fault.FaultSpec;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class ChaosFaultsTest
{
    @Test
    void theFailRateIsSplitInThreeSeededPartsAndEveryRuleParses()
    {
        ChaosFaults faults = ChaosFaults.of(0.06, 7, Duration.ofMillis(150));

        assertThat(faults.prefillRules()).containsExactly(
                "transfer-before-chunk rate=0.020000 seed=7 fail",
                "transfer-before-chunk rate=0.020000 seed=8 delay=150ms");
        assertThat(faults.decodeRules()).containsExactly("decode-before-verify rate=0.020000 seed=9 corrupt");
        // what the servers will do with them: parse, or refuse to start
        FaultSpec.parse(faults.prefillRules());
        FaultSpec.parse(faults.decodeRules());
    }

    @Test
    void noFailRateMeansNoRulesAndNoArgument()
    {
        ChaosFaults faults = ChaosFaults.of(0, 7, Duration.ofMillis(150));
        assertThat(faults.prefillRules()).isEmpty();
        assertThat(faults.decodeRules()).isEmpty();
        assertThat(ChaosFaults.argument(List.of())).isEmpty();
    }

    @Test
    void theArgumentIsAHoconListOfTheRules()
    {
        assertThat(ChaosFaults.argument(List.of("a=1 fail", "b=2 park")))
                .containsExactly("-Dhandoff.debug.faults=[\"a=1 fail\",\"b=2 park\"]");
    }

    @Test
    void aRateOutsideZeroToOneIsRefused()
    {
        assertThatThrownBy(() -> ChaosFaults.of(1.5, 0, Duration.ofMillis(1)))
                .hasMessage("--fail-rate must be in [0, 1], got 1.5");
    }
}
