package io.handoff.core.model;

import io.handoff.core.model.gguf.BlockQuantizer;
import io.handoff.core.model.activation.QuantizedInput;
import io.handoff.core.model.activation.ActivationBuffers;
import io.handoff.core.model.activation.ActivationFormat;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

import java.lang.foreign.MemorySegment;
import java.util.SplittableRandom;
import java.util.concurrent.ForkJoinPool;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Products of block-quantized weights with inputs rounded as llama.cpp rounds them: the rounding itself (ggml's scale and
 * ties), the integer codes against the exact decode, the product against the exact F32 product within the error the
 * rounding allows, and the same bits whatever the number of tokens in the batch or of threads.
 */
class QuantizedKernelsTest
{
    private static final int ROWS = 37;
    private static final int COLS = 512;

    @Test
    void q8_0RoundsAsGgmlsAvx2BuildHalfToEvenAgainstAnF16Scale()
    {
        float[] x = new float[32];
        x[0] = 127f;      // amax: inverse scale 1, d = 1
        x[1] = 2.5f;      // a tie: to even
        x[2] = 3.5f;
        x[3] = -2.5f;
        x[4] = 0.49f;
        QuantizedInput q = ActivationFormat.Q8_0.quantize(x, 0, 32, 1, 32);
        assertThat(q.scales()[0]).isEqualTo(1f);
        assertThat(q.codes()[0]).isEqualTo(127f);
        assertThat(q.codes()[1]).isEqualTo(2f);
        assertThat(q.codes()[2]).isEqualTo(4f);
        assertThat(q.codes()[3]).isEqualTo(-2f);
        assertThat(q.codes()[4]).isEqualTo(0f);
        assertThat(q.sums()[0]).isEqualTo(127 + 2 + 4 - 2);
        assertThat(q.blockSums()[0]).isEqualTo(Float.float16ToFloat(Float.floatToFloat16(131f)));

        float[] scaled = new float[32];
        scaled[0] = 1f / 3;
        QuantizedInput third = ActivationFormat.Q8_0.quantize(scaled, 0, 32, 1, 32);
        // the scale is kept in F16, as ggml stores it
        assertThat(third.scales()[0]).isEqualTo(Float.float16ToFloat(Float.floatToFloat16((1f / 3) / 127)));
    }

    @Test
    void q8_kTakesItsSignFromTheFirstValueOfLargestMagnitudeAndCapsAt127()
    {
        float[] x = new float[256];
        x[5] = -2f;       // the first of largest magnitude: iscale = -127 / -2 = 63.5
        x[9] = 2f;        // as large, later
        x[10] = 1f;
        QuantizedInput q = ActivationFormat.Q8_K.quantize(x, 0, 256, 1, 256);
        assertThat(q.codes()[5]).isEqualTo(-127f);
        assertThat(q.codes()[9]).isEqualTo(127f);
        assertThat(q.codes()[10]).isEqualTo(64f);    // 63.5 rounds to even
        assertThat(q.scales()[0]).isEqualTo(1 / 63.5f);
        assertThat(q.sums()[0]).isEqualTo(64);
        assertThat(q.sums()[1]).isEqualTo(0);

        x[9] = 2.0000002f;   // now the largest is positive: iscale < 0 flips every code
        QuantizedInput flipped = ActivationFormat.Q8_K.quantize(x, 0, 256, 1, 256);
        assertThat(flipped.codes()[9]).isEqualTo(-127f);
        assertThat(flipped.codes()[5]).isEqualTo(127f);
        assertThat(flipped.codes()[10]).isEqualTo(-63f);

        QuantizedInput zeros = ActivationFormat.Q8_K.quantize(new float[256], 0, 256, 1, 256);
        assertThat(zeros.scales()[0]).isZero();
        assertThat(zeros.codes()).containsOnly(0f);
    }

