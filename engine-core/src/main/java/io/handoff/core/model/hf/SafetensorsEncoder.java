package io.handoff.core.model.hf;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.SequencedMap;
import java.util.function.BiFunction;
import java.util.stream.Collectors;

import static java.util.Objects.requireNonNull;

/**
 * The bytes of a single-file safetensors checkpoint: an 8-byte header length, a JSON header naming each tensor's dtype,
 * shape and byte range, then the tensors in order, every one stored as one {@link TensorDtype}. The seeded checkpoints
 * write their weights with it.
 */
public final class SafetensorsEncoder
{
    private SafetensorsEncoder() {}

    /**
     * @param shapes the tensors' names and row-major shapes, in the order they are stored
     * @param values a tensor's F32 values by name and shape, rounded to {@code dtype} here (to nearest, ties to even)
     */
    public static byte[] encode(SequencedMap<String, int[]> shapes, BiFunction<String, int[], float[]> values, TensorDtype dtype)
    {
        requireNonNull(shapes, "shapes is null");
        requireNonNull(values, "values is null");
        requireNonNull(dtype, "dtype is null");
        long total = 0;
        for (int[] shape : shapes.values()) {
            total += elements(shape) * dtype.bytes();
        }
        ByteBuffer data = ByteBuffer.allocate(Math.toIntExact(total)).order(ByteOrder.LITTLE_ENDIAN);
        StringBuilder header = new StringBuilder("{\"__metadata__\":{\"format\":\"pt\"}");
        shapes.forEach((name, shape) -> {
            float[] tensor = values.apply(name, shape);
            if (tensor.length != elements(shape)) {
                throw new IllegalArgumentException("tensor '" + name + "' has " + tensor.length + " values for shape " + Arrays.toString(shape));
            }
            int begin = data.position();
            for (float v : tensor) {
                switch (dtype) {
                    case F32 -> data.putFloat(v);
                    case F16 -> data.putShort(Float.floatToFloat16(v));
                    case BF16 -> data.putShort(bf16Bits(v));
                }
            }
            String dims = Arrays.stream(shape).mapToObj(Integer::toString).collect(Collectors.joining(","));
            header.append(",\"").append(name).append("\":{\"dtype\":\"").append(dtype.name()).append("\",\"shape\":[").append(dims)
                    .append("],\"data_offsets\":[").append(begin).append(',').append(data.position()).append("]}");
        });
        byte[] json = header.append('}').toString().getBytes(StandardCharsets.UTF_8);
        return ByteBuffer.allocate(8 + json.length + data.capacity()).order(ByteOrder.LITTLE_ENDIAN)
                .putLong(json.length).put(json).put(data.array()).array();
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
