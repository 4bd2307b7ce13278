package io.handoff.core.model;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.util.SplittableRandom;
import java.util.concurrent.ForkJoinPool;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.within;

class WeightMatrixTest
{
    private static final ValueLayout.OfFloat F32_LE = ValueLayout.JAVA_FLOAT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    private static final ValueLayout.OfShort U16_LE = ValueLayout.JAVA_SHORT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    // lengths around every boundary of the dot: the 32-wide main loop, the 8-wide remainder, the scalar tail
    private static final int[] LENGTHS = {1, 7, 8, 9, 31, 32, 33, 40, 63, 64, 65, 100, 256, 261};

    enum Type
    {
        F32, F16, BF16, Q8_0, PERMUTED_Q8_0,
        /** DeepSeek-V3's 128 x 128 blocks: the odd shapes end in partial ones. */
        FP8_BLOCKS_128,
        /** Blocks of 3 rows and 32 columns: a scale change at every step of the product. */
        FP8_BLOCKS_3X32;

        boolean blocked()
        {
            return this == Q8_0 || this == PERMUTED_Q8_0;
        }
    }

    /**
     * A seeded matrix of {@code type} over unaligned native memory (one byte past an aligned start, as a mapped tensor
     * may be): F32, F16 and BF16 from random values, Q8_0 from random bytes and F16 scales, FP8 from random codes (no NaN)
     * and F32 scales.
     */
    static WeightMatrix matrix(Type type, Arena arena, int rows, int cols, long seed)
    {
        SplittableRandom random = new SplittableRandom(seed);
        long n = (long) rows * cols;
        return switch (type) {
            case F32 -> {
                MemorySegment data = unaligned(arena, n * 4);
                for (long i = 0; i < n; i++) {
                    data.set(F32_LE, 4 * i, (float) random.nextDouble(-1, 1));
                }
                yield WeightMatrix.f32(data, rows, cols);
            }
            case F16 -> {
                MemorySegment data = unaligned(arena, n * 2);
                for (long i = 0; i < n; i++) {
                    data.set(U16_LE, 2 * i, Float.floatToFloat16((float) random.nextDouble(-2, 2)));
                }
                yield WeightMatrix.f16(data, rows, cols);
            }
            case BF16 -> {
                MemorySegment data = unaligned(arena, n * 2);
                for (long i = 0; i < n; i++) {
                    data.set(U16_LE, 2 * i, (short) (Float.floatToIntBits((float) random.nextDouble(-2, 2)) >>> 16));
                }
                yield WeightMatrix.bf16(data, rows, cols);
            }
            case Q8_0, PERMUTED_Q8_0 -> {
                MemorySegment data = unaligned(arena, n / 32 * 34);
                for (long block = 0; block < n / 32; block++) {
                    data.set(U16_LE, block * 34, Float.floatToFloat16((float) random.nextDouble(0.001, 0.05)));
                    for (int j = 0; j < 32; j++) {
                        data.set(ValueLayout.JAVA_BYTE, block * 34 + 2 + j, (byte) random.nextInt(-128, 128));
                    }
                }
                WeightMatrix q8 = WeightMatrix.q8_0(data, rows, cols);
                yield type == Type.Q8_0 ? q8 : q8.withRowOrder(reversed(rows));
            }
            case FP8_BLOCKS_128, FP8_BLOCKS_3X32 -> {
                int blockRows = type == Type.FP8_BLOCKS_128 ? 128 : 3;
                int blockCols = type == Type.FP8_BLOCKS_128 ? 128 : 32;
                yield WeightMatrix.fp8Blocks(fp8Codes(arena, n, random), rows, cols,
                        fp8Scales(Math.ceilDiv(rows, blockRows) * Math.ceilDiv(cols, blockCols), random), blockRows, blockCols);
            }
        };
    }

    /** Random E4M3 codes, every one but the two NaNs, one byte past an aligned start. */
    static MemorySegment fp8Codes(Arena arena, long n, SplittableRandom random)
    {
        MemorySegment data = unaligned(arena, n);
        for (long i = 0; i < n; i++) {
            int code = random.nextInt(256);
            data.set(ValueLayout.JAVA_BYTE, i, (byte) ((code & 0x7f) == 0x7f ? code ^ 1 : code));
        }
        return data;
    }

    /** Block scales as DeepSeek-V3's are (a block's amax / 448), of both signs' weights around 0.01 to 1. */
    static float[] fp8Scales(int n, SplittableRandom random)
    {
        float[] scales = new float[n];
        for (int i = 0; i < n; i++) {
            scales[i] = (float) (random.nextDouble(0.01, 1) / 448);
        }
        return scales;
    }