    /** Scale times code, less the offset term, is the value ggml decodes (exactly where the products are exact in F32). */
    @ParameterizedTest
    @EnumSource(BlockFormat.class)
    void codesAndScalesStandForTheDecodedValues(BlockFormat format)
    {
        MemorySegment data = matrix(format, 3, 1024, 7);
        BlockCodes codes = new BlockCodes(format, 1024);
        codes.ensure(1);
        float[] row = new float[1024];
        for (int r = 0; r < 3; r++) {
            codes.decode(data, r, 0);
            for (int b = 0; b < 1024 / format.blockElements(); b++) {
                format.decode(data, ((long) r * 1024 / format.blockElements() + b) * format.blockBytes(), row, b * format.blockElements());
            }
            for (int b = 0; b < 1024 / format.blockElements(); b++) {
                for (int i = 0; i < format.blockElements(); i++) {
                    int at = b * format.blockElements() + i;
                    double value = (double) codes.scales[b] * codes.codes[at];
                    if (format == BlockFormat.Q4_1 || format == BlockFormat.Q5_1) {
                        value += codes.offsets[b];
                    }
                    if (format == BlockFormat.Q4_K || format == BlockFormat.Q5_K) {
                        value -= (double) codes.offsets[b] * codes.mins[at / 32];
                    }
                    assertThat(value).as("%s row %d value %d", format, r, at).isCloseTo(row[at], org.assertj.core.data.Offset.offset(Math.abs(row[at]) * 1e-6 + 1e-9));
                }
            }
        }
    }

    /**
     * Against the exact F32 product of the decoded weights and the unrounded input, a product errs by at most what rounding the
     * input allows: half an input step per value, times the weight, summed (plus F32 slack).
     */
    @ParameterizedTest
    @EnumSource(BlockFormat.class)
    void aProductIsTheExactOneWithinTheInputsRoundingError(BlockFormat format)
    {
        MemorySegment data = matrix(format, ROWS, COLS, 11);
        WeightMatrix w = WeightMatrix.blocks(format, data, ROWS, COLS).withActivations(format.llamaCppActivations());
        float[] x = gaussian(new SplittableRandom(5), COLS, 1);
        float[] out = new float[ROWS];
        Kernels.matmul(null, out, 0, ROWS, w, x, 0, COLS, 1);
        QuantizedInput q = format.llamaCppActivations().quantize(x, 0, COLS, 1, COLS);
        int block = format.llamaCppActivations().block();
        float[] row = new float[COLS];
        for (int r = 0; r < ROWS; r++) {
            w.readRow(r, row, 0);
            double exact = 0;
            double bound = 0;
            double magnitude = 0;
            for (int i = 0; i < COLS; i++) {
                exact += (double) row[i] * x[i];
                bound += Math.abs(row[i]) * Math.abs(q.scales()[i / block]) * 0.5;
                magnitude += Math.abs(row[i] * x[i]);
            }
            assertThat((double) out[r]).as("%s row %d", format, r).isCloseTo(exact, org.assertj.core.data.Offset.offset(bound * 1.001 + magnitude * 1e-5));
            // and it is not the exact product: the input was rounded
            assertThat(Math.abs(out[r] - exact)).as("%s row %d is computed on the rounded input", format, r).isGreaterThan(0);
        }
    }

