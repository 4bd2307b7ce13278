package io.handoff.core.model;

import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.IntVector;
import jdk.incubator.vector.ShortVector;
import jdk.incubator.vector.VectorOperators;
import jdk.incubator.vector.VectorSpecies;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;

/** bfloat16 weights over little-endian bytes: each the high half of an F32, widened in the lanes of each product. */
record Bf16Matrix(MemorySegment data, int rows, int cols)
        implements WeightMatrix
{
    private static final VectorSpecies<Float> F = FloatVector.SPECIES_256;
    private static final VectorSpecies<Integer> I = IntVector.SPECIES_256;
    private static final VectorSpecies<Short> S = ShortVector.SPECIES_128;
    private static final int L = F.length();
    private static final ByteOrder LE = ByteOrder.LITTLE_ENDIAN;
    private static final ValueLayout.OfShort U16_LE = ValueLayout.JAVA_SHORT_UNALIGNED.withOrder(LE);

    /** Eight BF16 values at {@code at} as F32: each moved into the high half (the sign extension shifts out). */
    static FloatVector lanes(MemorySegment data, long at)
    {
        IntVector h = (IntVector) ShortVector.fromMemorySegment(S, data, at, LE).convertShape(VectorOperators.S2I, I, 0);
        return h.lanewise(VectorOperators.LSHL, 16).reinterpretAsFloats();
    }

    static float toFloat(short bits)
    {
        return Float.intBitsToFloat(bits << 16);
    }

    @Override
    public float dot(int row, float[] x, int xOff, float[] scratch)
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
        // Kernels.dot's lane tree
        FloatVector acc = acc0.add(acc1).add(acc2.add(acc3));
        float sum = ((acc.lane(0) + acc.lane(1)) + (acc.lane(2) + acc.lane(3))) + ((acc.lane(4) + acc.lane(5)) + (acc.lane(6) + acc.lane(7)));
        for (; i < cols; i++) {
            sum = Math.fma(toFloat(data.get(U16_LE, base + 2L * i)), x[xOff + i], sum);
        }
        return sum;
    }

    @Override
    public void readRow(int row, float[] out, int outOff)
    {
        // in lanes: C2 does not vectorize the plain loop (the int-to-float reinterpretation)
        long base = (long) row * cols * 2;
        int i = 0;
        for (int upper = cols - cols % L; i < upper; i += L) {
            lanes(data, base + 2L * i).intoArray(out, outOff + i);
        }
        for (; i < cols; i++) {
            out[outOff + i] = toFloat(data.get(U16_LE, base + 2L * i));
        }
    }

    @Override
    public String elementType()
    {
        return "BF16";
    }

    @Override
    public long byteSize()
    {
        return data.byteSize();
    }
}
