package io.handoff.core.model;

import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.IntVector;
import jdk.incubator.vector.ShortVector;
import jdk.incubator.vector.VectorOperators;
import jdk.incubator.vector.VectorSpecies;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;

/** IEEE binary16 weights over little-endian bytes, widened to F32 in the lanes of each product. */
record F16Matrix(MemorySegment data, int rows, int cols)
        implements WeightMatrix
{
    private static final VectorSpecies<Float> F = FloatVector.SPECIES_256;
    private static final VectorSpecies<Integer> I = IntVector.SPECIES_256;
    private static final VectorSpecies<Short> S = ShortVector.SPECIES_128;
    private static final int L = F.length();
    private static final ByteOrder LE = ByteOrder.LITTLE_ENDIAN;
    private static final ValueLayout.OfShort U16_LE = ValueLayout.JAVA_SHORT_UNALIGNED.withOrder(LE);

    /**
     * Eight F16 values at {@code at} as F32, exactly as {@link Float#float16ToFloat} gives them. The magnitude's bits
     * moved up 13 places are an F32 whose exponent is 112 too small, for subnormals as for normals, so one exact
     * multiplication by 2^112 fixes both; an all-ones exponent (infinity, NaN) becomes F32's all-ones one instead.
     */
    static FloatVector lanes(MemorySegment data, long at)
    {
        IntVector h = (IntVector) ShortVector.fromMemorySegment(S, data, at, LE).convertShape(VectorOperators.S2I, I, 0);
        IntVector magnitude = h.and(0x7fff).lanewise(VectorOperators.LSHL, 13);
        IntVector bits = magnitude.reinterpretAsFloats().mul(0x1p112f).reinterpretAsInts()
                .blend(magnitude.or(0x7f800000), h.and(0x7c00).eq(0x7c00));
        return bits.or(h.and(0x8000).lanewise(VectorOperators.LSHL, 16)).reinterpretAsFloats();
    }

    @Override
    public float dot(int row, float[] x, int xOff)
    {
        long base = (long) row * cols * 2;
        FloatVector acc0 = FloatVector.zero(F);
        FloatVector acc1 = FloatVector.zero(F);
        FloatVector acc2 = FloatVector.zero(F);
        FloatVector acc3 = FloatVector.zero(F);
        int i = 0;
        for (int upper = cols - cols % (4 * L); i < upper; i += 4 * L) {
            long at = base + 2L * i;
            acc0 = lanes(data, at).fma(FloatVector.fromArray(F, x, xOff + i), acc0);
            acc1 = lanes(data, at + 2 * L).fma(FloatVector.fromArray(F, x, xOff + i + L), acc1);
            acc2 = lanes(data, at + 4 * L).fma(FloatVector.fromArray(F, x, xOff + i + 2 * L), acc2);
            acc3 = lanes(data, at + 6 * L).fma(FloatVector.fromArray(F, x, xOff + i + 3 * L), acc3);
        }
        for (int upper = cols - cols % L; i < upper; i += L) {
            acc0 = lanes(data, base + 2L * i).fma(FloatVector.fromArray(F, x, xOff + i), acc0);
        }
        float sum = Kernels.sumLanes(acc0, acc1, acc2, acc3);
        for (; i < cols; i++) {
            sum = Math.fma(Float.float16ToFloat(data.get(U16_LE, base + 2L * i)), x[xOff + i], sum);
        }
        return sum;
    }

    @Override
    public void readRow(int row, float[] out, int outOff)
    {
        long base = (long) row * cols * 2;
        int i = 0;
        for (int upper = cols - cols % L; i < upper; i += L) {
            lanes(data, base + 2L * i).intoArray(out, outOff + i);
        }
        for (; i < cols; i++) {
            out[outOff + i] = Float.float16ToFloat(data.get(U16_LE, base + 2L * i));
        }
    }

    @Override
    public String elementType()
    {
        return "F16";
    }

    @Override
    public long byteSize()
    {
        return data.byteSize();
    }
}
