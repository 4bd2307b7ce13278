package io.handoff.core.model;

import io.handoff.core.model.activation.ActivationFormat;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;

/**
 * ggml's block-quantized weight formats, each decoded exactly as ggml's {@code dequantize_row_*} defines it: the
 * legacy formats (32 values a block: Q8_0, Q4_0, Q4_1, Q5_0, Q5_1) and the K-quants (256-value super-blocks: Q4_K, Q5_K,
 * Q6_K). A decoded value is F32 arithmetic on the block's F16 scales and integer codes, in ggml's order, so the
 * F32 expansion of a file is the same here and in ggml.
 */
public enum BlockFormat
{
    /** 32 values: F16 {@code d}, 32 signed bytes {@code q}; value {@code q * d}. */
    Q8_0(32, 34),
    /** 32 values: F16 {@code d}, 16 bytes of 4-bit codes; value {@code (q - 8) * d}. */
    Q4_0(32, 18),
    /** 32 values: F16 {@code d}, F16 {@code m}, 16 bytes of 4-bit codes; value {@code q * d + m}. */
    Q4_1(32, 20),
    /** 32 values: F16 {@code d}, 32 high bits, 16 bytes of low nibbles; value {@code (q - 16) * d}. */
    Q5_0(32, 22),
    /** 32 values: F16 {@code d}, F16 {@code m}, 32 high bits, 16 bytes of low nibbles; value {@code q * d + m}. */
    Q5_1(32, 24),
    /** 256 values: F16 {@code d}, F16 {@code dmin}, 12 bytes of 6-bit scales and mins for 8 sub-blocks of 32, 128 bytes of nibbles. */
    Q4_K(256, 144),
    /** As Q4_K, with 32 bytes of fifth bits before the nibbles. */
    Q5_K(256, 176),
    /** 256 values: 128 bytes of low nibbles, 64 bytes of high 2-bit pairs, 16 signed 8-bit scales, F16 {@code d}; value {@code d * scale * (q - 32)}. */
    Q6_K(256, 210);

