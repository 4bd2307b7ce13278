package io.handoff.core.model.gguf;

import java.lang.foreign.MemorySegment;
import java.nio.file.Path;
import java.util.Arrays;

import static java.util.Objects.requireNonNull;

/**
 * One tensor of a GGUF file. {@code dims} are ggml's {@code ne}, fastest-varying first, so a matrix
 * of {@code dims [ne0, ne1]} is, row-major, {@code ne1} rows of {@code ne0}: Hugging Face's
 * {@code [ne1, ne0]}. {@code data} is the tensor's slice of the mapped file, exactly its bytes.
 *
 * @param offset where the data starts, relative to the file's aligned data section
 */
public record GgufTensor(Path file, String name, GgufTensorType type, long[] dims, long offset, MemorySegment data)
{
    public GgufTensor
    {
        requireNonNull(file, "file is null");
        requireNonNull(name, "name is null");
        requireNonNull(type, "type is null");
        dims = dims.clone();
        requireNonNull(data, "data is null");
    }

    @Override
    public long[] dims()
    {
        return dims.clone();
    }

    public long elements()
    {
        return Arrays.stream(dims).reduce(1, Math::multiplyExact);
    }

    /** The dims in Hugging Face order, slowest first: {@code [ne1, ne0]} for a matrix. */
    public long[] rowMajorShape()
    {
        long[] shape = new long[dims.length];
        for (int i = 0; i < dims.length; i++) {
            shape[i] = dims[dims.length - 1 - i];
        }
        return shape;
    }

    /**
     * Index {@code index} of the slowest dimension (a matrix of a stack of them, as llama.cpp stacks experts), over the
     * same bytes. Every type the engine reads keeps a row's blocks within the row, so the slices split the bytes evenly.
     */
    public GgufTensor slice(int index)
    {
        if (dims.length < 2) {
            throw new IllegalArgumentException(file + ": tensor '" + name + "' has " + dims.length + " dimension(s); only a stack of at least "
                    + "two can be sliced");
        }
        long count = dims[dims.length - 1];
        if (index < 0 || index >= count) {
            throw new IllegalArgumentException(file + ": tensor '" + name + "' stacks " + count + ", there is no [" + index + "]");
        }
        long bytes = data.byteSize() / count;
        return new GgufTensor(file, name + "[" + index + "]", type, Arrays.copyOf(dims, dims.length - 1), offset + index * bytes,
                data.asSlice(index * bytes, bytes));
    }

    /** Every element as F32, row-major (ne[0] fastest), dequantized. */
    public float[] toFloats()
    {
        long count = elements();
        if (count > Integer.MAX_VALUE - 8) {
            throw new IllegalArgumentException(file + ": tensor '" + name + "' has " + count
                    + " elements, more than one Java array holds; the engine cannot load it as F32");
        }
        return type.toFloats(data, (int) count);
    }

    @Override
    public boolean equals(Object o)
    {
        return o instanceof GgufTensor t && file.equals(t.file) && name.equals(t.name) && type == t.type
                && Arrays.equals(dims, t.dims) && offset == t.offset;
    }

    @Override
    public int hashCode()
    {
        return name.hashCode() * 31 + Arrays.hashCode(dims);
    }

    @Override
    public String toString()
    {
        return "GgufTensor[" + name + " " + type + " " + Arrays.toString(dims) + " @" + offset + "]";
    }
}
