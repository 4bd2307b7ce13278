package io.handoff.core.model;

import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import io.handoff.math.ExactExp;
import java.util.Arrays;
import java.util.SplittableRandom;
import java.util.concurrent.ForkJoinPool;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

class KernelsTest
{
    /** The exps come from ExactExp's vector lanes, not its cold-start scalar path: wait until they are compiled. */
    @BeforeAll
    static void lanesWarm()
            throws InterruptedException
    {
        assertThat(ExactExp.awaitWarm(300_000)).as("ExactExp warmed up").isTrue();
    }

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
    void severalProductsInOneParallelLoopEqualEachOnItsOwn()
    {
        // enough work at 5 tokens to run in parallel
        int cols = 264;
        int tokens = 5;
        float[] x = random(tokens * cols, 6);
        WeightMatrix a = WeightMatrix.f32(random(40 * cols, 7), 40, cols);
        WeightMatrix b = WeightMatrix.f32(random(300 * cols, 8), 300, cols);
        WeightMatrix c = WeightMatrix.f32(random(17 * cols, 9), 17, cols);
        for (int n : new int[] {1, tokens}) {
            float[] aAlone = new float[n * 40];
            float[] bAlone = new float[n * 300];
            float[] cAlone = new float[n * 17];
            Kernels.matmul(null, aAlone, 0, 40, a, x, 0, cols, n);
            Kernels.matmul(null, bAlone, 0, 300, b, x, 0, cols, n);
            Kernels.matmul(null, cAlone, 0, 17, c, x, 0, cols, n);
            float[] aTogether = new float[n * 40];
            float[] bTogether = new float[n * 300];
            float[] cTogether = new float[n * 17];
            try (ForkJoinPool pool = new ForkJoinPool(3)) {
                Kernels.matmuls(pool, x, 0, cols, n, new Kernels.Product(aTogether, 0, 40, a), new Kernels.Product(bTogether, 0, 300, b),
                        new Kernels.Product(cTogether, 0, 17, c));
            }
            assertThat(aTogether).isEqualTo(aAlone);
            assertThat(bTogether).isEqualTo(bAlone);
            assertThat(cTogether).isEqualTo(cAlone);
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

    /** SwiGLU over lanes is the scalar {@code (float) (g / (1 + StrictMath.exp(-g))) * up} bit for bit, tails and specials included. */
    @Test
    void swigluIsTheScalarStrictMathFormulaBitForBit()
    {
        SplittableRandom random = new SplittableRandom(11);
        int n = 70_003;
        float[] gate = new float[n];
        float[] up = new float[n];
        for (int i = 0; i < n; i++) {
            gate[i] = (float) (random.nextDouble(-1, 1) * (i % 3 == 0 ? 800 : 12));
            up[i] = (float) random.nextDouble(-3, 3);
        }
        float[] specials = {Float.NaN, Float.POSITIVE_INFINITY, Float.NEGATIVE_INFINITY, -0f, 0f, Float.MIN_VALUE, 709f, -746f, 1e-9f};
        System.arraycopy(specials, 0, gate, 100, specials.length);
        float[] expected = new float[n];
        for (int i = 0; i < n; i++) {
            float g = gate[i];
            expected[i] = (float) (g / (1.0 + StrictMath.exp(-g))) * up[i];
        }
        for (int length : new int[] {n, 1, 7, 8, 9, 17}) {
            float[] got = Arrays.copyOf(gate, length);
            Kernels.swiglu(ForkJoinPool.commonPool(), got, up, length);
            for (int i = 0; i < length; i++) {
                assertThat(Float.floatToRawIntBits(got[i])).as("gate %s at %s of %s", gate[i], i, length)
                        .isEqualTo(Float.floatToRawIntBits(expected[i]));
            }
        }
    }
}
