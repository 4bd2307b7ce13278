package io.handoff.core.model;

import org.junit.jupiter.api.Test;

import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;

import static org.assertj.core.api.Assertions.assertThat;

/** Each block format on crafted blocks, against values worked out by hand from ggml's definition of the format. */
class BlockFormatTest
{
    private static final short HALF = 0x3800;    // 0.5
    private static final short ONE = 0x3C00;
    private static final short TWO = 0x4000;
    private static final short MINUS_ONE = (short) 0xBC00;
    private static final short QUARTER = 0x3400;
    private static final short F16_MAX = 0x7BFF; // 65504

    @Test
    void q4_0IsTheCodeLessEightTimesD()
    {
        ByteBuffer block = block(BlockFormat.Q4_0).putShort(0, HALF).put(2, (byte) 0x1F).put(2 + 15, (byte) 0xF0);

        float[] y = decode(BlockFormat.Q4_0, block);

        assertThat(y[0]).isEqualTo(3.5f);     // low nibble 15
        assertThat(y[16]).isEqualTo(-3.5f);   // high nibble 1
        assertThat(y[15]).isEqualTo(-4f);     // low nibble 0
        assertThat(y[31]).isEqualTo(3.5f);
        assertThat(y[7]).isEqualTo(-4f);
    }

    @Test
    void q4_1IsTheCodeTimesDPlusM()
    {
        ByteBuffer block = block(BlockFormat.Q4_1).putShort(0, TWO).putShort(2, MINUS_ONE).put(4 + 3, (byte) 0xA5);

        float[] y = decode(BlockFormat.Q4_1, block);

        assertThat(y[3]).isEqualTo(9f);       // 5 x 2 - 1
        assertThat(y[19]).isEqualTo(19f);     // 10 x 2 - 1
        assertThat(y[0]).isEqualTo(-1f);
    }

    @Test
    void q5_0TakesItsFifthBitsFromTheHighWord()
    {
        ByteBuffer block = block(BlockFormat.Q5_0).putShort(0, ONE).putInt(2, 0x80000001).put(6, (byte) 0x0F).put(6 + 15, (byte) 0xF0);

        float[] y = decode(BlockFormat.Q5_0, block);

        assertThat(y[0]).isEqualTo(15f);      // 15 | bit 0 -> 31, less 16
        assertThat(y[16]).isEqualTo(-16f);    // 0, bit 16 clear
        assertThat(y[15]).isEqualTo(-16f);    // 0, bit 15 clear
        assertThat(y[31]).isEqualTo(15f);     // 15 | bit 31 -> 31
    }

    @Test
    void q5_1AddsItsMinimum()
    {
        ByteBuffer block = block(BlockFormat.Q5_1).putShort(0, QUARTER).putShort(2, ONE).putInt(4, 1 << 20).put(8 + 4, (byte) 0x32);

        float[] y = decode(BlockFormat.Q5_1, block);

        assertThat(y[4]).isEqualTo(1.5f);     // 2 x 0.25 + 1
        assertThat(y[20]).isEqualTo(5.75f);   // (3 | 16) x 0.25 + 1: bit 20 is value 20's fifth bit
    }

    @Test
    void q4_kReadsItsSixBitScalesAndMinsForBothHalvesOfTheScaleBytes()
    {
        ByteBuffer block = kScales(block(BlockFormat.Q4_K).putShort(0, ONE).putShort(2, HALF), 4);
        block.put(16, (byte) 0x0F).put(16 + 64 + 7, (byte) 0xB0);

        float[] y = decode(BlockFormat.Q4_K, block);

        assertThat(y[0]).isEqualTo(44f);      // sub-block 0: scale 3, min 2: 3 x 15 - 0.5 x 2
        assertThat(y[32]).isEqualTo(-2f);     // sub-block 1: scale 1, min 4: 0 - 0.5 x 4
        assertThat(y[167]).isEqualTo(618.5f); // sub-block 5 (scale 0x3A, min 0x27 from the packed high bits): 58 x 11 - 0.5 x 39
    }

    @Test
    void theScalesAndMinsUnpackedEightAtATimeAreGgmlsOneByOne()
    {
        java.util.SplittableRandom random = new java.util.SplittableRandom(17);
        for (int n = 0; n < 10_000; n++) {
            // some patterns mostly ones or all ones in places, so that every bit's reach is seen at both values
            long low = n % 3 == 0 ? ~(random.nextLong() & random.nextLong()) : random.nextLong();
            int high = n % 5 == 0 ? -1 : random.nextInt();
            long scales = BlockCodes.kScales(low, high);
            long mins = BlockCodes.kMins(low, high);
            for (int j = 0; j < 8; j++) {
                assertThat((int) (scales >>> 8 * j) & 0xFF).as("scale %d of %x %x", j, low, high).isEqualTo(BlockFormat.scale(low, high, j));
                assertThat((int) (mins >>> 8 * j) & 0xFF).as("min %d of %x %x", j, low, high).isEqualTo(BlockFormat.minimum(low, high, j));
            }
        }
    }

