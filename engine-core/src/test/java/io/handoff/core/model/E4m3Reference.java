package io.handoff.core.model;

/**
 * FP8 E4M3 from its definition, in doubles, for tests to check the engine against: sign, 4 exponent bits of bias 7, 3
 * mantissa bits, subnormals at exponent 0, no infinities, NaN at {@code S.1111.111}.
 */
public final class E4m3Reference
{
    /** The largest finite magnitude, code {@code 0x7E}. */
    public static final double MAX = 448;

    private E4m3Reference() {}

    public static double value(int code)
    {
        int sign = (code >> 7) & 1;
        int exponent = (code >> 3) & 0xf;
        int mantissa = code & 7;
        if (exponent == 0xf && mantissa == 7) {
            return Double.NaN;
        }
        double magnitude = exponent == 0 ? mantissa / 8.0 * Math.pow(2, -6) : (1 + mantissa / 8.0) * Math.pow(2, exponent - 7);
        return sign == 1 ? -magnitude : magnitude;
    }

    public static boolean isNan(int code)
    {
        return (code & 0x7f) == 0x7f;
    }

    /** The code nearest {@code v} (the lower magnitude on a tie), {@code |v|} at most {@link #MAX}. */
    public static byte nearest(double v)
    {
        double magnitude = Math.abs(v);
        if (!(magnitude <= MAX)) {
            throw new IllegalArgumentException(v + " is outside E4M3's range of +-" + MAX);
        }
        // codes 0x00 .. 0x7E are increasing in magnitude
        int low = 0;
        int high = 0x7e;
        while (high - low > 1) {
            int mid = (low + high) >>> 1;
            if (value(mid) <= magnitude) {
                low = mid;
            }
            else {
                high = mid;
            }
        }
        int code = magnitude - value(low) <= value(high) - magnitude ? low : high;
        return (byte) (v < 0 ? code | 0x80 : code);
    }
}
