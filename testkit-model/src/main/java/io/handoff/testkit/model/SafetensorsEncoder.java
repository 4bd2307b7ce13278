package io.handoff.testkit.model;

import io.handoff.core.model.hf.TensorDtype;
import java.io.ByteArrayOutputStream;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.SequencedMap;
import java.util.function.BiFunction;
import java.util.stream.Collectors;

import static java.util.Objects.requireNonNull;

/**
 * The bytes of a single-file safetensors checkpoint: an 8-byte header length, a JSON header naming each tensor's dtype,
 * shape and byte range, then the tensors in order: every one stored as one {@link TensorDtype} rounded from F32 values,
 * or each in bytes of its own dtype. The seeded checkpoints write their weights with it.
 */
public final class SafetensorsEncoder
{
    private SafetensorsEncoder() {}

    /** One stored tensor: its safetensors dtype name, row-major shape and little-endian bytes. */
    public record Stored(String dtype, int[] shape, byte[] bytes)
    {
        public Stored
        {
            requireNonNull(dtype, "dtype is null");
            requireNonNull(shape, "shape is null");
            requireNonNull(bytes, "bytes is null");
        }
    }

    /**
     * @param shapes the tensors' names and row-major shapes, in the order they are stored
     * @param values a tensor's F32 values by name and shape, rounded to {@code dtype} here (to nearest, ties to even)
     */
    public static byte[] encode(SequencedMap<String, int[]> shapes, BiFunction<String, int[], float[]> values, TensorDtype dtype)
    {
        requireNonNull(shapes, "shapes is null");
        requireNonNull(values, "values is null");
        requireNonNull(dtype, "dtype is null");
        SequencedMap<String, Stored> stored = new LinkedHashMap<>();
        shapes.forEach((name, shape) -> {
            float[] tensor = values.apply(name, shape);
            if (tensor.length != elements(shape)) {
                throw new IllegalArgumentException("tensor '" + name + "' has " + tensor.length + " values for shape " + Arrays.toString(shape));
            }
            stored.put(name, new Stored(dtype.name(), shape, bytes(tensor, dtype)));
        });
        return encode(stored);
    }

    /** Tensors already in their stored bytes (of any dtype, each its own), in the order they are stored. */
    public static byte[] encode(SequencedMap<String, Stored> tensors)
    {
        requireNonNull(tensors, "tensors is null");
        ByteArrayOutputStream data = new ByteArrayOutputStream();
        StringBuilder header = new StringBuilder("{\"__metadata__\":{\"format\":\"pt\"}");
        tensors.forEach((name, tensor) -> {
            int begin = data.size();
            data.writeBytes(tensor.bytes());
            String dims = Arrays.stream(tensor.shape()).mapToObj(Integer::toString).collect(Collectors.joining(","));
            header.append(",\"").append(name).append("\":{\"dtype\":\"").append(tensor.dtype()).append("\",\"shape\":[").append(dims)
                    .append("],\"data_offsets\":[").append(begin).append(',').append(data.size()).append("]}");
        });
        byte[] json = header.append('}').toString().getBytes(StandardCharsets.UTF_8);
        return ByteBuffer.allocate(8 + json.length + data.size()).order(ByteOrder.LITTLE_ENDIAN)
                .putLong(json.length).put(json).put(data.toByteArray()).array();
    }

    /** {@code values} rounded to {@code dtype}, little-endian. */
    public static byte[] bytes(float[] values, TensorDtype dtype)
    {
        if (dtype == TensorDtype.F8_E4M3) {
            throw new IllegalArgumentException("F8_E4M3 weights are block-scaled: their bytes come with scales, not from F32 values one by one");
        }
        ByteBuffer data = ByteBuffer.allocate(values.length * dtype.bytes()).order(ByteOrder.LITTLE_ENDIAN);
        for (float v : values) {
            switch (dtype) {
                case F32 -> data.putFloat(v);
                case F16 -> data.putShort(Float.floatToFloat16(v));
                case BF16 -> data.putShort(bf16Bits(v));
                case F8_E4M3 -> throw new AssertionError("refused above");
            }
        }
        return data.array();
    }

    /** F32 to BF16 rounding to nearest, ties to even (what PyTorch's {@code .to(torch.bfloat16)} does for finite values). */
    public static short bf16Bits(float value)
    {
        int bits = Float.floatToRawIntBits(value);
        return (short) ((bits + 0x7fff + ((bits >>> 16) & 1)) >>> 16);
    }

    /** What {@code dtype} stores for {@code value}, back in F32. */
    public static float rounded(TensorDtype dtype, float value)
    {
        return switch (dtype) {
            case F32 -> value;
            case F16 -> Float.float16ToFloat(Float.floatToFloat16(value));
            case BF16 -> Float.intBitsToFloat((bf16Bits(value) & 0xffff) << 16);
            case F8_E4M3 -> throw new IllegalArgumentException("an F8_E4M3 value depends on its block's scale");
        };
    }

    private static long elements(int[] shape)
    {
        long n = 1;
        for (int d : shape) {
            n *= d;
        }
        return n;
    }
}
