package io.handoff.dist;

import io.handoff.core.disagg.Disaggregation;
import io.handoff.core.fault.FaultPlan;
import io.handoff.core.model.SamplingParams;
import io.handoff.core.scheduler.GenerateResult;
import org.junit.jupiter.api.Test;

import java.util.Map;

import static io.handoff.dist.InProcessPd.await;
import static io.handoff.dist.InProcessPd.colocated;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * Seeded sampling with every rule of {@link SamplingParams} on is the same disaggregated as colocated: the prefill
 * samples the first token by the same rules (end ids held back, no history), and the decode samples the rest with
 * that token as the start of the history it penalizes.
 */
class SampledDisaggregationIT
{
    private static final SamplingParams EVERY_RULE = new SamplingParams(0.8f, 0.9f, 20, 0.05f, 1.1f, 0.2f, 0.1f, 4, 7);

    @Test
    void penalizedSeededSamplingGivesTheColocatedTokens()
            throws Exception
    {
        int[] reference = colocated(EVERY_RULE);
        assertThat(reference).as("min_new_tokens holds EOS back").hasSizeGreaterThanOrEqualTo(4);
        assertThat(reference).as("the rules change the tokens").isNotEqualTo(colocated(new SamplingParams(0.8f, 0.9f, 7)));
        try (InProcessPd pd = new InProcessPd(Map.of(), new FaultPlan(), Disaggregation.Options.DEFAULT)) {
            GenerateResult result = await(pd.start(1, EVERY_RULE));

            assertThat(result.error()).isEmpty();
            assertThat(result.outputIds()).isEqualTo(reference);
        }
    }
}
