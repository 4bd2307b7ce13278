package io.handoff.core.model;

import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.VectorSpecies;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;

/** F32 weights over a heap array's segment or a file's mapped, little-endian bytes. */
record F32Matrix(MemorySegment data, int rows, int cols)
        implements WeightMatrix
{
    private static final VectorSpecies<Float> F = FloatVector.SPECIES_256;
    private static final int L = F.length();
    private static final ByteOrder LE = ByteOrder.LITTLE_ENDIAN;
    private static final ValueLayout.OfFloat F32_LE = ValueLayout.JAVA_FLOAT_UNALIGNED.withOrder(LE);

    @Override
    public float dot(int row, float[] x, int xOff, float[] scratch)
    {
        long base = (long) row * cols * 4;
        FloatVector acc0 = FloatVector.zero(F);
        FloatVector acc1 = FloatVector.zero(F);
        FloatVector acc2 = FloatVector.zero(F);
        FloatVector acc3 = FloatVector.zero(F);
        int i = 0;
        for (int upper = cols - cols % (4 * L); i < upper; i += 4 * L) {
            long at = base + 4L * i;
            acc0 = FloatVector.fromMemorySegment(F, data, at, LE).fma(FloatVector.fromArray(F, x, xOff + i), acc0);
            acc1 = FloatVector.fromMemorySegment(F, data, at + 4 * L, LE).fma(FloatVector.fromArray(F, x, xOff + i + L), acc1);
            acc2 = FloatVector.fromMemorySegment(F, data, at + 8 * L, LE).fma(FloatVector.fromArray(F, x, xOff + i + 2 * L), acc2);
            acc3 = FloatVector.fromMemorySegment(F, data, at + 12 * L, LE).fma(FloatVector.fromArray(F, x, xOff + i + 3 * L), acc3);
        }
        for (int upper = cols - cols % L; i < upper; i += L) {
            acc0 = FloatVector.fromMemorySegment(F, data, base + 4L * i, LE).fma(FloatVector.fromArray(F, x, xOff + i), acc0);
        }
        // Kernels.dot's lane tree
        FloatVector acc = acc0.add(acc1).add(acc2.add(acc3));
        float sum = ((acc.lane(0) + acc.lane(1)) + (acc.lane(2) + acc.lane(3))) + ((acc.lane(4) + acc.lane(5)) + (acc.lane(6) + acc.lane(7)));
        for (; i < cols; i++) {
            sum = Math.fma(data.get(F32_LE, base + 4L * i), x[xOff + i], sum);
        }
        return sum;
    }

    @Override
    public void readRow(int row, float[] out, int outOff)
    {
        MemorySegment.copy(data, F32_LE, (long) row * cols * 4, out, outOff, cols);
    }

    @Override
    public String elementType()
    {
        return "F32";
    }

    @Override
    public long byteSize()
    {
        return data.byteSize();
    }
}
