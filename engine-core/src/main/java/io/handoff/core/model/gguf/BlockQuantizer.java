package io.handoff.core.model.gguf;

import io.handoff.core.model.BlockFormat;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;

/**
 * Writes F32 values as ggml blocks ({@link BlockFormat}), byte for byte in ggml's layouts, so that llama.cpp and
 * {@link BlockFormat#decode} read them back the same. The legacy formats follow ggml's reference quantizers; the
 * K-quants choose each sub-block's scale and min from its range (ggml's reference also searches nearby scales for a
 * smaller error, which this does not), then quantize the sub-block scales to 6 bits (8 for Q6_K) against the
 * super-block's largest.
 */
public final class BlockQuantizer
{
    private BlockQuantizer() {}

    /** The bytes of {@code n} values (whole blocks) from {@code x[off..]} in {@code format}. */
    public static byte[] encode(BlockFormat format, float[] x, int off, int n)
    {
        if (n % format.blockElements() != 0) {
            throw new IllegalArgumentException(n + " values are not whole " + format + " blocks of " + format.blockElements());
        }
        ByteBuffer out = ByteBuffer.allocate(n / format.blockElements() * format.blockBytes()).order(ByteOrder.LITTLE_ENDIAN);
        for (int b = off; b < off + n; b += format.blockElements()) {
            switch (format) {
                case Q8_0 -> q8_0(x, b, out);
                case Q4_0 -> q4_0(x, b, out);
                case Q4_1 -> q4_1(x, b, out);
                case Q5_0 -> q5_0(x, b, out);
                case Q5_1 -> q5_1(x, b, out);
                case Q4_K -> k4(x, b, out, 15);
                case Q5_K -> k4(x, b, out, 31);
                case Q6_K -> q6_k(x, b, out);
            }
        }
        return out.array();
    }

    private static short f16(float value)
    {
        return Float.floatToFloat16(value);
    }

    private static float f16Value(float value)
    {
        return Float.float16ToFloat(Float.floatToFloat16(value));
    }

    /** ggml's nearest_int: round half to even. */
    private static int nearest(float value)
    {
        return (int) Math.rint(value);
    }

    private static void q8_0(float[] x, int b, ByteBuffer out)
    {
        float amax = 0;
        for (int j = 0; j < 32; j++) {
            amax = Math.max(amax, Math.abs(x[b + j]));
        }
        float d = amax / 127;
        float id = d != 0 ? 1 / d : 0;
        out.putShort(f16(d));
        for (int j = 0; j < 32; j++) {
            out.put((byte) (int) roundAway(x[b + j] * id));
        }
    }

    /** C's roundf: half away from zero. */
    private static float roundAway(float value)
    {
        return (float) (Math.signum(value) * Math.floor(Math.abs(value) + 0.5));
    }

    /** The value of largest magnitude, the first such, with its sign. */
    private static float signedMax(float[] x, int b, int n)
    {
        float amax = 0;
        float max = 0;
        for (int j = 0; j < n; j++) {
            float v = x[b + j];
            if (Math.abs(v) > amax) {
                amax = Math.abs(v);
                max = v;
            }
        }
        return max;
    }

    private static void q4_0(float[] x, int b, ByteBuffer out)
    {
        float d = signedMax(x, b, 32) / -8;
        float id = d != 0 ? 1 / d : 0;
        out.putShort(f16(d));
        for (int j = 0; j < 16; j++) {
            int low = Math.min(15, (int) (x[b + j] * id + 8.5f));
            int high = Math.min(15, (int) (x[b + j + 16] * id + 8.5f));
            out.put((byte) (low | (high << 4)));
        }
    }

    /** The smallest and the largest of a 32-value block. */
    private record Range(float min, float max)
    {
        static Range of(float[] x, int b)
        {
            float min = Float.POSITIVE_INFINITY;
            float max = Float.NEGATIVE_INFINITY;
            for (int j = 0; j < 32; j++) {
                min = Math.min(min, x[b + j]);
                max = Math.max(max, x[b + j]);
            }
            return new Range(min, max);
        }
    }

    private static void q4_1(float[] x, int b, ByteBuffer out)
    {
        Range range = Range.of(x, b);
        float min = range.min();
        float d = (range.max() - min) / 15;
        float id = d != 0 ? 1 / d : 0;
        out.putShort(f16(d));
        out.putShort(f16(min));
        for (int j = 0; j < 16; j++) {
            int low = Math.min(15, (int) ((x[b + j] - min) * id + 0.5f));
            int high = Math.min(15, (int) ((x[b + j + 16] - min) * id + 0.5f));
            out.put((byte) (low | (high << 4)));
        }
    }

    private static void q5_0(float[] x, int b, ByteBuffer out)
    {
        float d = signedMax(x, b, 32) / -16;
        float id = d != 0 ? 1 / d : 0;
        int[] q = new int[32];
        for (int j = 0; j < 32; j++) {
            q[j] = Math.min(31, (int) (x[b + j] * id + 16.5f));
        }
        out.putShort(f16(d));
        putFiveBits(q, out);
    }

    private static void q5_1(float[] x, int b, ByteBuffer out)
    {
        Range range = Range.of(x, b);
        float min = range.min();
        float d = (range.max() - min) / 31;
        float id = d != 0 ? 1 / d : 0;
        int[] q = new int[32];
        for (int j = 0; j < 32; j++) {
            q[j] = Math.min(31, (int) ((x[b + j] - min) * id + 0.5f));
        }
        out.putShort(f16(d));
        out.putShort(f16(min));
        putFiveBits(q, out);
    }

