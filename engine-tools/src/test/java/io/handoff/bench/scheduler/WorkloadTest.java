package io.handoff.bench.scheduler;

import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class WorkloadTest
{
    @Test
    void aPromptWithNoTokenOfItsOwnIsRefused()
    {
        assertThatThrownBy(() -> new Workload(4, 16, 16, 4, 1)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("prompt 16 with shared prefix 16");
    }

    @Test
    void aRunsFiguresArePerStep()
    {
        Workload.Run run = new Workload.Run(0.5, 1000, 4000, 800, 600);

        assertThat(run.microsPerStep()).isEqualTo(500.0);
        assertThat(run.tokensPerStep()).isEqualTo(4.0);
        assertThat(run.cachedPromptFraction()).isEqualTo(0.75);
    }
}
