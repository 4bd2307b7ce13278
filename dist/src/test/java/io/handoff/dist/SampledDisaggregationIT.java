package io.handoff.dist;

import io.handoff.core.disagg.Disaggregation;
import io.handoff.core.fault.FaultPlan;
import io.handoff.core.model.SamplingParams;
import io.handoff.core.scheduler.GenerateResult;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

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
    @ParameterizedTest(name = "temperature {0}, top_k {2}, repetition {4}, min_new_tokens {7}")
    @CsvSource({
            // what clients send (and the acceptance check uses)
            "0.8, 0.9, 20, 0.05, 1.1, 0.2, 0.1, 4, 7",
            // penalties at their limits, hot, and EOS held back for the whole output: the rules surely change the tokens
            "1.5, 0.95, 40, 0.01, 2.0, 2.0, 2.0, 12, 7"})
    void penalizedSeededSamplingGivesTheColocatedTokens(float temperature, float topP, int topK, float minP, float repetition,
            float frequency, float presence, int minNewTokens, long seed)
            throws Exception
    {
        SamplingParams rules = new SamplingParams(temperature, topP, topK, minP, repetition, frequency, presence, minNewTokens, seed);
        int[] reference = colocated(rules);
        assertThat(reference).as("min_new_tokens holds EOS back").hasSizeGreaterThanOrEqualTo(minNewTokens);
        assertThat(reference).as("the rules change the tokens").isNotEqualTo(colocated(new SamplingParams(temperature, topP, seed)));
        try (InProcessPd pd = new InProcessPd(Map.of(), new FaultPlan(), Disaggregation.Options.DEFAULT)) {
            GenerateResult result = await(pd.start(1, rules));

            assertThat(result.error()).isEmpty();
            assertThat(result.outputIds()).isEqualTo(reference);
        }
    }
}
