package io.handoff.core.model;

import io.handoff.core.model.activation.QuantizedInput;
import io.handoff.core.model.activation.ActivationFormat;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

import static java.util.Objects.requireNonNull;

/**
 * A linear layer's {@code [rows, cols]} row-major matrix ({@code [out, in]}) in the element type it is stored in,
 * usually straight over a checkpoint's mapped bytes, never dequantized as a whole. Every element type here
 * converts to F32 exactly (F16, BF16, and a Q8_0 value {@code d * q}, which needs at most 19 significant bits; a
 * block-scaled FP8 value is defined as its F32 product {@code e4m3 * scale}), and {@link #dot} converts (in the product's lanes, or a row at a time where that runs faster) and then
 * multiplies-adds in {@link Kernels#dot}'s order. So a matrix gives
 * bit for bit the results its F32 expansion gives, and the element type changes only how many bytes a
 * product reads.
 *
 * <p>A mapped matrix reads its segment for as long as the model runs: whoever owns the mapping keeps it open
 * until the transformer is closed.
 */
public sealed interface WeightMatrix
        permits F32Matrix, F16Matrix, Bf16Matrix, Q8Matrix, BlockMatrix, Fp8BlockMatrix, PermutedRows
{
    int rows();

    int cols();

    /**
     * Row {@code row} times {@code x[xOff .. xOff + cols)}, in {@link Kernels#dot}'s reduction order on the row's exact F32
     * values. {@code scratch} holds at least {@code cols} floats the product may overwrite (a type whose conversion runs
     * faster on its own converts the row there first).
     */
    float dot(int row, float[] x, int xOff, float[] scratch);

    /** Row {@code row}'s values, exactly converted to F32, into {@code out[outOff .. outOff + cols)}. */
    void readRow(int row, float[] out, int outOff);

    /** The stored element type, for logs: {@code F32}, {@code F16}, {@code BF16}, {@code Q8_0}, {@code F8_E4M3}. */
    String elementType();

    /**
     * What the matrix's input is rounded to before the product: {@link ActivationFormat#F32} (as it is) unless the matrix
     * multiplies as llama.cpp's integer kernels do (see {@link #withActivations}).
     */
    default ActivationFormat activations()
    {
        return ActivationFormat.F32;
    }

    /**
     * This matrix with its input rounded to {@code format} before each product, as llama.cpp rounds it for this weight
     * type; {@link ActivationFormat#F32} multiplies the exact input (the product of the F32 expansion).
     */
    default WeightMatrix withActivations(ActivationFormat format)
    {
        if (format != ActivationFormat.F32) {
            throw new IllegalArgumentException("a " + elementType() + " matrix multiplies its input as it is; only block-quantized matrices round it");
        }
        return this;
    }

    /** The block format whose integer codes {@link #decodeCodes} writes: a block-quantized matrix's own. */
    default BlockFormat codeFormat()
    {
        throw new UnsupportedOperationException("a " + elementType() + " matrix has no integer codes");
    }

    /** Row {@code row} as integer codes and block scales ({@link BlockCodes}) into slot {@code slot} of {@code codes}. */
    default void decodeCodes(int row, BlockCodes codes, int slot)
    {
        throw new UnsupportedOperationException("a " + elementType() + " matrix has no integer codes");
    }

    /** Row {@code row} times token 0 of {@code x} in {@link QuantizedKernels}' order; {@code codes} is scratch for the row. */
    default float dotCodes(int row, QuantizedInput x, BlockCodes codes)
    {
        decodeCodes(row, codes, 0);
        return QuantizedKernels.dot(codes, 0, x, 0);
    }

    /** The bytes the matrix reads (a mapped matrix's share of the file). */
    long byteSize();

    /** A view whose row {@code r} is this matrix's row {@code order[r]}: a checkpoint's row permutation undone without a copy. */
    default WeightMatrix withRowOrder(int[] order)
    {
        return new PermutedRows(this, order);
    }

    /** An F32 matrix over {@code values}, which the matrix shares (neither it nor the transformer writes to them). */
    static WeightMatrix f32(float[] values, int rows, int cols)
    {
        return f32(values, 0, rows, cols);
    }

    /** An F32 matrix over {@code values[offset .. offset + rows * cols)}. */
    static WeightMatrix f32(float[] values, int offset, int rows, int cols)
    {
        requireNonNull(values, "values is null");
        long elements = checkShape(rows, cols);
        if (offset < 0 || offset + elements > values.length) {
            throw new IllegalArgumentException("a " + rows + " x " + cols + " matrix at offset " + offset + " does not fit in "
                    + values.length + " values");
        }
        return new F32Matrix(MemorySegment.ofArray(values).asSlice(4L * offset, 4 * elements), rows, cols);
    }

    /** Little-endian F32 values, as GGUF and safetensors store them. */
    static WeightMatrix f32(MemorySegment data, int rows, int cols)
    {
        return new F32Matrix(sized(data, rows, cols, 4 * checkShape(rows, cols), "F32"), rows, cols);
    }

    /** Little-endian IEEE binary16 values. */
    static WeightMatrix f16(MemorySegment data, int rows, int cols)
    {
        return new F16Matrix(sized(data, rows, cols, 2 * checkShape(rows, cols), "F16"), rows, cols);
    }

    /** Little-endian bfloat16 values: the high halves of F32s. */
    static WeightMatrix bf16(MemorySegment data, int rows, int cols)
    {
        return new Bf16Matrix(sized(data, rows, cols, 2 * checkShape(rows, cols), "BF16"), rows, cols);
    }

    /** ggml's Q8_0: along each row, blocks of an F16 scale {@code d} and 32 signed bytes {@code q}, each value {@code d * q}. */
    static WeightMatrix q8_0(MemorySegment data, int rows, int cols)
    {
        long elements = checkShape(rows, cols);
        if (cols % Q8Matrix.BLOCK != 0) {
            throw new IllegalArgumentException("a Q8_0 matrix has rows of whole 32-value blocks; " + cols + " columns are not");
        }
        return new Q8Matrix(sized(data, rows, cols, elements / Q8Matrix.BLOCK * Q8Matrix.BLOCK_BYTES, "Q8_0"), rows, cols, ActivationFormat.F32);
    }

    /** ggml's block format {@code format}: each row a run of whole blocks (32 values for the legacy formats, 256 for the K-quants). */
    static WeightMatrix blocks(BlockFormat format, MemorySegment data, int rows, int cols)
    {
        requireNonNull(format, "format is null");
        long elements = checkShape(rows, cols);
        if (cols % format.blockElements() != 0) {
            throw new IllegalArgumentException("a " + format + " matrix has rows of whole " + format.blockElements() + "-value blocks; " + cols
                    + " columns are not");
        }
        return new BlockMatrix(sized(data, rows, cols, elements / format.blockElements() * format.blockBytes(), format.name()), rows, cols, format,
                ActivationFormat.F32);
    }

    /**
     * FP8 E4M3 bytes, row-major, with one F32 scale per {@code blockRows x blockCols} block ({@code scales} row-major,
     * {@code ceil(rows / blockRows) x ceil(cols / blockCols)} of them, copied), each value the F32 product of its code and its
     * block's scale: DeepSeek-V3's {@code weight} with its {@code weight_scale_inv}. The block width must be a power of two from 32;
     * a NaN code, or a scale that is not a number below 128 in magnitude, is refused naming its position.
     */
    static WeightMatrix fp8Blocks(MemorySegment data, int rows, int cols, float[] scales, int blockRows, int blockCols)
    {
        long elements = checkShape(rows, cols);
        requireNonNull(scales, "scales is null");
        if (blockRows < 1 || blockCols < Fp8BlockMatrix.STEP || Integer.bitCount(blockCols) != 1) {
            throw new IllegalArgumentException("an FP8 block of " + blockRows + " x " + blockCols + " is not supported: the rows must be "
                    + "positive and the width a power of two from " + Fp8BlockMatrix.STEP + " (DeepSeek-V3's blocks are 128 x 128)");
        }
        int scaleRows = Math.ceilDiv(rows, blockRows);
        int scaleCols = Math.ceilDiv(cols, blockCols);
        if ((long) scaleRows * scaleCols != scales.length) {
            throw new IllegalArgumentException("a " + rows + " x " + cols + " FP8 matrix in " + blockRows + " x " + blockCols + " blocks has "
                    + scaleRows + " x " + scaleCols + " scales, " + scales.length + " were given");
        }
        for (int i = 0; i < scales.length; i++) {
            if (!(Math.abs(scales[i]) < Fp8BlockMatrix.MAX_SCALE)) {
                throw new IllegalArgumentException("the scale of FP8 block (" + i / scaleCols + ", " + i % scaleCols + ") is " + scales[i]
                        + "; every block's scale must be a number below " + Fp8BlockMatrix.MAX_SCALE + " in magnitude (a block's largest "
                        + "weight is its scale times 448)");
            }
        }
        sized(data, rows, cols, elements, "F8_E4M3");
        long nan = Fp8BlockMatrix.firstNan(data);
        if (nan >= 0) {
            throw new IllegalArgumentException("FP8 element (" + nan / cols + ", " + nan % cols + ") is the E4M3 NaN code 0x"
                    + Integer.toHexString(data.get(ValueLayout.JAVA_BYTE, nan) & 0xff) + "; a weight must be a number");
        }
        return new Fp8BlockMatrix(data, rows, cols, scales.clone(), blockRows, blockCols);
    }

    private static long checkShape(int rows, int cols)
    {
        if (rows < 1 || cols < 1) {
            throw new IllegalArgumentException("a weight matrix needs positive dimensions, was " + rows + " x " + cols);
        }
        return (long) rows * cols;
    }

    private static MemorySegment sized(MemorySegment data, int rows, int cols, long bytes, String type)
    {
        requireNonNull(data, "data is null");
        if (data.byteSize() != bytes) {
            throw new IllegalArgumentException("a " + rows + " x " + cols + " " + type + " matrix is " + bytes + " bytes, the data has "
                    + data.byteSize());
        }
        return data;
    }
}