    /**
     * A token's product is the same bits alone (a decode step) or in a batch (a prefill tile), and on one thread or three;
     * 45 tokens take every path of a tile: six tokens a step, then the last nine as four, four and one (super-blocks), four
     * (blocks of 32), a token left alone, and the offsets' vectors of sixteen tokens with their remainder.
     */
    @ParameterizedTest
    @EnumSource(BlockFormat.class)
    void aTokensProductIsTheSameBitsInAnyBatchAndOnAnyThreads(BlockFormat format)
    {
        MemorySegment data = matrix(format, ROWS, COLS, 13);
        WeightMatrix w = WeightMatrix.blocks(format, data, ROWS, COLS).withActivations(format.llamaCppActivations());
        int tokens = 45;
        float[] x = gaussian(new SplittableRandom(17), tokens * COLS, 2);
        float[] batch = new float[tokens * ROWS];
        Kernels.matmul(null, batch, 0, ROWS, w, x, 0, COLS, tokens);
        try (ForkJoinPool pool = new ForkJoinPool(3)) {
            float[] threaded = new float[tokens * ROWS];
            Kernels.matmul(pool, threaded, 0, ROWS, w, x, 0, COLS, tokens);
            assertThat(threaded).isEqualTo(batch);
            for (int t = 0; t < tokens; t++) {
                float[] one = new float[ROWS];
                Kernels.matmul(pool, one, 0, ROWS, w, x, t * COLS, COLS, 1);
                float[] expected = java.util.Arrays.copyOfRange(batch, t * ROWS, (t + 1) * ROWS);
                assertThat(one).as("%s token %d alone and in the batch", format, t).isEqualTo(expected);
            }
        }
        // rows permuted (a Llama GGUF's q and k) multiply as the rows they stand for
        int[] order = new int[ROWS];
        for (int r = 0; r < ROWS; r++) {
            order[r] = ROWS - 1 - r;
        }
        float[] permuted = new float[tokens * ROWS];
        Kernels.matmul(null, permuted, 0, ROWS, w.withRowOrder(order), x, 0, COLS, tokens);
        for (int t = 0; t < tokens; t++) {
            for (int r = 0; r < ROWS; r++) {
                assertThat(permuted[t * ROWS + r]).isEqualTo(batch[t * ROWS + order[r]]);
            }
        }
        // and in a decode step
        float[] permutedOne = new float[ROWS];
        Kernels.matmul(null, permutedOne, 0, ROWS, w.withRowOrder(order), x, 0, COLS, 1);
        for (int r = 0; r < ROWS; r++) {
            assertThat(permutedOne[r]).as("%s permuted row %d, one token", format, r).isEqualTo(batch[order[r]]);
        }
    }

    /**
     * A tensor-parallel rank's share of a matrix, rows {@code from .. to} wherever they start in the kernels' row blocks and
     * tiles, is the same bits as those rows of the whole product, for one token and a prefill's batch.
     */
    @ParameterizedTest
    @EnumSource(BlockFormat.class)
    void aShareOfTheRowsIsTheSameBitsAsThoseRowsOfTheWholeProduct(BlockFormat format)
    {
        int rows = 150;
        WeightMatrix w = WeightMatrix.blocks(format, matrix(format, rows, COLS, 29), rows, COLS).withActivations(format.llamaCppActivations());
        for (int tokens : new int[] {1, 9}) {
            float[] x = gaussian(new SplittableRandom(31), tokens * COLS, 2);
            float[] whole = new float[tokens * rows];
            Kernels.matmul(null, whole, 0, rows, w, x, 0, COLS, tokens);
            for (int[] share : new int[][] {{0, 75}, {75, 150}, {16, 80}, {3, 100}, {129, 150}, {64, 128}}) {
                int from = share[0];
                int to = share[1];
                float[] part = new float[tokens * rows];
                Kernels.matmulRows(null, part, from, rows, w, from, to, x, 0, COLS, tokens);
                for (int t = 0; t < tokens; t++) {
                    assertThat(java.util.Arrays.copyOfRange(part, t * rows + from, t * rows + to))
                            .as("%s rows %d..%d, token %d of %d", format, from, to, t, tokens)
                            .isEqualTo(java.util.Arrays.copyOfRange(whole, t * rows + from, t * rows + to));
                }
            }
        }
    }

