package io.handoff.core.model;

import io.handoff.math.HalfLanes;
import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.IntVector;
import jdk.incubator.vector.ShortVector;
import jdk.incubator.vector.VectorOperators;
import jdk.incubator.vector.VectorShuffle;
import jdk.incubator.vector.VectorSpecies;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;

/**
 * IEEE binary16 weights over little-endian bytes. On a machine with 16-lane vectors, a row product whose length is whole
 * 32-value steps converts in its lanes ({@link #dotInLanes}); otherwise, and for a row that holds an infinity or a NaN, it
 * converts the row to F32 first ({@link Float#float16ToFloat}, which C2 compiles to F16C's {@code vcvtph2ps}) and runs
 * {@link Kernels#dot}. Both are {@link Kernels#dot}'s sums of the same values in the same order: the same bits.
 */
record F16Matrix(MemorySegment data, int rows, int cols)
        implements WeightMatrix
{
    private static final ValueLayout.OfShort U16_LE = ValueLayout.JAVA_SHORT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    private static final boolean WIDE = FloatVector.SPECIES_PREFERRED.vectorBitSize() >= 512;
    private static final VectorSpecies<Float> G = FloatVector.SPECIES_512;
    private static final VectorSpecies<Integer> I = IntVector.SPECIES_512;
    private static final VectorSpecies<Short> S = ShortVector.SPECIES_256;
    private static final VectorShuffle<Float> SWAP_8 = VectorShuffle.fromOp(G, l -> l ^ 8);

    @Override
    public float dot(int row, float[] x, int xOff, float[] scratch)
    {
        if (WIDE && cols % 32 == 0) {
            float sum = dotInLanes(row, x, xOff);
            if (!Float.isNaN(sum)) {
                return sum;
            }
        }
        readRow(row, scratch, 0);
        return Kernels.dot(scratch, 0, x, xOff, cols);
    }

    /**
     * {@link Kernels#dot} of the row, converted sixteen values at a time in the lanes ({@link HalfLanes#widen}); the largest
     * magnitude is tracked, and a row with an infinity or a NaN answers NaN, for the caller to convert the row in full. Kernels.dot's four eight-lane accumulators are the halves of two sixteen-lane ones, folded in its order.
     */
    private float dotInLanes(int row, float[] x, int xOff)
    {
        long base = (long) row * cols * 2;
        FloatVector low = FloatVector.zero(G);
        FloatVector high = FloatVector.zero(G);
        IntVector largest = IntVector.zero(I);
        for (int i = 0; i < cols; i += 32) {
            IntVector h = (IntVector) ShortVector.fromMemorySegment(S, data, base + 2L * i, ByteOrder.LITTLE_ENDIAN)
                    .convertShape(VectorOperators.S2I, I, 0);
            largest = largest.max(HalfLanes.magnitude(h));
            low = HalfLanes.widen(h).fma(FloatVector.fromArray(G, x, xOff + i), low);
            h = (IntVector) ShortVector.fromMemorySegment(S, data, base + 2L * i + 32, ByteOrder.LITTLE_ENDIAN)
                    .convertShape(VectorOperators.S2I, I, 0);
            largest = largest.max(HalfLanes.magnitude(h));
            high = HalfLanes.widen(h).fma(FloatVector.fromArray(G, x, xOff + i + 16), high);
        }
        if (largest.reduceLanes(VectorOperators.MAX) >= HalfLanes.SPECIAL) {
            return Float.NaN;
        }
        // lanes l and l + 8 of each are Kernels.dot's acc0 and acc1 (acc2 and acc3): (acc0 + acc1) + (acc2 + acc3), then its lane tree
        FloatVector acc = low.add(low.rearrange(SWAP_8)).add(high.add(high.rearrange(SWAP_8)));
        return ((acc.lane(0) + acc.lane(1)) + (acc.lane(2) + acc.lane(3))) + ((acc.lane(4) + acc.lane(5)) + (acc.lane(6) + acc.lane(7)));
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
