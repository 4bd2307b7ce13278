package io.handoff.spi.attention;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/**
 * Reading and writing KV rows in either dtype. BF16 is the upper half of an F32 (round to nearest
 * even on store), so a row written and read back is the same on every backend.
 */
public final class KvRows
{
    private static final ValueLayout.OfFloat F32 = ValueLayout.JAVA_FLOAT_UNALIGNED;
    private static final ValueLayout.OfShort BF16 = ValueLayout.JAVA_SHORT_UNALIGNED;

    private KvRows() {}

    /** Loads {@code count} elements starting at {@code byteOffset} into {@code dst[dstOffset...]}. */
    public static void load(MemorySegment region, long byteOffset, KvDtype dtype, float[] dst, int dstOffset, int count)
    {
        if (dtype == KvDtype.F32) {
            MemorySegment.copy(region, F32, byteOffset, dst, dstOffset, count);
            return;
        }
        for (int i = 0; i < count; i++) {
            dst[dstOffset + i] = bf16ToFloat(region.get(BF16, byteOffset + 2L * i));
        }
    }

    public static void store(MemorySegment region, long byteOffset, KvDtype dtype, float[] src, int srcOffset, int count)
    {
        if (dtype == KvDtype.F32) {
            MemorySegment.copy(src, srcOffset, region, F32, byteOffset, count);
            return;
        }
        for (int i = 0; i < count; i++) {
            region.set(BF16, byteOffset + 2L * i, floatToBf16(src[srcOffset + i]));
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

    /** Rounds a float to what a BF16 store and load would give. */
    public static float roundToBf16(float value)
    {
        return bf16ToFloat(floatToBf16(value));
    }
}
