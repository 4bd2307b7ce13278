package io.handoff.core.model.hf;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.util.Arrays;
import java.util.Optional;
import java.util.stream.Collectors;

/**
 * The element types a safetensors checkpoint may store that the engine reads, by their safetensors
 * names. Every one converts to F32 exactly: BF16 is the high half of an F32's bits and every F16 value
 * is representable as an F32. Quantized and integer types are not here on purpose: reading them as
 * floats would be silently wrong.
 */
public enum TensorDtype
{
    F32(4),
    F16(2),
    BF16(2);

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

    /** Converts {@code count} elements of this type at the start of {@code data} (little-endian) to F32. */
    public float[] toFloats(MemorySegment data, int count)
    {
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
        }
        return out;
    }
}
