package io.handoff.core.model;

import org.junit.jupiter.api.Test;

import java.util.stream.IntStream;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class SamplerTest
{
    private static final float[] LOGITS = {1f, 3f, 2.5f, 3f, -1f, 0f};

    @Test
    void greedyPicksTheLowestIdAmongEqualMaxima()
    {
        assertThat(Sampler.argmax(LOGITS)).isEqualTo(1);
        assertThat(Sampler.sample(LOGITS, SamplingParams.GREEDY, 0)).isEqualTo(1);
        assertThat(Sampler.argmax(new float[] {Float.NaN, 0f, 2f})).isEqualTo(2);
    }

    @Test
    void sampleDependsOnlyOnSeedAndTokenIndex()
    {
        SamplingParams params = new SamplingParams(1.5f, 0.95f, 42);
        int[] first = IntStream.range(0, 64).map(i -> Sampler.sample(LOGITS, params, i)).toArray();
        int[] again = IntStream.range(0, 64).map(i -> Sampler.sample(LOGITS.clone(), params, i)).toArray();
        int[] otherSeed = IntStream.range(0, 64).map(i -> Sampler.sample(LOGITS, new SamplingParams(1.5f, 0.95f, 43), i)).toArray();
        assertThat(again).isEqualTo(first);
        assertThat(otherSeed).isNotEqualTo(first);
        assertThat(IntStream.of(first).distinct().count()).isGreaterThan(2);
    }

    @Test
    void topPKeepsOnlyTheNucleus()
    {
        // probabilities at temperature 1: ids 1 and 3 ~0.33 each, id 2 ~0.20; the rest ~0.14 together
        SamplingParams nucleus = new SamplingParams(1f, 0.6f, 7);
        assertThat(IntStream.range(0, 200).map(i -> Sampler.sample(LOGITS, nucleus, i)).distinct().sorted().toArray())
                .containsExactly(1, 3);
        SamplingParams tiny = new SamplingParams(1f, 0.01f, 7);
        assertThat(IntStream.range(0, 50).map(i -> Sampler.sample(LOGITS, tiny, i)).distinct().toArray()).containsExactly(1);
    }

    @Test
    void samplingFollowsTheDistribution()
    {
        float[] logits = {0f, (float) Math.log(3)};
        SamplingParams params = new SamplingParams(1f, 1f, 99);
        long ones = IntStream.range(0, 4000).filter(i -> Sampler.sample(logits, params, i) == 1).count();
        assertThat(ones).isBetween(2800L, 3200L);
    }

    @Test
    void rejectsMeaninglessParameters()
    {
        assertThatThrownBy(() -> new SamplingParams(-1f, 1f, 0)).hasMessageContaining("temperature must be finite and >= 0, was -1.0");
        assertThatThrownBy(() -> new SamplingParams(1f, 0f, 0)).hasMessageContaining("top_p must be in (0, 1], was 0.0");
    }
}
