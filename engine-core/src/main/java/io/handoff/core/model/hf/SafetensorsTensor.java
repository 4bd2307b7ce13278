package io.handoff.core.model.hf;

import java.lang.foreign.MemorySegment;
import java.util.Arrays;

import static java.util.Objects.requireNonNull;

/**
 * One validated tensor of a {@link SafetensorsFile}: its bytes are exactly {@code product(shape) *
 * dtype.bytes()} of the file's mapping, valid until the file is closed.
 *
 * @param file the file's name, for error messages
 */
public record SafetensorsTensor(String file, String name, TensorDtype dtype, int[] shape, MemorySegment data)
{
    public SafetensorsTensor
    {
        requireNonNull(file, "file is null");
        requireNonNull(name, "name is null");
        requireNonNull(dtype, "dtype is null");
        requireNonNull(data, "data is null");
        shape = shape.clone();
        if (data.byteSize() != elements(shape) * dtype.bytes()) {
            throw new IllegalArgumentException(file + ": tensor '" + name + "' has " + data.byteSize() + " bytes, its shape "
                    + Arrays.toString(shape) + " of " + dtype + " needs " + elements(shape) * dtype.bytes());
        }
    }

    @Override
    public int[] shape()
    {
        return shape.clone();
    }

    public long elements()
    {
        return elements(shape);
    }

    /** The values as row-major F32, converted exactly from F16 or BF16. */
    public float[] toFloats()
    {
        long count = elements();
        if (count > Integer.MAX_VALUE - 8) {
            throw new IllegalArgumentException(file + ": tensor '" + name + "' has " + count
                    + " elements, more than one Java array holds; it cannot be read as one F32 array");
        }
        return dtype.toFloats(data, (int) count);
    }

    static long elements(int[] shape)
    {
        long count = 1;
        for (int dim : shape) {
            count = Math.multiplyExact(count, dim);
        }
        return count;
    }

    @Override
    public boolean equals(Object other)
    {
        return other instanceof SafetensorsTensor t && file.equals(t.file) && name.equals(t.name) && dtype == t.dtype
                && Arrays.equals(shape, t.shape) && data.equals(t.data);
    }

    @Override
    public int hashCode()
    {
        return (file.hashCode() * 31 + name.hashCode()) * 31 + Arrays.hashCode(shape);
    }

    @Override
    public String toString()
    {
        return file + ":" + name + " " + dtype + Arrays.toString(shape);
    }
}