    private static MemorySegment unaligned(Arena arena, long bytes)
    {
        return arena.allocate(bytes + 1, 64).asSlice(1, bytes);
    }

    private static int[] reversed(int rows)
    {
        int[] order = new int[rows];
        for (int r = 0; r < rows; r++) {
            order[r] = rows - 1 - r;
        }
        return order;
    }

    private static float[] random(int n, long seed)
    {
        SplittableRandom random = new SplittableRandom(seed);
        float[] values = new float[n];
        for (int i = 0; i < n; i++) {
            values[i] = (float) random.nextDouble(-1, 1);
        }
        return values;
    }

    /** The matrix as the F32 values it stands for: what a checkpoint dequantized on load would hold. */
    private static float[] expansion(WeightMatrix w)
    {
        float[] values = new float[w.rows() * w.cols()];
        for (int r = 0; r < w.rows(); r++) {
            w.readRow(r, values, r * w.cols());
        }
        return values;
    }

    @Test
    void everyF16AndBf16BitPatternConvertsExactly()
    {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment data = arena.allocate(2 * 65536);
            for (int bits = 0; bits < 65536; bits++) {
                data.set(U16_LE, 2L * bits, (short) bits);
            }
            float[] f16 = new float[65536];
            float[] bf16 = new float[65536];
            WeightMatrix.f16(data, 1, 65536).readRow(0, f16, 0);
            WeightMatrix.bf16(data, 1, 65536).readRow(0, bf16, 0);
            for (int bits = 0; bits < 65536; bits++) {
                float half = Float.float16ToFloat((short) bits);
                if (Float.isNaN(half)) {
                    assertThat(f16[bits]).as("F16 %04x", bits).isNaN();
                }
                else {
                    assertThat(Float.floatToRawIntBits(f16[bits])).as("F16 %04x", bits).isEqualTo(Float.floatToRawIntBits(half));
                }
                assertThat(Float.floatToRawIntBits(bf16[bits])).as("BF16 %04x", bits).isEqualTo(bits << 16);
            }
        }
    }

    /**
     * An F16 row product converts in its lanes where it can: over every finite F16 bit pattern (subnormals, both zeros, the
     * largest values) it is the F32 product of the row's expansion bit for bit; a row with an infinity or a NaN takes the
     * converted row, with the same result as the expansion's product.
     */
    @Test
    void anF16RowProductOverEveryBitPatternIsTheProductOfItsExpansion()
    {
        int finite = 0;
        short[] patterns = new short[65536];
        short[] specials = new short[2048];
        int special = 0;
        for (int bits = 0; bits < 65536; bits++) {
            if ((bits & 0x7c00) == 0x7c00) {
                specials[special++] = (short) bits;
            }
            else {
                patterns[finite++] = (short) bits;
            }
        }
        try (Arena arena = Arena.ofConfined()) {
            // row 0: every finite pattern, shuffled by a seed; row 1: the same with one infinity or NaN in place of each 997th
            int cols = finite;
            MemorySegment data = unaligned(arena, 2L * 2 * cols);
            SplittableRandom random = new SplittableRandom(3);
            for (int i = cols - 1; i > 0; i--) {
                int j = random.nextInt(i + 1);
                short t = patterns[i];
                patterns[i] = patterns[j];
                patterns[j] = t;
            }
            for (int i = 0; i < cols; i++) {
                data.set(U16_LE, 2L * i, patterns[i]);
                data.set(U16_LE, 2L * (cols + i), i % 997 == 0 ? specials[(i / 997) % special] : patterns[i]);
            }
            WeightMatrix w = WeightMatrix.f16(data, 2, cols);
            float[] expanded = expansion(w);
            // small inputs: the largest F16 values times them stay far from overflow
            float[] x = random(cols, 4);
            for (int i = 0; i < cols; i++) {
                x[i] *= 1e-3f;
            }
            float finiteSum = w.dot(0, x, 0, new float[cols]);
            assertThat(Float.isFinite(finiteSum)).isTrue();
            assertThat(Float.floatToRawIntBits(finiteSum)).isEqualTo(Float.floatToRawIntBits(Kernels.dot(expanded, 0, x, 0, cols)));
            float withSpecials = w.dot(1, x, 0, new float[cols]);
            float expected = Kernels.dot(expanded, cols, x, 0, cols);
            assertThat(Float.isNaN(withSpecials)).isEqualTo(Float.isNaN(expected));
            if (!Float.isNaN(expected)) {
                assertThat(Float.floatToRawIntBits(withSpecials)).isEqualTo(Float.floatToRawIntBits(expected));
            }
        }
    }

    @Test
    void aQ8BlockReadsAsItsScaleTimesItsBytes()
    {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment data = arena.allocate(34 * 2);
            float[] expected = new float[64];
            for (int block = 0; block < 2; block++) {
                data.set(U16_LE, 34L * block, Float.floatToFloat16(block == 0 ? 0.5f : -0.25f));
                for (int j = 0; j < 32; j++) {
                    int q = j == 0 ? -128 : j == 31 ? 127 : j - 16;
                    data.set(ValueLayout.JAVA_BYTE, 34L * block + 2 + j, (byte) q);
                    expected[block * 32 + j] = (block == 0 ? 0.5f : -0.25f) * q;
                }
            }
            float[] row = new float[64];
            WeightMatrix.q8_0(data, 1, 64).readRow(0, row, 0);
            assertThat(row).containsExactly(expected);
            assertThat(row[0]).isEqualTo(-64f);
            assertThat(row[63]).isEqualTo(-31.75f);
        }
    }

    @ParameterizedTest
    @EnumSource(Type.class)
    void aRowProductIsCloseToTheExactProductOfTheStoredValues(Type type)
    {
        try (Arena arena = Arena.ofConfined()) {
            for (int cols : LENGTHS) {
                if (type.blocked() && cols % 32 != 0) {
                    continue;
                }
                WeightMatrix w = matrix(type, arena, 3, cols, cols);
                float[] x = random(cols + 5, 100 + cols);
                float[] row = new float[cols];
                for (int r = 0; r < 3; r++) {
                    w.readRow(r, row, 0);
                    double exact = 0;
                    double magnitude = 0;
                    for (int i = 0; i < cols; i++) {
                        exact += (double) row[i] * x[5 + i];
                        magnitude += Math.abs((double) row[i] * x[5 + i]);
                    }
                    // F32 accumulation: within a few ulps of the sum of magnitudes per term
                    assertThat((double) w.dot(r, x, 5, new float[cols])).as("%s cols %d row %d", type, cols, r)
                            .isCloseTo(exact, within(1e-6 * magnitude + 1e-30));
                }
            }
        }
    }

    @ParameterizedTest
    @EnumSource(Type.class)
    void aRowProductIsBitIdenticalToTheF32ProductOfTheRowsExpansion(Type type)
    {
        try (Arena arena = Arena.ofConfined()) {
            for (int cols : LENGTHS) {
                if (type.blocked() && cols % 32 != 0) {
                    continue;
                }
                WeightMatrix w = matrix(type, arena, 5, cols, 7 * cols);
                float[] expanded = expansion(w);
                float[] x = random(cols + 3, cols);
                for (int r = 0; r < 5; r++) {
                    assertThat(w.dot(r, x, 3, new float[cols])).as("%s cols %d row %d", type, cols, r)
                            .isEqualTo(Kernels.dot(expanded, r * cols, x, 3, cols));
                }
            }
        }
    }

    /**
     * Decode's one-token products and prefill's two-by-two tiles, odd row and token counts included, on one thread or
     * several: every output equals the F32 dot of the row's expansion with that token, bit for bit.
     */
    @ParameterizedTest
    @EnumSource(Type.class)
    void aMatmulIsBitIdenticalWhateverTheTokensTheTileAndTheThreads(Type type)
    {
        int rows = 301;
        int cols = type.blocked() ? 288 : 261;
        int tokens = 71;
        // shared: the pool's threads read the matrix
        try (Arena arena = Arena.ofShared(); ForkJoinPool pool = new ForkJoinPool(3)) {
            WeightMatrix w = matrix(type, arena, rows, cols, 11);
            float[] expanded = expansion(w);
            float[] x = random(tokens * cols, 12);
            float[] expected = new float[tokens * rows];
            for (int t = 0; t < tokens; t++) {
                for (int r = 0; r < rows; r++) {
                    expected[t * rows + r] = Kernels.dot(expanded, r * cols, x, t * cols, cols);
                }
            }
            float[] sequential = new float[tokens * rows];
            float[] parallel = new float[tokens * rows];
            Kernels.matmul(null, sequential, 0, rows, w, x, 0, cols, tokens);
            Kernels.matmul(pool, parallel, 0, rows, w, x, 0, cols, tokens);
            assertThat(sequential).isEqualTo(expected);
            assertThat(parallel).isEqualTo(expected);
            for (int t : new int[] {0, 17, tokens - 1}) {
                float[] one = new float[rows];
                Kernels.matmul(pool, one, 0, rows, w, x, t * cols, cols, 1);
                for (int r = 0; r < rows; r++) {
                    assertThat(one[r]).as("token %d row %d", t, r).isEqualTo(expected[t * rows + r]);
                }
            }
            float[] three = new float[3 * rows];
            Kernels.matmul(null, three, 0, rows, w, x, 5 * cols, cols, 3);
            for (int i = 0; i < three.length; i++) {
                assertThat(three[i]).isEqualTo(expected[5 * rows + i]);
            }
        }
    }

    /**
     * Q8_0 quantized from F32 weights as ggml does it ({@code d} = the block's amax / 127 rounded to F16, {@code q = round(w / d)})
     * is a different product from the F32 one, off by at most the quantization error: each weight moves by at most
     * {@code d/2} (plus 127 times d's own F16 rounding), so the product by at most {@code sum(d/2 * |x|)}, with a relative 1e-6
     * for the F32 accumulation.
     */
    @Test
    void aQ8ProductOfQuantizedF32WeightsStaysWithinTheQuantizationError()
    {
        int rows = 64;
        int cols = 512;
        float[] original = random(rows * cols, 21);
        float[] x = random(cols, 22);
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment data = arena.allocate((long) rows * cols / 32 * 34);
            float[] scales = new float[rows * cols / 32];
            for (int block = 0; block < scales.length; block++) {
                float amax = 0;
                for (int j = 0; j < 32; j++) {
                    amax = Math.max(amax, Math.abs(original[block * 32 + j]));
                }
                short d = Float.floatToFloat16(amax / 127);
                scales[block] = Float.float16ToFloat(d);
                data.set(U16_LE, 34L * block, d);
                for (int j = 0; j < 32; j++) {
                    long q = Math.round(original[block * 32 + j] / scales[block]);
                    data.set(ValueLayout.JAVA_BYTE, 34L * block + 2 + j, (byte) Math.clamp(q, -128, 127));
                }
            }
            WeightMatrix q8 = WeightMatrix.q8_0(data, rows, cols);
            for (int r = 0; r < rows; r++) {
                double exact = 0;
                double bound = 0;
                for (int i = 0; i < cols; i++) {
                    float d = scales[(r * cols + i) / 32];
                    exact += (double) original[r * cols + i] * x[i];
                    bound += (d / 2 + 127 * Math.ulp(d)) * Math.abs(x[i]) + 1e-6 * Math.abs(original[r * cols + i] * x[i]);
                }
                float product = q8.dot(r, x, 0, new float[cols]);
                assertThat((double) product).as("row %d", r).isCloseTo(exact, within(bound));
                assertThat(product).as("quantization changes the product").isNotEqualTo(Kernels.dot(original, r * cols, x, 0, cols));
            }
        }
    }

    @Test
    void aRowOrderReadsTheRowsItNamesAndRefusesWhatIsNoPermutation()
    {
        float[] values = {1, 2, 3, 4, 5, 6};
        WeightMatrix w = WeightMatrix.f32(values, 3, 2).withRowOrder(new int[] {2, 0, 1});
        float[] row = new float[2];
        w.readRow(0, row, 0);
        assertThat(row).containsExactly(5, 6);
        assertThat(w.dot(1, new float[] {10, 1}, 0, new float[2])).isEqualTo(12f);
        assertThat(w.elementType()).isEqualTo("F32");
        WeightMatrix plain = WeightMatrix.f32(values, 3, 2);
        assertThatThrownBy(() -> plain.withRowOrder(new int[] {0, 0, 1})).hasMessageContaining("is not a permutation of 0..2");
        assertThatThrownBy(() -> plain.withRowOrder(new int[] {0, 1})).hasMessage("a row order of 2 rows for a matrix of 3");
    }

    @Test
    void dataOfTheWrongSizeOrShapeIsRefusedWithBothSizes()
    {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment data = arena.allocate(100);
            assertThatThrownBy(() -> WeightMatrix.f32(data, 5, 4))
                    .hasMessage("a 5 x 4 F32 matrix is 80 bytes, the data has 100");
            assertThatThrownBy(() -> WeightMatrix.q8_0(data, 2, 48))
                    .hasMessage("a Q8_0 matrix has rows of whole 32-value blocks; 48 columns are not");
            assertThatThrownBy(() -> WeightMatrix.bf16(data, 0, 50))
                    .hasMessage("a weight matrix needs positive dimensions, was 0 x 50");
            assertThatThrownBy(() -> WeightMatrix.f32(new float[6], 4, 2, 2))
                    .hasMessage("a 2 x 2 matrix at offset 4 does not fit in 6 values");
        }
    }
}
