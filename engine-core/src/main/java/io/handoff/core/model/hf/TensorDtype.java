package io.handoff.core.model.hf;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.util.Arrays;
import java.util.Optional;
import java.util.stream.Collectors;

/**
 * The element types a safetensors checkpoint may store that the engine reads, by their safetensors
 * names. F32, F16 and BF16 convert to F32 exactly: BF16 is the high half of an F32's bits and every F16 value
 * is representable as an F32. {@link #F8_E4M3} is block-scaled (DeepSeek-V3's FP8 weights): its values are only
 * defined with the companion {@code _scale_inv} tensor, so {@link #toFloats} refuses it and
 * {@link SafetensorsWeights} reads it with its scales. Other quantized and integer types are not here on purpose:
 * reading them as floats would be silently wrong.
 */
public enum TensorDtype
{
    F32(4),
    F16(2),
    BF16(2),
    /** FP8 with 4 exponent bits (bias 7) and 3 mantissa bits, no infinities, NaN at {@code S.1111.111}. */
    F8_E4M3(1);

    // safetensors is little-endian whatever the host; the data section need not be 4-byte aligned
    private static final ValueLayout.OfFloat F32_LE = ValueLayout.JAVA_FLOAT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    private static final ValueLayout.OfShort U16_LE = ValueLayout.JAVA_SHORT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);

    private final int bytes;

    TensorDtype(int bytes)
    {
        this.bytes = bytes;
    }

    public int bytes()
    {
        return bytes;
    }

    /** The type of a safetensors {@code dtype} string, or empty when the engine does not read it. */
    public static Optional<TensorDtype> byName(String name)
    {
        return Arrays.stream(values()).filter(d -> d.name().equals(name)).findFirst();
    }

    /** The supported names, for error messages. */
    public static String supported()
    {
        return Arrays.stream(values()).map(Enum::name).collect(Collectors.joining(", "));
    }

    /** Why a checkpoint with the unread dtype {@code name} is refused, and what to do. */
    public static String refusal(String name)
    {
        if (name.equals("F8_E5M2")) {
            return "has dtype F8_E5M2, which the engine does not read: FP8 weights are read as E4M3 with block scales, as DeepSeek-V3 "
                    + "ships them; convert the checkpoint to bfloat16 or to block-scaled F8_E4M3";
        }
        return "has dtype " + name + ", which the engine does not read; supported: " + supported()
                + " (convert the checkpoint, e.g. save it in bfloat16)";
    }

    /**
     * Converts {@code count} elements of this type at the start of {@code data} (little-endian) to F32. Refused for
     * {@link #F8_E4M3}, whose values need their block scales.
     */
    public float[] toFloats(MemorySegment data, int count)
    {
        if (this == F8_E4M3) {
            throw new IllegalArgumentException("an F8_E4M3 tensor is block-scaled: its values need its _scale_inv tensor, so it is read "
                    + "as a matrix with its scales, never on its own");
        }
        float[] out = new float[count];
        switch (this) {
            case F32 -> MemorySegment.copy(data, F32_LE, 0, out, 0, count);
            case F16 -> {
                for (int i = 0; i < count; i++) {
                    out[i] = Float.float16ToFloat(data.getAtIndex(U16_LE, i));
                }
            }
            case BF16 -> {
                for (int i = 0; i < count; i++) {
                    out[i] = Float.intBitsToFloat((data.getAtIndex(U16_LE, i) & 0xffff) << 16);
                }
            }
            case F8_E4M3 -> throw new AssertionError("refused above");
        }
        return out;
    }
}
