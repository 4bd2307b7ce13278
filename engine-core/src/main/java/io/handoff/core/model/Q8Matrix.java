package io.handoff.core.model;

import io.handoff.core.model.activation.ActivationFormat;
import io.handoff.core.model.activation.QuantizedInput;
import jdk.incubator.vector.ByteVector;
import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.VectorOperators;
import jdk.incubator.vector.VectorSpecies;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;

/**
 * ggml's Q8_0 weights: each row a run of 34-byte blocks, an F16 scale {@code d} then 32 signed bytes {@code q}.
 * A block is exactly one iteration of {@link Kernels#dot}'s main loop (four lanes of eight), so each lane
 * dequantizes {@code q * d}, which is exact in F32, and multiplies-adds as the F32 expansion would.
 */
record Q8Matrix(MemorySegment data, int rows, int cols, ActivationFormat activations)
        implements WeightMatrix
{
    static final int BLOCK = 32;
    static final int BLOCK_BYTES = 34;
    private static final VectorSpecies<Float> F = FloatVector.SPECIES_256;
    private static final VectorSpecies<Byte> B = ByteVector.SPECIES_64;
    private static final int L = F.length();
    private static final ByteOrder LE = ByteOrder.LITTLE_ENDIAN;
    private static final ValueLayout.OfShort U16_LE = ValueLayout.JAVA_SHORT_UNALIGNED.withOrder(LE);

    /** Eight values of a block: the signed bytes at {@code at} times the block's scale. */
    private static FloatVector lanes(MemorySegment data, long at, FloatVector scale)
    {
        return ((FloatVector) ByteVector.fromMemorySegment(B, data, at, LE).convertShape(VectorOperators.B2F, F, 0)).mul(scale);
    }

    private static FloatVector scale(MemorySegment data, long block)
    {
        return FloatVector.broadcast(F, Float.float16ToFloat(data.get(U16_LE, block)));
    }

    @Override
    public float dot(int row, float[] x, int xOff, float[] scratch)
    {
        long base = (long) row * (cols / BLOCK) * BLOCK_BYTES;
        FloatVector acc0 = FloatVector.zero(F);
        FloatVector acc1 = FloatVector.zero(F);
        FloatVector acc2 = FloatVector.zero(F);
        FloatVector acc3 = FloatVector.zero(F);
        for (int i = 0; i < cols; i += BLOCK) {
            long at = base + (long) (i / BLOCK) * BLOCK_BYTES;
            FloatVector d = scale(data, at);
            acc0 = lanes(data, at + 2, d).fma(FloatVector.fromArray(F, x, xOff + i), acc0);
            acc1 = lanes(data, at + 2 + L, d).fma(FloatVector.fromArray(F, x, xOff + i + L), acc1);
            acc2 = lanes(data, at + 2 + 2 * L, d).fma(FloatVector.fromArray(F, x, xOff + i + 2 * L), acc2);
            acc3 = lanes(data, at + 2 + 3 * L, d).fma(FloatVector.fromArray(F, x, xOff + i + 3 * L), acc3);
        }
        // Kernels.dot's lane tree
        FloatVector acc = acc0.add(acc1).add(acc2.add(acc3));
        float sum = ((acc.lane(0) + acc.lane(1)) + (acc.lane(2) + acc.lane(3))) + ((acc.lane(4) + acc.lane(5)) + (acc.lane(6) + acc.lane(7)));
        return sum;
    }

    @Override
    public void readRow(int row, float[] out, int outOff)
    {
        // in lanes, a block per iteration as in dot: C2 does not vectorize the plain loop
        long base = (long) row * (cols / BLOCK) * BLOCK_BYTES;
        for (int i = 0; i < cols; i += BLOCK) {
            long at = base + (long) (i / BLOCK) * BLOCK_BYTES;
            FloatVector d = scale(data, at);
            lanes(data, at + 2, d).intoArray(out, outOff + i);
            lanes(data, at + 2 + L, d).intoArray(out, outOff + i + L);
            lanes(data, at + 2 + 2 * L, d).intoArray(out, outOff + i + 2 * L);
            lanes(data, at + 2 + 3 * L, d).intoArray(out, outOff + i + 3 * L);
        }
    }

    @Override
    public WeightMatrix withActivations(ActivationFormat format)
    {
        return new Q8Matrix(data, rows, cols, format);
    }

    @Override
    public BlockFormat codeFormat()
    {
        return BlockFormat.Q8_0;
    }

    @Override
    public void decodeCodes(int row, BlockCodes codes, int slot)
    {
        codes.decode(data, row, slot);
    }

    @Override
    public float dotCodes(int row, QuantizedInput x, BlockCodes codes)
    {
        return codes.dotRow(data, row, x);
    }

    @Override
    public String elementType()
    {
        return "Q8_0";
    }

    @Override
    public long byteSize()
    {
        return data.byteSize();
    }
}