    private static final ValueLayout.OfShort U16_LE = ValueLayout.JAVA_SHORT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    private static final ValueLayout.OfInt U32_LE = ValueLayout.JAVA_INT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    private static final ValueLayout.OfLong U64_LE = ValueLayout.JAVA_LONG_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);

    private final int blockElements;
    private final int blockBytes;

    BlockFormat(int blockElements, int blockBytes)
    {
        this.blockElements = blockElements;
        this.blockBytes = blockBytes;
    }

    public int blockElements()
    {
        return blockElements;
    }

    public int blockBytes()
    {
        return blockBytes;
    }

    /**
     * What llama.cpp's CPU build rounds a matrix input to for this weight type: Q8_K for the K-quants, Q8_0 for the legacy
     * formats (Q4_1 and Q5_1 take Q8_1, whose codes and scale are Q8_0's; its F16 block sum, which llama.cpp multiplies by
     * the weights' offset, is the exact sum here).
     */
    public ActivationFormat llamaCppActivations()
    {
        return blockElements == 256 ? ActivationFormat.Q8_K : ActivationFormat.Q8_0;
    }

    /** Decodes the block at byte {@code at} of {@code data} into {@code out[outOff .. outOff + blockElements)}. */
    public void decode(MemorySegment data, long at, float[] out, int outOff)
    {
        switch (this) {
            case Q8_0 -> q8_0(data, at, out, outOff);
            case Q4_0 -> q4_0(data, at, out, outOff);
            case Q4_1 -> q4_1(data, at, out, outOff);
            case Q5_0 -> q5_0(data, at, out, outOff);
            case Q5_1 -> q5_1(data, at, out, outOff);
            case Q4_K -> q4_k(data, at, out, outOff, false);
            case Q5_K -> q4_k(data, at, out, outOff, true);
            case Q6_K -> q6_k(data, at, out, outOff);
        }
    }

    /** Decodes {@code count} values (whole blocks) from the start of {@code data}. */
    public float[] decodeAll(MemorySegment data, int count)
    {
        float[] out = new float[count];
        for (int block = 0; block < count / blockElements; block++) {
            decode(data, (long) block * blockBytes, out, block * blockElements);
        }
        return out;
    }

    static float f16(MemorySegment data, long at)
    {
        return Float.float16ToFloat(data.get(U16_LE, at));
    }

    private static int u8(MemorySegment data, long at)
    {
        return data.get(ValueLayout.JAVA_BYTE, at) & 0xff;
    }

    private static void q8_0(MemorySegment data, long at, float[] out, int o)
    {
        float d = f16(data, at);
        for (int j = 0; j < 32; j++) {
            out[o + j] = data.get(ValueLayout.JAVA_BYTE, at + 2 + j) * d;
        }
    }

    private static void q4_0(MemorySegment data, long at, float[] out, int o)
    {
        float d = f16(data, at);
        for (int j = 0; j < 16; j++) {
            int q = u8(data, at + 2 + j);
            out[o + j] = ((q & 0x0f) - 8) * d;
            out[o + j + 16] = ((q >> 4) - 8) * d;
        }
    }

    private static void q4_1(MemorySegment data, long at, float[] out, int o)
    {
        float d = f16(data, at);
        float m = f16(data, at + 2);
        for (int j = 0; j < 16; j++) {
            int q = u8(data, at + 4 + j);
            out[o + j] = (q & 0x0f) * d + m;
            out[o + j + 16] = (q >> 4) * d + m;
        }
    }

    private static void q5_0(MemorySegment data, long at, float[] out, int o)
    {
        float d = f16(data, at);
        int qh = data.get(U32_LE, at + 2);
        for (int j = 0; j < 16; j++) {
            int q = u8(data, at + 6 + j);
            int high0 = ((qh >>> j) << 4) & 0x10;
            int high1 = (qh >>> (j + 12)) & 0x10;
            out[o + j] = (((q & 0x0f) | high0) - 16) * d;
            out[o + j + 16] = (((q >> 4) | high1) - 16) * d;
        }
    }

    private static void q5_1(MemorySegment data, long at, float[] out, int o)
    {
        float d = f16(data, at);
        float m = f16(data, at + 2);
        int qh = data.get(U32_LE, at + 4);
        for (int j = 0; j < 16; j++) {
            int q = u8(data, at + 8 + j);
            int high0 = ((qh >>> j) << 4) & 0x10;
            int high1 = (qh >>> (j + 12)) & 0x10;
            out[o + j] = ((q & 0x0f) | high0) * d + m;
            out[o + j + 16] = ((q >> 4) | high1) * d + m;
        }
    }

    /** Q4_K, and with {@code fifthBit} Q5_K: eight sub-blocks of 32, each with a 6-bit scale and min. */
    private static void q4_k(MemorySegment data, long at, float[] out, int o, boolean fifthBit)
    {
        float d = f16(data, at);
        float min = f16(data, at + 2);
        long scales = at + 4;
        long high = at + 16;
        long codes = fifthBit ? at + 48 : at + 16;
        int highMask1 = 1;
        int highMask2 = 2;
        for (int group = 0; group < 4; group++) {
            int sub = 2 * group;
            float d1 = d * scale(data, scales, sub);
            float m1 = min * minimum(data, scales, sub);
            float d2 = d * scale(data, scales, sub + 1);
            float m2 = min * minimum(data, scales, sub + 1);
            long q = codes + 32L * group;
            for (int l = 0; l < 32; l++) {
                int code = u8(data, q + l);
                int extra1 = fifthBit && (u8(data, high + l) & highMask1) != 0 ? 16 : 0;
                int extra2 = fifthBit && (u8(data, high + l) & highMask2) != 0 ? 16 : 0;
                out[o + 64 * group + l] = d1 * ((code & 0x0f) + extra1) - m1;
                out[o + 64 * group + 32 + l] = d2 * ((code >> 4) + extra2) - m2;
            }
            highMask1 <<= 2;
            highMask2 <<= 2;
        }
    }

    /** ggml's get_scale_min_k4: sub-block {@code j}'s 6-bit scale. */
    static int scale(MemorySegment data, long scales, int j)
    {
        return scale(data.get(U64_LE, scales), data.get(U32_LE, scales + 8), j);
    }

    /** ggml's get_scale_min_k4: sub-block {@code j}'s 6-bit min. */
    static int minimum(MemorySegment data, long scales, int j)
    {
        return minimum(data.get(U64_LE, scales), data.get(U32_LE, scales + 8), j);
    }

    /**
     * Sub-block {@code j}'s 6-bit scale from the twelve scale bytes read as little-endian {@code low} (bytes 0..7) and
     * {@code high} (8..11), so that a super-block's sixteen values cost two loads: byte {@code j} for {@code j < 4}, else the
     * low nibble of byte {@code j + 4} with the top two bits of byte {@code j - 4} above it.
     */
    static int scale(long low, int high, int j)
    {
        return j < 4 ? (int) (low >>> (8 * j)) & 63 : ((high >>> (8 * (j - 4))) & 0x0f) | (((int) (low >>> (8 * (j - 4) + 6)) & 3) << 4);
    }

    /** Sub-block {@code j}'s 6-bit min the same way: byte {@code j + 4}, else the high nibble of byte {@code j + 4} with the top bits of byte {@code j}. */
    static int minimum(long low, int high, int j)
    {
        return j < 4 ? (int) (low >>> (8 * (j + 4))) & 63 : ((high >>> (8 * (j - 4) + 4)) & 0x0f) | (((int) (low >>> (8 * j + 6)) & 3) << 4);
    }

    private static void q6_k(MemorySegment data, long at, float[] out, int o)
    {
        float d = f16(data, at + 208);
        for (int half = 0; half < 2; half++) {
            long ql = at + 64L * half;
            long qh = at + 128 + 32L * half;
            long sc = at + 192 + 8L * half;
            int base = o + 128 * half;
            for (int l = 0; l < 32; l++) {
                int is = l / 16;
                int low0 = u8(data, ql + l);
                int low32 = u8(data, ql + l + 32);
                int h = u8(data, qh + l);
                int q1 = ((low0 & 0x0f) | ((h & 3) << 4)) - 32;
                int q2 = ((low32 & 0x0f) | (((h >> 2) & 3) << 4)) - 32;
                int q3 = ((low0 >> 4) | (((h >> 4) & 3) << 4)) - 32;
                int q4 = ((low32 >> 4) | (((h >> 6) & 3) << 4)) - 32;
                out[base + l] = d * data.get(ValueLayout.JAVA_BYTE, sc + is) * q1;
                out[base + l + 32] = d * data.get(ValueLayout.JAVA_BYTE, sc + is + 2) * q2;
                out[base + l + 64] = d * data.get(ValueLayout.JAVA_BYTE, sc + is + 4) * q3;
                out[base + l + 96] = d * data.get(ValueLayout.JAVA_BYTE, sc + is + 6) * q4;
            }
        }
    }
}
