package io.handoff.core.model;

import org.junit.jupiter.api.Test;

import java.util.Arrays;
import java.util.SplittableRandom;
import java.util.stream.IntStream;

import static org.assertj.core.api.Assertions.assertThat;

class TokenRankingTest
{
    @Test
    void givesTheOrderOfAFullSortByDescendingWeightWithTiesTowardTheLowerId()
    {
        SplittableRandom random = new SplittableRandom(5);
        for (int trial = 0; trial < 50; trial++) {
            int vocab = 1 + random.nextInt(300);
            // few distinct values, zeros among them: ties everywhere
            double[] weights = random.ints(vocab, 0, 6).mapToDouble(v -> v == 0 ? 0 : Math.exp(-v)).toArray();
            Integer[] sorted = IntStream.range(0, vocab).boxed().toArray(Integer[]::new);
            Arrays.sort(sorted, (a, b) -> weights[a] != weights[b] ? Double.compare(weights[b], weights[a]) : Integer.compare(a, b));

            TokenRanking ranking = new TokenRanking(weights);
            int[] taken = new int[vocab];
            for (int i = 0; i < vocab; i++) {
                assertThat(ranking.hasNext()).isTrue();
                int peeked = ranking.peek();
                taken[i] = ranking.next();
                assertThat(taken[i]).isEqualTo(peeked);
            }
            assertThat(ranking.hasNext()).isFalse();
            assertThat(taken).as("trial %d", trial).containsExactly(Arrays.stream(sorted).mapToInt(Integer::intValue).toArray());
        }
    }
}