    @Test
    void withExactActivationsAQuantizedMatrixIsItsF32Expansion()
    {
        MemorySegment data = matrix(BlockFormat.Q4_K, ROWS, COLS, 19);
        WeightMatrix w = WeightMatrix.blocks(BlockFormat.Q4_K, data, ROWS, COLS);
        assertThat(w.activations()).isEqualTo(ActivationFormat.F32);
        float[] expansion = new float[ROWS * COLS];
        for (int r = 0; r < ROWS; r++) {
            w.readRow(r, expansion, r * COLS);
        }
        float[] x = gaussian(new SplittableRandom(23), 3 * COLS, 1);
        float[] got = new float[3 * ROWS];
        float[] expected = new float[3 * ROWS];
        Kernels.matmul(null, got, 0, ROWS, w, x, 0, COLS, 3);
        Kernels.matmul(null, expected, 0, ROWS, WeightMatrix.f32(expansion, ROWS, COLS), x, 0, COLS, 3);
        assertThat(got).isEqualTo(expected);
    }

    /**
     * Quantizing into kept buffers (a larger input first, so that stale values lie past the smaller one) and on several
     * threads gives the arrays a fresh quantization on one thread gives.
     */
    @ParameterizedTest
    @EnumSource(value = ActivationFormat.class, names = {"Q8_0", "Q8_K"})
    void quantizingIntoKeptBuffersOnThreadsIsAFreshQuantization(ActivationFormat format)
    {
        ActivationBuffers buffers = new ActivationBuffers();
        float[] large = gaussian(new SplittableRandom(5), 40 * COLS, 3);
        format.quantize(large, 0, COLS, 40, COLS, buffers, (n, body) -> java.util.stream.IntStream.range(0, n).parallel().forEach(body));
        for (int tokens : new int[] {1, 21}) {
            float[] x = gaussian(new SplittableRandom(7 + tokens), tokens * COLS, 2);
            QuantizedInput fresh = format.quantize(x, 0, COLS, tokens, COLS);
            QuantizedInput kept = format.quantize(x, 0, COLS, tokens, COLS, buffers,
                    (n, body) -> java.util.stream.IntStream.range(0, n).parallel().forEach(body));
            int values = tokens * COLS;
            assertThat(java.util.Arrays.copyOf(kept.codes(), values)).isEqualTo(fresh.codes());
            assertThat(java.util.Arrays.copyOf(kept.scales(), fresh.scales().length)).isEqualTo(fresh.scales());
            assertThat(java.util.Arrays.copyOf(kept.sums(), values / 32)).isEqualTo(fresh.sums());
            assertThat(java.util.Arrays.copyOf(kept.blockSums(), values / 32)).isEqualTo(fresh.blockSums());
            if (tokens > 1) {
                QuantizedInput.TokenMinor a = kept.byToken();
                QuantizedInput.TokenMinor b = fresh.byToken();
                assertThat(java.util.Arrays.copyOf(a.scales(), b.scales().length)).isEqualTo(b.scales());
                assertThat(java.util.Arrays.copyOf(a.sums(), b.sums().length)).isEqualTo(b.sums());
                assertThat(java.util.Arrays.copyOf(a.blockSums(), b.blockSums().length)).isEqualTo(b.blockSums());
                assertThat(java.util.Arrays.copyOf(a.bytes(), values)).isEqualTo(b.bytes());
                // the bytes a prefill widens are the codes themselves
                for (int i = 0; i < values; i++) {
                    assertThat((float) b.bytes()[i]).isEqualTo(fresh.codes()[i]);
                }
            }
        }
    }

    /** A matrix of realistic blocks: Gaussian rows written by {@link BlockQuantizer}, so scales and mins are what files hold. */
    static MemorySegment matrix(BlockFormat format, int rows, int cols, long seed)
    {
        float[] values = gaussian(new SplittableRandom(seed), rows * cols, 0.05);
        return MemorySegment.ofArray(BlockQuantizer.encode(format, values, 0, values.length));
    }

    static float[] gaussian(SplittableRandom random, int n, double scale)
    {
        float[] v = new float[n];
        for (int i = 0; i < n; i++) {
            v[i] = (float) (random.nextGaussian() * scale);
        }
        return v;
    }
}
