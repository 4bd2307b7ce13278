package io.handoff.core.model;

import org.junit.jupiter.api.Test;

import java.util.Arrays;
import java.util.SplittableRandom;
import java.util.stream.IntStream;

import static org.assertj.core.api.Assertions.assertThat;

class TokenRankingTest
{
    @Test
    void givesThePositionsOfAFullSortByDescendingWeightWithTiesTowardTheLowerId()
    {
        SplittableRandom random = new SplittableRandom(5);
        for (int trial = 0; trial < 60; trial++) {
            // up to past the heap's share; few distinct values, zeros among them: ties everywhere, across the switch too
            int vocab = 1 + random.nextInt(trial < 30 ? 300 : 5000);
            double[] weights = random.ints(vocab, 0, 6).mapToDouble(v -> v == 0 ? 0 : Math.exp(-v)).toArray();
            int[] expected = fullSort(weights);

            TokenRanking ranking = new TokenRanking(weights);
            for (int position = 0; position < vocab; position++) {
                assertThat(ranking.weight(position)).as("trial %d, weight at %d", trial, position).isEqualTo(weights[expected[position]]);
            }
            // ids are asked for after the weights, as the sampler does: heap positions and sorted ones alike
            for (int position = 0; position < vocab; position += 1 + vocab / 50) {
                assertThat(ranking.id(position)).as("trial %d, id at %d", trial, position).isEqualTo(expected[position]);
            }
            assertThat(ranking.id(vocab - 1)).isEqualTo(expected[vocab - 1]);
        }
    }

    @Test
    void anIdPastTheHeapIsTheOneAFullSortPutsThere()
    {
        double[] weights = new SplittableRandom(8).doubles(2000).map(w -> Math.floor(w * 10)).toArray();
        int[] expected = fullSort(weights);
        int past = TokenRanking.heapPositions(weights.length) + 17;
        TokenRanking ranking = new TokenRanking(weights);
        assertThat(ranking.id(past)).isEqualTo(expected[past]);
        assertThat(ranking.id(0)).isEqualTo(expected[0]);
        assertThat(ranking.id(1)).isEqualTo(expected[1]);
    }

    private static int[] fullSort(double[] weights)
    {
        Integer[] sorted = IntStream.range(0, weights.length).boxed().toArray(Integer[]::new);
        Arrays.sort(sorted, (a, b) -> weights[a] != weights[b] ? Double.compare(weights[b], weights[a]) : Integer.compare(a, b));
        return Arrays.stream(sorted).mapToInt(Integer::intValue).toArray();
    }
}