    @Test
    void q5_kAddsSixteenWhereItsHighBitIsSet()
    {
        ByteBuffer block = kScales(block(BlockFormat.Q5_K).putShort(0, ONE).putShort(2, HALF), 4);
        block.put(16 + 7, (byte) 0x20).put(48 + 64 + 7, (byte) 0xB0).put(48, (byte) 0x0F).put(16, (byte) 0x01);

        float[] y = decode(BlockFormat.Q5_K, block);

        assertThat(y[167]).isEqualTo(1546.5f); // group 2's high nibble, mask 2 << 4: (11 + 16) x 58 - 19.5
        assertThat(y[0]).isEqualTo(92f);       // (15 + 16) x 3 - 1: group 0's low nibble, mask 1
        assertThat(y[32]).isEqualTo(-2f);      // mask 2 of qh[0] clear
    }

    @Test
    void q6_kCombinesNibblesAndBitPairsWithSignedScales()
    {
        ByteBuffer block = block(BlockFormat.Q6_K).putShort(208, HALF);
        block.put(3, (byte) 0x5A).put(35, (byte) 0xC1).put(128 + 3, (byte) 0xE4);
        block.put(192, (byte) -3).put(194, (byte) 7).put(196, (byte) -128).put(198, (byte) 127);
        block.put(64 + 20, (byte) 0x01).put(128 + 32 + 20, (byte) 0x03).put(192 + 8 + 1, (byte) 2);

        float[] y = decode(BlockFormat.Q6_K, block);

        assertThat(y[3]).isEqualTo(33f);       // 0.5 x -3 x (10 - 32)
        assertThat(y[35]).isEqualTo(-52.5f);   // 0.5 x 7 x (17 - 32)
        assertThat(y[67]).isEqualTo(-320f);    // 0.5 x -128 x (37 - 32)
        assertThat(y[99]).isEqualTo(1778f);    // 0.5 x 127 x (60 - 32)
        assertThat(y[148]).isEqualTo(17f);     // second half, sub-block 1: 0.5 x 2 x (49 - 32)
        assertThat(y[0]).isEqualTo(48f);       // 0.5 x -3 x -32
    }

    @Test
    void extremeScalesAndMinsDecodeAsF32ArithmeticInGgmlsOrder()
    {
        ByteBuffer k = block(BlockFormat.Q4_K).putShort(0, F16_MAX).putShort(2, F16_MAX).put(4, (byte) 63).put(8, (byte) 63).put(16, (byte) 0x0F);
        float[] y = decode(BlockFormat.Q4_K, k);
        assertThat(y[0]).isEqualTo(65504f * 63 * 15 - 65504f * 63);

        ByteBuffer six = block(BlockFormat.Q6_K).putShort(208, F16_MAX).put(192, (byte) -128);
        assertThat(decode(BlockFormat.Q6_K, six)[0]).isEqualTo(65504f * -128 * -32);

        ByteBuffer four = block(BlockFormat.Q4_1).putShort(0, F16_MAX).putShort(2, (short) 0xFBFF).put(4, (byte) 0x0F);
        assertThat(decode(BlockFormat.Q4_1, four)[0]).isEqualTo(15 * 65504f - 65504f);
    }

    @Test
    void aBlockMatrixMultipliesAsItsF32Expansion()
    {
        int rows = 3;
        int cols = 512;
        byte[] bytes = new byte[rows * cols / 256 * BlockFormat.Q4_K.blockBytes()];
        java.util.Random random = new java.util.Random(7);
        random.nextBytes(bytes);
        ByteBuffer buffer = ByteBuffer.wrap(bytes).order(ByteOrder.LITTLE_ENDIAN);
        for (int block = 0; block < rows * cols / 256; block++) {
            // finite scales: F16 exponents below the top
            buffer.putShort(block * 144, (short) (0x2000 + random.nextInt(0x1000)));
            buffer.putShort(block * 144 + 2, (short) (0x2000 + random.nextInt(0x1000)));
        }
        WeightMatrix blocks = WeightMatrix.blocks(BlockFormat.Q4_K, MemorySegment.ofArray(bytes), rows, cols);
        float[] expansion = BlockFormat.Q4_K.decodeAll(MemorySegment.ofArray(bytes), rows * cols);
        WeightMatrix f32 = WeightMatrix.f32(expansion, rows, cols);
        float[] x = new float[cols];
        for (int i = 0; i < cols; i++) {
            x[i] = random.nextFloat() - 0.5f;
        }
        float[] scratch = new float[cols];
        for (int row = 0; row < rows; row++) {
            assertThat(Float.floatToRawIntBits(blocks.dot(row, x, 0, scratch)))
                    .isEqualTo(Float.floatToRawIntBits(f32.dot(row, x, 0, new float[cols])));
        }
        assertThat(blocks.elementType()).isEqualTo("Q4_K");
    }

    /** Sub-blocks 0, 1 and 5 of a K-quant's 12 scale bytes at {@code at}: scale 3 min 2, scale 1 min 4, scale 0x3A min 0x27. */
    private static ByteBuffer kScales(ByteBuffer block, int at)
    {
        return block.put(at, (byte) 0x03).put(at + 4, (byte) 0x02).put(at + 1, (byte) 0xC1).put(at + 5, (byte) 0x84).put(at + 9, (byte) 0x7A);
    }

    private static ByteBuffer block(BlockFormat format)
    {
        return ByteBuffer.allocate(format.blockBytes()).order(ByteOrder.LITTLE_ENDIAN);
    }

    private static float[] decode(BlockFormat format, ByteBuffer block)
    {
        return format.decodeAll(MemorySegment.ofArray(block.array()), format.blockElements());
    }
}
