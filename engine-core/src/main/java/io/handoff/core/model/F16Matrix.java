package io.handoff.core.model;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;

/**
 * IEEE binary16 weights over little-endian bytes. A product converts the row to F32 first and then runs
 * {@link Kernels#dot}: C2 compiles the plain {@link Float#float16ToFloat} loop to the CPU's own conversion
 * (F16C's {@code vcvtph2ps}), several times faster than the same conversion in Vector API lanes, which
 * JDK 25 has no operator for.
 */
record F16Matrix(MemorySegment data, int rows, int cols)
        implements WeightMatrix
{
    private static final ValueLayout.OfShort U16_LE = ValueLayout.JAVA_SHORT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);

    @Override
    public float dot(int row, float[] x, int xOff, float[] scratch)
    {
        readRow(row, scratch, 0);
        return Kernels.dot(scratch, 0, x, xOff, cols);
    }

    @Override
    public void readRow(int row, float[] out, int outOff)
    {
        long base = (long) row * cols * 2;
        for (int i = 0; i < cols; i++) {
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
