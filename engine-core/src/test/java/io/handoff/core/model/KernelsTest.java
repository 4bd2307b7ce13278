package io.handoff.core.model;

import org.junit.jupiter.api.Test;

import java.util.SplittableRandom;
import java.util.concurrent.ForkJoinPool;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

class KernelsTest
{
    private static float[] random(int n, long seed)
    {
        SplittableRandom random = new SplittableRandom(seed);
        float[] values = new float[n];
        for (int i = 0; i < n; i++) {
            values[i] = (float) (random.nextDouble() * 2 - 1);
        }
        return values;
    }

    @Test
    void dotIsCloseToTheExactValueForEveryTailLength()
    {
        float[] a = random(300, 1);
        float[] b = random(300, 2);
        for (int n = 0; n <= 77; n++) {
            double exact = 0;
            for (int i = 0; i < n; i++) {
                exact += (double) a[3 + i] * b[5 + i];
            }
            assertThat((double) Kernels.dot(a, 3, b, 5, n)).as("n=%s", n).isCloseTo(exact, within(1e-5));
        }
    }

    @Test
    void matmulIsBitIdenticalWhateverTheThreadsAndTheTokensAround()
    {
        int rows = 300;
        int cols = 256;
        int tokens = 40;
        float[] w = random(rows * cols, 3);
        float[] x = random(tokens * cols, 4);
        float[] sequential = new float[tokens * rows];
        float[] parallel = new float[tokens * rows];
        WeightMatrix matrix = WeightMatrix.f32(w, rows, cols);
        Kernels.matmul(null, sequential, 0, rows, matrix, x, 0, cols, tokens);
        try (ForkJoinPool pool = new ForkJoinPool(3)) {
            Kernels.matmul(pool, parallel, 0, rows, matrix, x, 0, cols, tokens);
        }
        assertThat(parallel).isEqualTo(sequential);
        float[] one = new float[rows];
        Kernels.matmul(null, one, 0, rows, matrix, x, 17 * cols, cols, 1);
        for (int r = 0; r < rows; r++) {
            assertThat(one[r]).isEqualTo(sequential[17 * rows + r]);
        }
    }

    @Test
    void ropeRotationPreservesPairNorms()
    {
        float[][] tables = Kernels.ropeTables(64, 8, 10000);
        for (boolean interleaved : new boolean[] {false, true}) {
            float[] x = random(8, 5);
            float[] rotated = x.clone();
            Kernels.rope(rotated, 0, 8, 37, tables[0], tables[1], interleaved);
            double before = Kernels.dot(x, 0, x, 0, 8);
            assertThat((double) Kernels.dot(rotated, 0, rotated, 0, 8)).isCloseTo(before, within(1e-5));
            assertThat(rotated).isNotEqualTo(x);
            float[] atZero = x.clone();
            Kernels.rope(atZero, 0, 8, 0, tables[0], tables[1], interleaved);
            assertThat(atZero).isEqualTo(x);
        }
    }
}
