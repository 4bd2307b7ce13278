package io.handoff.core.model.gguf;

import io.handoff.core.model.BlockFormat;
import io.handoff.core.model.hf.TensorDtype;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.util.Arrays;
import java.util.Optional;
import java.util.stream.Collectors;

/**
 * The ggml tensor types the engine dequantizes, by their numbers in a GGUF file. Elements come in
 * blocks along {@code ne[0]}: one element for the float types, 32 for Q8_0 (an F16 scale {@code d}
 * then 32 signed bytes {@code q}, each element {@code d * q}) and the other legacy formats, 256 for the K-quants
 * ({@link BlockFormat}).
 */
public enum GgufTensorType
{
    F32(0, 1, 4),
    F16(1, 1, 2),
    Q4_0(2, BlockFormat.Q4_0),
    Q4_1(3, BlockFormat.Q4_1),
    Q5_0(6, BlockFormat.Q5_0),
    Q5_1(7, BlockFormat.Q5_1),
    Q8_0(8, 32, 34),
    Q4_K(12, BlockFormat.Q4_K),
    Q5_K(13, BlockFormat.Q5_K),
    Q6_K(14, BlockFormat.Q6_K),
    BF16(30, 1, 2);

    // the names ggml gives the types it has, so an error can say what a file holds
    private static final String[] GGML_NAMES = {"F32", "F16", "Q4_0", "Q4_1", "Q4_2 (removed)", "Q4_3 (removed)", "Q5_0", "Q5_1",
            "Q8_0", "Q8_1", "Q2_K", "Q3_K", "Q4_K", "Q5_K", "Q6_K", "Q8_K", "IQ2_XXS", "IQ2_XS", "IQ3_XXS", "IQ1_S", "IQ4_NL",
            "IQ3_S", "IQ2_S", "IQ4_XS", "I8", "I16", "I32", "I64", "F64", "IQ1_M", "BF16", "Q4_0_4_4 (removed)",
            "Q4_0_4_8 (removed)", "Q4_0_8_8 (removed)", "TQ1_0", "TQ2_0", "IQ4_NL_4_4 (removed)", "IQ4_NL_4_8 (removed)",
            "IQ4_NL_8_8 (removed)", "MXFP4"};
    private static final ValueLayout.OfShort U16_LE = ValueLayout.JAVA_SHORT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);

    private final int id;
    private final int blockElements;
    private final int blockBytes;
    private final Optional<BlockFormat> format;

    GgufTensorType(int id, int blockElements, int blockBytes)
    {
        this.id = id;
        this.blockElements = blockElements;
        this.blockBytes = blockBytes;
        this.format = Optional.empty();
    }

    GgufTensorType(int id, BlockFormat format)
    {
        this.id = id;
        this.blockElements = format.blockElements();
        this.blockBytes = format.blockBytes();
        this.format = Optional.of(format);
    }

    /** The block format of a quantized type other than Q8_0 (which has a kernel of its own); empty for the rest. */
    public Optional<BlockFormat> blockFormat()
    {
        return format;
    }

    public int id()
    {
        return id;
    }

    public int blockElements()
    {
        return blockElements;
    }

    public int blockBytes()
    {
        return blockBytes;
    }

    public static Optional<GgufTensorType> byId(long id)
    {
        return Arrays.stream(values()).filter(t -> t.id == id).findFirst();
    }

    /** ggml's name for a type number, known to the engine or not: {@code "Q4_K"}, or {@code "unknown"}. */
    public static String ggmlName(long id)
    {
        return id >= 0 && id < GGML_NAMES.length ? GGML_NAMES[(int) id] : "unknown";
    }

    /** The supported types with their numbers, for error messages. */
    public static String supported()
    {
        return Arrays.stream(values()).map(t -> t.name() + " (" + t.id + ")").collect(Collectors.joining(", "));
    }

    /** Converts {@code count} elements (a whole number of blocks) at the start of {@code data} to F32. */
    float[] toFloats(MemorySegment data, int count)
    {
        // the unquantized types are laid out as in safetensors: one conversion serves both formats
        return switch (this) {
            case F32 -> TensorDtype.F32.toFloats(data, count);
            case F16 -> TensorDtype.F16.toFloats(data, count);
            case BF16 -> TensorDtype.BF16.toFloats(data, count);
            case Q8_0 -> dequantizeQ8(data, count);
            case Q4_0, Q4_1, Q5_0, Q5_1, Q4_K, Q5_K, Q6_K -> format.orElseThrow().decodeAll(data, count);
        };
    }

    /** Q8_0: blocks of 32 values, an F16 scale {@code d} then 32 signed bytes {@code q}; each value is {@code d * q}. */
    private static float[] dequantizeQ8(MemorySegment data, int count)
    {
        float[] out = new float[count];
        for (int block = 0; block < count / 32; block++) {
            long at = (long) block * 34;
            float d = Float.float16ToFloat(data.get(U16_LE, at));
            for (int j = 0; j < 32; j++) {
                out[block * 32 + j] = d * data.get(ValueLayout.JAVA_BYTE, at + 2 + j);
            }
        }
        return out;
    }
}
