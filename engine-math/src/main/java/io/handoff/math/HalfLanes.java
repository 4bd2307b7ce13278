package io.handoff.math;

import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.IntVector;
import jdk.incubator.vector.VectorOperators;

/**
 * IEEE binary16 values widened to F32 in vector lanes, which JDK 25's Vector API has no conversion for: the F16 weights'
 * products and the attention tiles of an F16 KV pool share it, so both read a half the same way.
 *
 * <p>{@code (h & 0x7fff) << 13} read as an F32 is the value times 2^-112 (a normal's exponent moves into F32's field, a
 * subnormal's significand stays where it was), so a 2^112 scale gives it exactly, the sign kept in place. That is
 * wrong only for an infinity or a NaN (exponent field all ones): a caller tracks the largest {@link #magnitude} and, where
 * it reaches {@link #SPECIAL}, widens those values one by one with {@link Float#float16ToFloat}.
 */
public final class HalfLanes
{
    /** F16's exponent field all ones: a magnitude this large is an infinity or a NaN. */
    public static final int SPECIAL = 0x7c00;

    private HalfLanes() {}

    /** The halves' magnitude bits; {@code halves} holds each F16 pattern sign-extended into an int lane. */
    public static IntVector magnitude(IntVector halves)
    {
        return halves.and(0x7fff);
    }

    /** Each lane's F16 value as an F32, exact unless its {@link #magnitude} is {@link #SPECIAL} or more. */
    public static FloatVector widen(IntVector halves)
    {
        // shifted by 13, the sign extension fills bits 28 to 31: keep the sign, clear the three between it and the exponent
        return halves.lanewise(VectorOperators.LSHL, 13).and(0x8fffffff).reinterpretAsFloats().mul(0x1p112f);
    }
}
