package io.handoff.core.model;

import io.handoff.core.model.activation.QuantizedInput;
import io.handoff.core.model.activation.ActivationFormat;
import java.lang.foreign.MemorySegment;

/**
 * A matrix in one of ggml's block formats over the file's mapping: each row a run of whole blocks, decoded to its
 * exact F32 values (as ggml decodes them) into the caller's scratch, then multiplied in {@link Kernels#dot}'s order,
 * so the product equals that of the F32 expansion bit for bit, whatever the batch or the thread count ({@link #activations}
 * says what the input is rounded to first).
 */
record BlockMatrix(MemorySegment data, int rows, int cols, BlockFormat format, ActivationFormat activations)
        implements WeightMatrix
{
    @Override
    public WeightMatrix withActivations(ActivationFormat format)
    {
        if (cols % format.block() != 0) {
            throw new IllegalArgumentException("a " + this.format + " matrix of " + cols + " columns cannot take " + format + " inputs (blocks of " + format.block() + ")");
        }
        return new BlockMatrix(data, rows, cols, this.format, format);
    }

    @Override
    public float dot(int row, float[] x, int xOff, float[] scratch)
    {
        readRow(row, scratch, 0);
        return Kernels.dot(scratch, 0, x, xOff, cols);
    }

    @Override
    public void readRow(int row, float[] out, int outOff)
    {
        int blocks = cols / format.blockElements();
        long base = (long) row * blocks * format.blockBytes();
        for (int block = 0; block < blocks; block++) {
            format.decode(data, base + (long) block * format.blockBytes(), out, outOff + block * format.blockElements());
        }
    }

    @Override
    public BlockFormat codeFormat()
    {
        return format;
    }

    @Override
    public void decodeCodes(int row, BlockCodes codes, int slot)
    {
        codes.decode(data, row, slot);
    }

    @Override
    public float dotCodes(int row, QuantizedInput x, BlockCodes codes)
    {
        return switch (format) {
            case Q8_0, Q4_0, Q4_K, Q5_K, Q6_K -> codes.dotRow(data, row, x);
            default -> WeightMatrix.super.dotCodes(row, x, codes);
        };
    }

    @Override
    public String elementType()
    {
        return format.name();
    }

    @Override
    public long byteSize()
    {
        return data.byteSize();
    }
}
