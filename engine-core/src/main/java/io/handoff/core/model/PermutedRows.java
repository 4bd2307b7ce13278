package io.handoff.core.model;

import io.handoff.core.model.activation.QuantizedInput;
import io.handoff.core.model.activation.ActivationFormat;
import java.util.Arrays;

import static java.util.Objects.requireNonNull;

/** {@code matrix} with its rows reordered: row {@code r} is {@code matrix}'s row {@code order[r]}. */
record PermutedRows(WeightMatrix matrix, int[] order)
        implements WeightMatrix
{
    PermutedRows
    {
        requireNonNull(matrix, "matrix is null");
        order = requireNonNull(order, "order is null").clone();
        boolean[] seen = new boolean[matrix.rows()];
        if (order.length != matrix.rows()) {
            throw new IllegalArgumentException("a row order of " + order.length + " rows for a matrix of " + matrix.rows());
        }
        for (int row : order) {
            if (row < 0 || row >= seen.length || seen[row]) {
                throw new IllegalArgumentException("row order " + Arrays.toString(Arrays.copyOf(order, Math.min(16, order.length)))
                        + "... is not a permutation of 0.." + (seen.length - 1) + " (row " + row + ")");
            }
            seen[row] = true;
        }
    }

    @Override
    public int rows()
    {
        return matrix.rows();
    }

    @Override
    public int cols()
    {
        return matrix.cols();
    }

    @Override
    public float dot(int row, float[] x, int xOff, float[] scratch)
    {
        return matrix.dot(order[row], x, xOff, scratch);
    }

    @Override
    public void readRow(int row, float[] out, int outOff)
    {
        matrix.readRow(order[row], out, outOff);
    }

    @Override
    public ActivationFormat activations()
    {
        return matrix.activations();
    }

    @Override
    public WeightMatrix withActivations(ActivationFormat format)
    {
        return new PermutedRows(matrix.withActivations(format), order);
    }

    @Override
    public BlockFormat codeFormat()
    {
        return matrix.codeFormat();
    }

    @Override
    public void decodeCodes(int row, BlockCodes codes, int slot)
    {
        matrix.decodeCodes(order[row], codes, slot);
    }

    @Override
    public float dotCodes(int row, QuantizedInput x, BlockCodes codes)
    {
        return matrix.dotCodes(order[row], x, codes);
    }

    @Override
    public String elementType()
    {
        return matrix.elementType();
    }

    @Override
    public long byteSize()
    {
        return matrix.byteSize();
    }

    @Override
    public int[] order()
    {
        return order.clone();
    }
}
