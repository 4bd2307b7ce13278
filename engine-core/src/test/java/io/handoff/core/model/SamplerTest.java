package io.handoff.core.model;

import org.junit.jupiter.api.Test;

import java.util.Arrays;
import java.util.Set;
import java.util.SplittableRandom;
import java.util.stream.IntStream;
import java.util.stream.LongStream;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class SamplerTest
{
    // at temperature 1, relative to the most likely: ids 1 and 3 1.0, id 2 0.61, id 0 0.14, id 5 0.05, id 4 0.02
    private static final float[] LOGITS = {1f, 3f, 2.5f, 3f, -1f, 0f};
    private static final SamplingContext FIRST = SamplingContext.first(Set.of());

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
    void everyRuleTogetherDependsOnlyOnSeedTokenIndexAndHistory()
    {
        SamplingParams params = rules(1.2f, 0.9f, 4, 0.05f, 1.1f, 0.2f, 0.1f, 3, 7);
        int[] outputs = {1, 3, 1, 2, 5, 0, 1, 3};
        int[] first = IntStream.range(0, 8).map(i -> Sampler.sample(LOGITS, params, new SamplingContext(outputs, i, Set.of(3)))).toArray();
        int[] again = IntStream.range(0, 8).map(i -> Sampler.sample(LOGITS.clone(), params,
                new SamplingContext(Arrays.copyOf(outputs, i), i, Set.of(3)))).toArray();
        assertThat(again).isEqualTo(first);
    }

    @Test
    void plainNucleusSamplingIsExactlyWhatItWasBeforeTheOtherRules()
    {
        SplittableRandom random = new SplittableRandom(3);
        for (int trial = 0; trial < 40; trial++) {
            // a vocabulary with repeated logits, so the tie order matters too; nuclei small and large (past the ranking's heap)
            float[] logits = new float[50 + random.nextInt(1500)];
            for (int i = 0; i < logits.length; i++) {
                logits[i] = random.nextInt(40) / 4f - 5f;
            }
            float topP = trial % 4 == 0 ? 1f : 0.05f + random.nextInt(20) / 21f;
            SamplingParams params = new SamplingParams(0.2f + random.nextInt(20) / 10f, topP, random.nextLong());
            for (int index = 0; index < 10; index++) {
                assertThat(Sampler.sample(logits, params, new SamplingContext(new int[index], index, Set.of(1, 2))))
                        .as("trial %d, token %d", trial, index).isEqualTo(plainNucleus(logits, params, index));
            }
        }
    }

    @Test
    void topPKeepsOnlyTheNucleus()
    {
        SamplingParams nucleus = new SamplingParams(1f, 0.6f, 7);
        assertThat(draws(LOGITS, nucleus, 200)).containsExactly(1, 3);
        SamplingParams tiny = new SamplingParams(1f, 0.01f, 7);
        assertThat(draws(LOGITS, tiny, 50)).containsExactly(1);
    }

    @Test
    void topKOneIsGreedyForEverySeed()
    {
        SplittableRandom random = new SplittableRandom(11);
        float[] logits = new float[1000];
        for (int i = 0; i < logits.length; i++) {
            logits[i] = (float) random.nextGaussian();
        }
        logits[613] = logits[Sampler.argmax(logits)];
        for (long seed = 0; seed < 200; seed++) {
            SamplingParams topOne = rules(2f, 1f, 1, 0f, 1f, 0f, 0f, 0, seed);
            assertThat(Sampler.sample(logits, topOne, (int) seed)).isEqualTo(Sampler.argmax(logits));
            assertThat(Sampler.sample(LOGITS, topOne, (int) seed)).isEqualTo(1);
        }
    }

    @Test
    void topKRestrictsDrawsToTheKMostLikely()
    {
        // hot enough that every token would be drawn without top-k
        assertThat(draws(LOGITS, rules(8f, 1f, -1, 0f, 1f, 0f, 0f, 0, 5), 400)).containsExactly(0, 1, 2, 3, 4, 5);
        assertThat(draws(LOGITS, rules(8f, 1f, 2, 0f, 1f, 0f, 0f, 0, 5), 400)).containsExactly(1, 3);
        assertThat(draws(LOGITS, rules(8f, 1f, 3, 0f, 1f, 0f, 0f, 0, 5), 400)).containsExactly(1, 2, 3);
        assertThat(draws(LOGITS, rules(8f, 1f, 4, 0f, 1f, 0f, 0f, 0, 5), 400)).containsExactly(0, 1, 2, 3);
    }

    @Test
    void topKOfTheWholeVocabularyChangesNothing()
    {
        SamplingParams all = rules(1.5f, 0.9f, -1, 0f, 1f, 0f, 0f, 0, 9);
        SamplingParams vocab = rules(1.5f, 0.9f, LOGITS.length, 0f, 1f, 0f, 0f, 0, 9);
        SamplingParams more = rules(1.5f, 0.9f, 1000, 0f, 1f, 0f, 0f, 0, 9);
        int[] reference = IntStream.range(0, 300).map(i -> Sampler.sample(LOGITS, all, i)).toArray();
        assertThat(IntStream.range(0, 300).map(i -> Sampler.sample(LOGITS, vocab, i)).toArray()).isEqualTo(reference);
        assertThat(IntStream.range(0, 300).map(i -> Sampler.sample(LOGITS, more, i)).toArray()).isEqualTo(reference);
    }

    @Test
    void topPIsMeasuredAgainstTheWholeDistributionNotTheTopK()
    {
        // ids 1 and 3 hold 0.712 of the whole distribution, but 0.768 of the top 3: top_p 0.74 with top_k 3 still needs id 2
        assertThat(draws(LOGITS, rules(1f, 0.74f, 3, 0f, 1f, 0f, 0f, 0, 7), 200)).containsExactly(1, 2, 3);
        assertThat(draws(LOGITS, rules(1f, 0.7f, 3, 0f, 1f, 0f, 0f, 0, 7), 200)).containsExactly(1, 3);
        // and top_k cuts what the nucleus would keep
        assertThat(draws(LOGITS, rules(1f, 0.74f, 2, 0f, 1f, 0f, 0f, 0, 7), 200)).containsExactly(1, 3);
    }

    @Test
    void minPKeepsTokensAtLeastThatFractionOfTheMostLikely()
    {
        // relative probabilities: 1, 1, e^-0.5 = 0.607, e^-2 = 0.135, e^-3 = 0.050, e^-4 = 0.018
        assertThat(draws(LOGITS, rules(1f, 1f, -1, 0.6f, 1f, 0f, 0f, 0, 3), 400)).containsExactly(1, 2, 3);
        assertThat(draws(LOGITS, rules(1f, 1f, -1, 0.61f, 1f, 0f, 0f, 0, 3), 400)).containsExactly(1, 3);
        assertThat(draws(LOGITS, rules(1f, 1f, -1, 0.1f, 1f, 0f, 0f, 0, 3), 400)).containsExactly(0, 1, 2, 3);
        assertThat(draws(LOGITS, rules(1f, 1f, -1, 0.04f, 1f, 0f, 0f, 0, 3), 400)).containsExactly(0, 1, 2, 3, 5);
        assertThat(draws(LOGITS, rules(1f, 1f, -1, 1f, 1f, 0f, 0f, 0, 3), 400)).containsExactly(1, 3);
        // after temperature: at 2 the ratios are square roots, so id 0 (e^-1 = 0.37) passes 0.3
        assertThat(draws(LOGITS, rules(2f, 1f, -1, 0.3f, 1f, 0f, 0f, 0, 3), 400)).containsExactly(0, 1, 2, 3);
    }

    @Test
    void penaltiesAdjustEachDistinctEarlierTokenExactlyAsSpecified()
    {
        // earlier outputs: 3 twice, 1, 4 and 5 once; the 2 at index 5 is the token being sampled, not history
        int[] outputs = {3, 1, 4, 3, 5, 2};
        SamplingContext context = new SamplingContext(outputs, 5, Set.of());
        float[] logits = LOGITS.clone();

        assertThat(adjusted(logits, 2f, 0f, 0f, context)).containsExactly(1f, 1.5f, 2.5f, 1.5f, -2f, 0f);
        assertThat(adjusted(logits, 1f, 0.25f, 0f, context)).containsExactly(1f, 2.75f, 2.5f, 2.5f, -1.25f, -0.25f);
        assertThat(adjusted(logits, 1f, 0f, 0.5f, context)).containsExactly(1f, 2.5f, 2.5f, 2.5f, -1.5f, -0.5f);
        assertThat(adjusted(logits, 1f, -0.5f, 0f, context)).containsExactly(1f, 3.5f, 2.5f, 4f, -0.5f, 0.5f);
        // repetition, then frequency, then presence
        assertThat(adjusted(logits, 2f, 0.25f, 0.5f, context)).containsExactly(1f, 0.75f, 2.5f, 0.5f, -2.75f, -0.75f);
        assertThat(logits).as("the caller's logits are left alone").containsExactly(LOGITS);
    }

    @Test
    void penaltiesChangeWhatGreedyPicks()
    {
        SamplingParams presence = rules(0f, 1f, -1, 0f, 1f, 0f, 0.6f, 0, 0);
        assertThat(Sampler.sample(LOGITS, presence, new SamplingContext(new int[] {1}, 1, Set.of()))).isEqualTo(3);
        assertThat(Sampler.sample(LOGITS, presence, new SamplingContext(new int[] {1, 3}, 2, Set.of()))).isEqualTo(2);
        // the first token has no history: nothing to penalize
        assertThat(Sampler.sample(LOGITS, presence, FIRST)).isEqualTo(1);
    }

    @Test
    void noRuleAppliesWithoutCopyingTheLogits()
    {
        SamplingParams penalized = rules(1f, 1f, -1, 0f, 1.5f, 0.5f, 0.5f, 2, 0);
        assertThat(Sampler.adjustedLogits(LOGITS, SamplingParams.GREEDY, new SamplingContext(new int[] {1, 3}, 2, Set.of(1)))).isSameAs(LOGITS);
        // index 0: no history to penalize, and no end ids given
        assertThat(Sampler.adjustedLogits(LOGITS, penalized, FIRST)).isSameAs(LOGITS);
    }

    @Test
    void minNewTokensSuppressesEndIdsUntilReached()
    {
        SamplingParams atLeastTwo = rules(0f, 1f, -1, 0f, 1f, 0f, 0f, 2, 0);
        int[] outputs = new int[8];
        Set<Integer> ends = Set.of(1, 3, 300);
        assertThat(Sampler.sample(LOGITS, atLeastTwo, new SamplingContext(outputs, 0, ends))).isEqualTo(2);
        assertThat(Sampler.sample(LOGITS, atLeastTwo, new SamplingContext(outputs, 1, ends))).isEqualTo(2);
        assertThat(Sampler.sample(LOGITS, atLeastTwo, new SamplingContext(outputs, 2, ends))).isEqualTo(1);
        assertThat(Sampler.adjustedLogits(LOGITS, atLeastTwo, new SamplingContext(outputs, 1, ends)))
                .containsExactly(1f, Float.NEGATIVE_INFINITY, 2.5f, Float.NEGATIVE_INFINITY, -1f, 0f);

        // sampled: hot, so that every token would be drawn, and never an end id below min_new_tokens
        SamplingParams hot = rules(8f, 1f, -1, 0f, 1f, 0f, 0f, 2, 0);
        int[] below = LongStream.range(0, 300).mapToInt(seed -> Sampler.sample(LOGITS, hot.withSeed(seed), new SamplingContext(outputs, 1, ends)))
                .distinct().sorted().toArray();
        int[] reached = LongStream.range(0, 300).mapToInt(seed -> Sampler.sample(LOGITS, hot.withSeed(seed), new SamplingContext(outputs, 2, ends)))
                .distinct().sorted().toArray();
        assertThat(below).containsExactly(0, 2, 4, 5);
        assertThat(reached).containsExactly(0, 1, 2, 3, 4, 5);
    }

    @Test
    void samplingWithoutHistoryRefusesRulesThatNeedIt()
    {
        assertThatThrownBy(() -> Sampler.sample(LOGITS, rules(1f, 1f, -1, 0f, 1.2f, 0f, 0f, 0, 0), 1))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("pass them in a SamplingContext");
        assertThatThrownBy(() -> Sampler.sample(LOGITS, rules(1f, 1f, -1, 0f, 1f, 0f, 0f, 3, 0), 2))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("token 2");
        assertThat(Sampler.sample(LOGITS, rules(0f, 1f, -1, 0f, 1f, 0f, 0f, 3, 0), 3)).as("a rule that no longer applies").isEqualTo(1);
        assertThatThrownBy(() -> new SamplingContext(new int[2], 3, Set.of())).hasMessageContaining("token index 3 is outside");
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
        assertThatThrownBy(() -> new SamplingParams(Float.POSITIVE_INFINITY, 1f, 0)).hasMessageContaining("temperature must be finite");
        assertThatThrownBy(() -> new SamplingParams(1f, 0f, 0)).hasMessageContaining("top_p must be in (0, 1], was 0.0");
        assertThatThrownBy(() -> new SamplingParams(1f, 1.5f, 0)).hasMessageContaining("top_p must be in (0, 1], was 1.5");
        assertThatThrownBy(() -> rules(1f, 1f, 0, 0f, 1f, 0f, 0f, 0, 0)).hasMessageContaining("top_k must be -1 (all tokens) or at least 1, was 0");
        assertThatThrownBy(() -> rules(1f, 1f, -2, 0f, 1f, 0f, 0f, 0, 0)).hasMessageContaining("top_k must be -1 (all tokens) or at least 1, was -2");
        assertThatThrownBy(() -> rules(1f, 1f, -1, 1.1f, 1f, 0f, 0f, 0, 0)).hasMessageContaining("min_p must be in [0, 1], was 1.1");
        assertThatThrownBy(() -> rules(1f, 1f, -1, Float.NaN, 1f, 0f, 0f, 0, 0)).hasMessageContaining("min_p must be in [0, 1], was NaN");
        assertThatThrownBy(() -> rules(1f, 1f, -1, 0f, 0f, 0f, 0f, 0, 0)).hasMessageContaining("repetition_penalty must be in (0, 2.0], was 0.0");
        assertThatThrownBy(() -> rules(1f, 1f, -1, 0f, 2.5f, 0f, 0f, 0, 0)).hasMessageContaining("repetition_penalty must be in (0, 2.0], was 2.5");
        assertThatThrownBy(() -> rules(1f, 1f, -1, 0f, 1f, -2.1f, 0f, 0, 0)).hasMessageContaining("frequency_penalty must be in [-2, 2], was -2.1");
        assertThatThrownBy(() -> rules(1f, 1f, -1, 0f, 1f, Float.NaN, 0f, 0, 0)).hasMessageContaining("frequency_penalty must be in [-2, 2], was NaN");
        assertThatThrownBy(() -> rules(1f, 1f, -1, 0f, 1f, 0f, 3f, 0, 0)).hasMessageContaining("presence_penalty must be in [-2, 2], was 3.0");
        assertThatThrownBy(() -> rules(1f, 1f, -1, 0f, 1f, 0f, 0f, -1, 0)).hasMessageContaining("min_new_tokens must be at least 0, was -1");
        // the limits themselves are taken
        assertThat(rules(0f, 1f, 1, 1f, 2f, -2f, 2f, 0, 0).penalized()).isTrue();
        assertThat(new SamplingParams(1f, 1f, 0).penalized()).isFalse();
    }

    private static SamplingParams rules(float temperature, float topP, int topK, float minP, float repetition, float frequency, float presence,
            int minNewTokens, long seed)
    {
        return new SamplingParams(temperature, topP, topK, minP, repetition, frequency, presence, minNewTokens, seed);
    }

    private static float[] adjusted(float[] logits, float repetition, float frequency, float presence, SamplingContext context)
    {
        return Sampler.adjustedLogits(logits, rules(1f, 1f, -1, 0f, repetition, frequency, presence, 0, 0), context);
    }

    /** The distinct tokens drawn for output indexes {@code 0..count}, ascending. */
    private static int[] draws(float[] logits, SamplingParams params, int count)
    {
        return IntStream.range(0, count).map(i -> Sampler.sample(logits, params, new SamplingContext(new int[i], i, Set.of()))).distinct().sorted().toArray();
    }

    /** Temperature and nucleus sampling as the sampler computed them before the other rules existed: the oracle. */
    private static int plainNucleus(float[] logits, SamplingParams params, int tokenIndex)
    {
        int vocab = logits.length;
        double max = Double.NEGATIVE_INFINITY;
        for (float logit : logits) {
            max = Math.max(max, logit);
        }
        double[] probs = new double[vocab];
        double total = 0;
        for (int i = 0; i < vocab; i++) {
            probs[i] = StrictMath.exp((logits[i] - max) / params.temperature());
            total += probs[i];
        }
        Integer[] order = new Integer[vocab];
        Arrays.setAll(order, i -> i);
        Arrays.sort(order, (a, b) -> probs[a] != probs[b] ? Double.compare(probs[b], probs[a]) : Integer.compare(a, b));
        double threshold = params.topP() * total;
        double mass = 0;
        int keep = 0;
        while (keep < vocab && (keep == 0 || mass < threshold)) {
            mass += probs[order[keep++]];
        }
        double u = new SplittableRandom(mixForOracle(params.seed(), tokenIndex)).nextDouble() * mass;
        double cumulative = 0;
        for (int i = 0; i < keep; i++) {
            cumulative += probs[order[i]];
            if (u < cumulative) {
                return order[i];
            }
        }
        return order[keep - 1];
    }

    private static long mixForOracle(long seed, int tokenIndex)
    {
        long z = seed + 0x9e3779b97f4a7c15L * (tokenIndex + 1L);
        z = (z ^ (z >>> 30)) * 0xbf58476d1ce4e5b9L;
        z = (z ^ (z >>> 27)) * 0x94d049bb133111ebL;
        return z ^ (z >>> 31);
    }
}
