package io.handoff.spi.attention;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/**
 * Reading and writing KV rows in any {@link KvDtype}. BF16 is the upper half of an F32 and F16 is
 * IEEE binary16, both rounded to nearest even on store, so a row written and read back is the same on
 * every backend.
 */
public final class KvRows
{
    private static final ValueLayout.OfFloat F32 = ValueLayout.JAVA_FLOAT_UNALIGNED;
    private static final ValueLayout.OfShort HALF = ValueLayout.JAVA_SHORT_UNALIGNED;

    private KvRows() {}

    /** Loads {@code count} elements starting at {@code byteOffset} into {@code dst[dstOffset...]}. */
    public static void load(MemorySegment region, long byteOffset, KvDtype dtype, float[] dst, int dstOffset, int count)
    {
        if (dtype == KvDtype.F32) {
            MemorySegment.copy(region, F32, byteOffset, dst, dstOffset, count);
            return;
        }
        if (dtype == KvDtype.F16) {
            for (int i = 0; i < count; i++) {
                dst[dstOffset + i] = Float.float16ToFloat(region.get(HALF, byteOffset + 2L * i));
            }
            return;
        }
        for (int i = 0; i < count; i++) {
            dst[dstOffset + i] = bf16ToFloat(region.get(HALF, byteOffset + 2L * i));
        }
    }

    public static void store(MemorySegment region, long byteOffset, KvDtype dtype, float[] src, int srcOffset, int count)
    {
        if (dtype == KvDtype.F32) {
            MemorySegment.copy(src, srcOffset, region, F32, byteOffset, count);
            return;
        }
        if (dtype == KvDtype.F16) {
            for (int i = 0; i < count; i++) {
                region.set(HALF, byteOffset + 2L * i, Float.floatToFloat16(src[srcOffset + i]));
            }
            return;
        }
        for (int i = 0; i < count; i++) {
            region.set(HALF, byteOffset + 2L * i, floatToBf16(src[srcOffset + i]));
        }
    }

    public static float bf16ToFloat(short bits)
    {
        return Float.intBitsToFloat((bits & 0xffff) << 16);
    }

    public static short floatToBf16(float value)
    {
        int bits = Float.floatToRawIntBits(value);
        if (Float.isNaN(value)) {
            return (short) ((bits >>> 16) | 0x40);
        }
        int rounding = 0x7fff + ((bits >>> 16) & 1);
        return (short) ((bits + rounding) >>> 16);
    }

    /**
     * Rounds {@code count} values at {@code values[offset..]} in place to what a store and load in {@code dtype}
     * would give: how the engine hands attention its queries in the pool's element type, so that every
     * operand of a score is in that type (as a 16-bit GPU kernel takes them) and accumulation is the kernel's.
     */
    public static void round(float[] values, int offset, int count, KvDtype dtype)
    {
        switch (dtype) {
            case F32 -> {}
            case BF16 -> {
                for (int i = offset; i < offset + count; i++) {
                    values[i] = roundToBf16(values[i]);
                }
            }
            case F16 -> {
                for (int i = offset; i < offset + count; i++) {
                    values[i] = Float.float16ToFloat(Float.floatToFloat16(values[i]));
                }
            }
        }
    }

    /** Rounds a float to what a BF16 store and load would give. */
    public static float roundToBf16(float value)
    {
        return bf16ToFloat(floatToBf16(value));
    }
}
