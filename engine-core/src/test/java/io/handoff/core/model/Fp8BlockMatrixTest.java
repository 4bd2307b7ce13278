package io.handoff.core.model;

import org.junit.jupiter.api.Test;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.SplittableRandom;
import java.util.stream.IntStream;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class Fp8BlockMatrixTest
{
    @Test
    void everyE4m3CodeDecodesAsItsSignExponentAndMantissa()
    {
        for (int code = 0; code < 256; code++) {
            double expected = E4m3Reference.value(code);
            float decoded = Fp8BlockMatrix.e4m3((byte) code);
            if (E4m3Reference.isNan(code)) {
                assertThat(decoded).as("code %02x", code).isNaN();
            }
            else {
                assertThat((double) decoded).as("code %02x", code).isEqualTo(expected);
                assertThat(Float.floatToRawIntBits(decoded)).as("sign of code %02x", code)
                        .isEqualTo(Float.floatToRawIntBits((float) expected));
            }
        }
        assertThat(Fp8BlockMatrix.e4m3((byte) 0x7e)).isEqualTo(448f);
        assertThat(Fp8BlockMatrix.e4m3((byte) 0x01)).isEqualTo(0x1p-9f);
        assertThat(Fp8BlockMatrix.e4m3((byte) 0x08)).isEqualTo(0x1p-6f);
        assertThat(Float.floatToRawIntBits(Fp8BlockMatrix.e4m3((byte) 0x80))).isEqualTo(Float.floatToRawIntBits(-0f));
    }

    /**
     * The 254 numbers, rotated along 8 rows so that each one reaches both the product's lanes and its scalar tail, read with
     * a scale of 1 (so exactly) and with a scale of 3 (so rounded once, as the definition says).
     */
    @Test
    void everyNumberCodeReadsTheSameInTheLanesAndInTheTail()
    {
        int cols = 254;
        int rows = 8;
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment data = arena.allocate((long) rows * cols);
            int[] codes = IntStream.range(0, 256).filter(c -> !E4m3Reference.isNan(c)).toArray();
            for (int r = 0; r < rows; r++) {
                for (int i = 0; i < cols; i++) {
                    data.set(ValueLayout.JAVA_BYTE, (long) r * cols + i, (byte) codes[(i + 37 * r) % cols]);
                }
            }
            for (float scale : new float[] {1f, 3f, 0x1p-8f}) {
                WeightMatrix w = WeightMatrix.fp8Blocks(data, rows, cols, new float[] {scale}, rows, 256);
                float[] row = new float[cols];
                for (int r = 0; r < rows; r++) {
                    w.readRow(r, row, 0);
                    for (int i = 0; i < cols; i++) {
                        float expected = (float) E4m3Reference.value(codes[(i + 37 * r) % cols]) * scale;
                        assertThat(Float.floatToRawIntBits(row[i])).as("scale %s row %d col %d", scale, r, i)
                                .isEqualTo(Float.floatToRawIntBits(expected));
                    }
                }
            }
        }
    }

    /** Each element's value is its code times its own block's scale: blocks of 2 x 32 over a 5 x 70 matrix, the last ones partial. */
    @Test
    void eachElementIsScaledByItsOwnBlock()
    {
        int rows = 5;
        int cols = 70;
        SplittableRandom random = new SplittableRandom(3);
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment data = WeightMatrixTest.fp8Codes(arena, (long) rows * cols, random);
            float[] scales = new float[3 * 3];
            for (int i = 0; i < scales.length; i++) {
                scales[i] = (1 << i) / 4f;
            }
            WeightMatrix w = WeightMatrix.fp8Blocks(data, rows, cols, scales, 2, 32);
            float[] row = new float[cols];
            for (int r = 0; r < rows; r++) {
                w.readRow(r, row, 0);
                for (int c = 0; c < cols; c++) {
                    int code = data.get(ValueLayout.JAVA_BYTE, (long) r * cols + c) & 0xff;
                    assertThat((double) row[c]).as("(%d, %d)", r, c).isEqualTo(E4m3Reference.value(code) * (1 << (r / 2 * 3 + c / 32)) / 4);
                }
            }
            assertThat(w.elementType()).isEqualTo("F8_E4M3");
            assertThat(w.byteSize()).isEqualTo(rows * cols + 4 * 9);
        }
    }

    @Test
    void nanCodesAreRefusedNamingTheElement()
    {
        try (Arena arena = Arena.ofConfined()) {
            for (int nan : new int[] {0x7f, 0xff}) {
                MemorySegment data = arena.allocate(3 * 100);
                data.set(ValueLayout.JAVA_BYTE, 2 * 100 + 97, (byte) nan);
                assertThatThrownBy(() -> WeightMatrix.fp8Blocks(data, 3, 100, new float[] {1f}, 128, 128))
                        .hasMessage("FP8 element (2, 97) is the E4M3 NaN code 0x" + Integer.toHexString(nan) + "; a weight must be a number");
            }
        }
    }

    @Test
    void scalesBlocksAndSizesThatDoNotFitAreRefused()
    {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment data = arena.allocate(200 * 130);
            assertThatThrownBy(() -> WeightMatrix.fp8Blocks(data, 200, 130, new float[2 * 1], 128, 128))
                    .hasMessage("a 200 x 130 FP8 matrix in 128 x 128 blocks has 2 x 2 scales, 2 were given");
            assertThatThrownBy(() -> WeightMatrix.fp8Blocks(data, 200, 130, new float[4], 128, 96))
                    .hasMessageContaining("an FP8 block of 128 x 96 is not supported");
            assertThatThrownBy(() -> WeightMatrix.fp8Blocks(data, 200, 130, new float[] {1, 1, Float.NaN, 1}, 128, 128))
                    .hasMessage("the scale of FP8 block (1, 0) is NaN; every block's scale must be a number below 128.0 in magnitude "
                            + "(a block's largest weight is its scale times 448)");
            assertThatThrownBy(() -> WeightMatrix.fp8Blocks(data, 200, 130, new float[] {1, 1, 1, -128f}, 128, 128))
                    .hasMessageStartingWith("the scale of FP8 block (1, 1) is -128.0;");
            assertThatThrownBy(() -> WeightMatrix.fp8Blocks(data, 100, 130, new float[2], 128, 128))
                    .hasMessage("a 100 x 130 F8_E4M3 matrix is 13000 bytes, the data has 26000");
        }
    }
}