    /** Q5_0's and Q5_1's codes: 32 fifth bits (value j's at bit j), then the low nibbles as in Q4_0. */
    private static void putFiveBits(int[] q, ByteBuffer out)
    {
        int qh = 0;
        for (int j = 0; j < 32; j++) {
            qh |= ((q[j] >> 4) & 1) << j;
        }
        out.putInt(qh);
        for (int j = 0; j < 16; j++) {
            out.put((byte) ((q[j] & 0x0f) | ((q[j + 16] & 0x0f) << 4)));
        }
    }

    /** Q4_K ({@code levels} 15) or Q5_K (31): per 32 values an affine grid {@code d * sc * q - dmin * m}, q in [0, levels]. */
    private static void k4(float[] x, int b, ByteBuffer out, int levels)
    {
        float[] scale = new float[8];
        float[] minimum = new float[8];
        float maxScale = 0;
        float maxMin = 0;
        for (int j = 0; j < 8; j++) {
            float lo = 0;
            float hi = Float.NEGATIVE_INFINITY;
            for (int i = 0; i < 32; i++) {
                lo = Math.min(lo, x[b + 32 * j + i]);
                hi = Math.max(hi, x[b + 32 * j + i]);
            }
            scale[j] = (hi - lo) / levels;
            minimum[j] = -lo;
            maxScale = Math.max(maxScale, scale[j]);
            maxMin = Math.max(maxMin, minimum[j]);
        }
        float inverseScale = maxScale > 0 ? 63 / maxScale : 0;
        float inverseMin = maxMin > 0 ? 63 / maxMin : 0;
        int[] sc = new int[8];
        int[] m = new int[8];
        for (int j = 0; j < 8; j++) {
            sc[j] = Math.min(63, nearest(inverseScale * scale[j]));
            m[j] = Math.min(63, nearest(inverseMin * minimum[j]));
        }
        float d = f16Value(maxScale / 63);
        float dmin = f16Value(maxMin / 63);
        out.putShort(f16(d));
        out.putShort(f16(dmin));
        byte[] packed = new byte[12];
        for (int j = 0; j < 4; j++) {
            packed[j] = (byte) ((sc[j] & 63) | ((sc[j + 4] >> 4) << 6));
            packed[j + 4] = (byte) ((m[j] & 63) | ((m[j + 4] >> 4) << 6));
            packed[j + 8] = (byte) ((sc[j + 4] & 15) | ((m[j + 4] & 15) << 4));
        }
        out.put(packed);
        int[] q = new int[256];
        for (int j = 0; j < 8; j++) {
            float step = d * sc[j];
            float offset = dmin * m[j];
            for (int i = 0; i < 32; i++) {
                q[32 * j + i] = step == 0 ? 0 : Math.clamp(nearest((x[b + 32 * j + i] + offset) / step), 0, levels);
            }
        }
        if (levels == 31) {
            byte[] high = new byte[32];
            for (int group = 0; group < 4; group++) {
                for (int l = 0; l < 32; l++) {
                    high[l] |= (byte) (((q[64 * group + l] >> 4) & 1) << (2 * group));
                    high[l] |= (byte) (((q[64 * group + 32 + l] >> 4) & 1) << (2 * group + 1));
                }
            }
            out.put(high);
        }
        for (int group = 0; group < 4; group++) {
            for (int l = 0; l < 32; l++) {
                out.put((byte) ((q[64 * group + l] & 15) | ((q[64 * group + 32 + l] & 15) << 4)));
            }
        }
    }

    /** Q6_K: per 16 values a signed 8-bit scale, codes {@code q - 32} in [-32, 31]. */
    private static void q6_k(float[] x, int b, ByteBuffer out)
    {
        float[] scale = new float[16];
        float maxScale = 0;
        float maxAbs = 0;
        for (int j = 0; j < 16; j++) {
            scale[j] = signedMax(x, b + 16 * j, 16) / -32;
            if (Math.abs(scale[j]) > maxAbs) {
                maxAbs = Math.abs(scale[j]);
                maxScale = scale[j];
            }
        }
        float iscale = maxScale != 0 ? -128 / maxScale : 0;
        int[] sc = new int[16];
        for (int j = 0; j < 16; j++) {
            sc[j] = Math.clamp(nearest(iscale * scale[j]), -128, 127);
        }
        float d = iscale != 0 ? f16Value(1 / iscale) : 0;
        int[] q = new int[256];
        for (int j = 0; j < 16; j++) {
            float step = d * sc[j];
            for (int i = 0; i < 16; i++) {
                q[16 * j + i] = step == 0 ? 32 : Math.clamp(nearest(x[b + 16 * j + i] / step), -32, 31) + 32;
            }
        }
        byte[] ql = new byte[128];
        byte[] qh = new byte[64];
        for (int half = 0; half < 2; half++) {
            for (int l = 0; l < 32; l++) {
                int q1 = q[128 * half + l];
                int q2 = q[128 * half + l + 32];
                int q3 = q[128 * half + l + 64];
                int q4 = q[128 * half + l + 96];
                ql[64 * half + l] = (byte) ((q1 & 15) | ((q3 & 15) << 4));
                ql[64 * half + l + 32] = (byte) ((q2 & 15) | ((q4 & 15) << 4));
                qh[32 * half + l] = (byte) ((q1 >> 4) | ((q2 >> 4) << 2) | ((q3 >> 4) << 4) | ((q4 >> 4) << 6));
            }
        }
        out.put(ql);
        out.put(qh);
        for (int j = 0; j < 16; j++) {
            out.put((byte) sc[j]);
        }
        out.putShort(f16(d));
    }
}
