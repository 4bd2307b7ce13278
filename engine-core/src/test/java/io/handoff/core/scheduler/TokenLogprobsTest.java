package io.handoff.core.scheduler;

import org.junit.jupiter.api.Test;

import java.util.Arrays;
import java.util.Comparator;
import java.util.SplittableRandom;
import java.util.stream.IntStream;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class TokenLogprobsTest
{
    /** Seeded logits with many exact ties (values on a coarse grid), so the tie rule decides the order. */
    private static float[] logits(int vocab, long seed)
    {
        SplittableRandom random = new SplittableRandom(seed);
        float[] logits = new float[vocab];
        for (int i = 0; i < vocab; i++) {
            logits[i] = random.nextInt(-40, 40) / 4f;
        }
        return logits;
    }

    @Test
    void valueIsTheLogSoftmaxInDoubleWithTheMaxSubtracted()
    {
        float[] logits = logits(1000, 1);
        double max = Double.NEGATIVE_INFINITY;
        for (float logit : logits) {
            max = Math.max(max, logit);
        }
        double sum = 0;
        for (float logit : logits) {
            sum += StrictMath.exp(logit - max);
        }
        double shift = max + StrictMath.log(sum);
        for (int id : new int[] {0, 17, 999}) {
            assertThat(TokenLogprobs.of(logits, id, 0).logprob()).isEqualTo((float) (logits[id] - shift));
        }
    }

    @Test
    void aRowsProbabilitiesSumToOne()
    {
        float[] logits = logits(5000, 2);
        double total = 0;
        for (int id = 0; id < logits.length; id++) {
            TokenLogprob entry = TokenLogprobs.of(logits, id, 0);
            assertThat(entry.tokenId()).isEqualTo(id);
            assertThat(entry.logprob()).isLessThanOrEqualTo(0f);
            total += Math.exp(entry.logprob());
        }
        assertThat(total).isCloseTo(1.0, org.assertj.core.data.Offset.offset(1e-5));
    }

    @Test
    void topIdsAreTheMostLikelyWithTiesTowardTheLowerIdAsAFullSortGivesThem()
    {
        float[] logits = logits(128 * 1024, 3);
        TokenLogprob entry = TokenLogprobs.of(logits, 5, LogprobRequest.MAX_TOP_N);
        Integer[] order = IntStream.range(0, logits.length).boxed().toArray(Integer[]::new);
        Arrays.sort(order, Comparator.<Integer>comparingDouble(i -> -logits[i]).thenComparingInt(i -> i));
        int[] expected = Arrays.stream(order, 0, LogprobRequest.MAX_TOP_N).mapToInt(Integer::intValue).toArray();
        assertThat(entry.topIds()).containsExactly(expected);
        for (int i = 0; i < expected.length; i++) {
            assertThat(entry.topLogprobs()[i]).isEqualTo(TokenLogprobs.of(logits, expected[i], 0).logprob());
        }
        // the grid has ties at the top: the lower id comes first among equals
        assertThat(entry.topLogprobs()[0]).isEqualTo(entry.topLogprobs()[1]);
        assertThat(entry.topIds()[0]).isLessThan(entry.topIds()[1]);
    }

    @Test
    void theArgmaxIsTheFirstAlternative()
    {
        float[] logits = logits(300, 4);
        int argmax = io.handoff.core.model.Sampler.argmax(logits);
        TokenLogprob entry = TokenLogprobs.of(logits, argmax, 3);
        assertThat(entry.topIds()[0]).isEqualTo(argmax);
        assertThat(entry.logprob()).isEqualTo(entry.topLogprobs()[0]);
    }

    @Test
    void alternativesAreBoundedByTheRequestsLimitAndTheVocabulary()
    {
        float[] logits = logits(8, 5);
        assertThat(TokenLogprobs.of(logits, 0, 0).topIds()).isEmpty();
        assertThat(TokenLogprobs.of(logits, 0, 8).topIds()).hasSize(8);
        assertThatThrownBy(() -> TokenLogprobs.of(logits, 0, 9)).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> TokenLogprobs.of(logits(100, 5), 0, LogprobRequest.MAX_TOP_N + 1)).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> TokenLogprobs.of(logits, 8, 0)).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> new LogprobRequest(LogprobRequest.MAX_TOP_N + 1, -1)).isInstanceOf(RequestRejectedException.class);
    }

    @Test
    void inputStartsAfterPositionZeroAndIsEmptyWhenNoneWasAskedFor()
    {
        assertThat(TokenLogprobs.inputFrom(new LogprobRequest(0, 0), 10)).isEqualTo(1);
        assertThat(TokenLogprobs.inputFrom(new LogprobRequest(0, 4), 10)).isEqualTo(4);
        assertThat(TokenLogprobs.inputFrom(new LogprobRequest(0, -1), 10)).isEqualTo(10);
        assertThat(TokenLogprobs.inputFrom(new LogprobRequest(0, 0), 1)).isEqualTo(1);
    }
}
