package io.handoff.core.model.gguf;

import io.handoff.core.model.ModelConfig;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Writes GGUF files for tests: metadata of every value type, tensors encoded as F32, F16, BF16 or
 * Q8_0 (or raw bytes under any type number, n_dims and offset, for the malformed cases), each tensor
 * at the next multiple of the alignment in a data section that starts at one.
 */
final class GgufWriter
{
    /** An ARRAY value: elements are Java values of {@code elementType}, or {@code Array}s for nested arrays. */
    record Array(GgufValueType elementType, List<?> values) {}

    private record Tensor(String name, long typeId, long[] dims, byte[] data, Long offset) {}

    private int version = 3;
    private long alignment = GgufFile.DEFAULT_ALIGNMENT;
    private final Map<String, Object[]> metadata = new LinkedHashMap<>();
    private final List<Tensor> tensors = new ArrayList<>();

    GgufWriter version(int version)
    {
        this.version = version;
        return this;
    }

    /** Pads to {@code alignment} and records it as {@code general.alignment} (UINT32). */
    GgufWriter alignment(int alignment)
    {
        this.alignment = alignment;
        return put(GgufFile.ALIGNMENT_KEY, GgufValueType.UINT32, (long) alignment);
    }

    GgufWriter put(String key, GgufValueType type, Object value)
    {
        metadata.put(key, new Object[] {type, value});
        return this;
    }

    GgufWriter tensor(String name, GgufTensorType type, long[] dims, float[] values)
    {
        return rawTensor(name, type.id(), dims, encode(type, values), null);
    }

    /** A tensor of any type number and dims with the given bytes at the next aligned offset, or, with an {@code offset}, declared there and not written. */
    GgufWriter rawTensor(String name, long typeId, long[] dims, byte[] data, Long offset)
    {
        tensors.add(new Tensor(name, typeId, dims, data, offset));
        return this;
    }

    /** The metadata of a Llama-style model with the shapes of {@code c}, under {@code arch}. */
    GgufWriter model(ModelConfig c, String arch)
    {
        put(GgufArchitecture.KEY, GgufValueType.STRING, arch);
        put("general.name", GgufValueType.STRING, c.name());
        put(arch + ".context_length", GgufValueType.UINT32, (long) c.maxContext());
        put(arch + ".embedding_length", GgufValueType.UINT32, (long) c.hiddenSize());
        put(arch + ".block_count", GgufValueType.UINT32, (long) c.layers());
        put(arch + ".feed_forward_length", GgufValueType.UINT32, (long) c.intermediateSize());
        put(arch + ".attention.head_count", GgufValueType.UINT32, (long) c.heads());
        put(arch + ".attention.head_count_kv", GgufValueType.UINT32, (long) c.kvHeads());
        put(arch + ".rope.dimension_count", GgufValueType.UINT32, (long) c.headDim());
        put(arch + ".rope.freq_base", GgufValueType.FLOAT32, c.ropeTheta());
        put(arch + ".attention.layer_norm_rms_epsilon", GgufValueType.FLOAT32, c.rmsEps());
        return put(arch + ".vocab_size", GgufValueType.UINT32, (long) c.vocabSize());
    }

    byte[] toBytes()
    {
        Bytes out = new Bytes();
        out.u32(GgufFile.MAGIC).u32(version).u64(tensors.size()).u64(metadata.size());
        metadata.forEach((key, tv) -> {
            out.string(key).u32(((GgufValueType) tv[0]).id());
            value(out, (GgufValueType) tv[0], tv[1]);
        });
        long next = 0;
        List<Long> offsets = new ArrayList<>();
        for (Tensor t : tensors) {
            long offset = t.offset() != null ? t.offset() : next;
            offsets.add(offset);
            if (t.offset() == null) {
                next = align(offset + t.data().length);
            }
            out.string(t.name()).u32(t.dims().length);
            for (long d : t.dims()) {
                out.u64(d);
            }
            out.u32((int) t.typeId()).u64(offset);
        }
        out.pad(alignment);
        long dataStart = out.size();
        for (int i = 0; i < tensors.size(); i++) {
            long at = dataStart + offsets.get(i);
            // a tensor at an explicit offset is a crafted case: its bytes are not written, the offset alone matters
            if (tensors.get(i).offset() == null) {
                out.zeros(at - out.size());
                out.bytes(tensors.get(i).data());
            }
        }
        return out.toByteArray();
    }

    Path write(Path file)
    {
        try {
            return Files.write(file, toBytes());
        }
        catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    private long align(long n)
    {
        return (n + alignment - 1) / alignment * alignment;
    }

    private static void value(Bytes out, GgufValueType type, Object v)
    {
        switch (type) {
            case UINT8, INT8 -> out.u8(((Number) v).intValue());
            case UINT16, INT16 -> out.u16(((Number) v).intValue());
            case UINT32, INT32 -> out.u32(((Number) v).intValue());
            case UINT64, INT64 -> out.u64(((Number) v).longValue());
            case FLOAT32 -> out.u32(Float.floatToRawIntBits(((Number) v).floatValue()));
            case FLOAT64 -> out.u64(Double.doubleToRawLongBits(((Number) v).doubleValue()));
            case BOOL -> out.u8((Boolean) v ? 1 : 0);
            case STRING -> out.string((String) v);
            case ARRAY -> {
                Array array = (Array) v;
                out.u32(array.elementType().id()).u64(array.values().size());
                array.values().forEach(e -> value(out, array.elementType(), e));
            }
        }
    }

    /** The bytes {@code values} take as {@code type}; Q8_0 scales each block of 32 by its f16-rounded amax / 127. */
    static byte[] encode(GgufTensorType type, float[] values)
    {
        ByteBuffer b = ByteBuffer.allocate(values.length / type.blockElements() * type.blockBytes()).order(ByteOrder.LITTLE_ENDIAN);
        switch (type) {
            case F32 -> { for (float v : values) b.putFloat(v); }
            case F16 -> { for (float v : values) b.putShort(Float.floatToFloat16(v)); }
            case BF16 -> { for (float v : values) b.putShort(bf16Bits(v)); }
            case Q8_0 -> {
                for (int block = 0; block < values.length / 32; block++) {
                    float amax = 0;
                    for (int j = 0; j < 32; j++) {
                        amax = Math.max(amax, Math.abs(values[block * 32 + j]));
                    }
                    short d16 = Float.floatToFloat16(amax / 127);
                    float d = Float.float16ToFloat(d16);
                    b.putShort(d16);
                    for (int j = 0; j < 32; j++) {
                        b.put((byte) (d == 0 ? 0 : Math.clamp(Math.round(values[block * 32 + j] / d), -127, 127)));
                    }
                }
            }
        }
        return b.array();
    }

    /** The values as a reader decodes them from {@code type}: F16 rounding, or Q8_0's per-block scale times its int8. */
    static float[] decoded(GgufTensorType type, float[] values)
    {
        return switch (type) {
            case F32 -> values;
            case F16 -> {
                float[] out = new float[values.length];
                for (int i = 0; i < out.length; i++) {
                    out[i] = f16Rounded(values[i]);
                }
                yield out;
            }
            case Q8_0 -> {
                ByteBuffer blocks = ByteBuffer.wrap(encode(type, values)).order(ByteOrder.LITTLE_ENDIAN);
                float[] out = new float[values.length];
                for (int i = 0; i < out.length; i += 32) {
                    float scale = Float.float16ToFloat(blocks.getShort());
                    for (int j = 0; j < 32; j++) {
                        out[i + j] = scale * blocks.get();
                    }
                }
                yield out;
            }
            default -> throw new IllegalArgumentException("seeded GGUF matrices are F32, F16 or Q8_0, not " + type);
        };
    }

    /** F32 to BF16 rounding to nearest, ties to even, for finite values. */
    static short bf16Bits(float value)
    {
        int bits = Float.floatToRawIntBits(value);
        return (short) ((bits + 0x7fff + ((bits >>> 16) & 1)) >>> 16);
    }

    static float bf16Rounded(float value)
    {
        return Float.intBitsToFloat((bf16Bits(value) & 0xffff) << 16);
    }

    static float f16Rounded(float value)
    {
        return Float.float16ToFloat(Float.floatToFloat16(value));
    }

    /** llama.cpp's converter's q/k permutation, HF to GGUF order, written from its NumPy reshape/swapaxes directly. */
    static float[] llamaPermute(float[] hf, int rows, int cols, int heads)
    {
        int half = rows / heads / 2;
        float[] out = new float[hf.length];
        // out[h][j][i][c] = in[h][i][j][c]: dims (heads, half, 2, cols) after swapaxes(1, 2) of (heads, 2, half, cols)
        for (int h = 0; h < heads; h++) {
            for (int j = 0; j < half; j++) {
                for (int i = 0; i < 2; i++) {
                    int outRow = (h * half + j) * 2 + i;
                    int inRow = (h * 2 + i) * half + j;
                    System.arraycopy(hf, inRow * cols, out, outRow * cols, cols);
                }
            }
        }
        return out;
    }

    /** GGUF dims of a Hugging Face row-major shape. */
    static long[] dims(int... shape)
    {
        long[] dims = new long[shape.length];
        for (int i = 0; i < shape.length; i++) {
            dims[i] = shape[shape.length - 1 - i];
        }
        return dims;
    }

    private static final class Bytes
    {
        private final ByteArrayOutputStream out = new ByteArrayOutputStream();

        Bytes u8(int v) { out.write(v); return this; }
        Bytes u16(int v) { return u8(v).u8(v >>> 8); }
        Bytes u32(int v) { return u16(v).u16(v >>> 16); }
        Bytes u64(long v) { return u32((int) v).u32((int) (v >>> 32)); }
        Bytes bytes(byte[] b) { out.writeBytes(b); return this; }
        Bytes zeros(long n) { return bytes(new byte[(int) n]); }
        Bytes pad(long alignment) { return zeros(Math.floorMod(-size(), alignment)); }
        long size() { return out.size(); }
        byte[] toByteArray() { return out.toByteArray(); }

        Bytes string(String s)
        {
            byte[] b = s.getBytes(StandardCharsets.UTF_8);
            return u64(b.length).bytes(b);
        }
    }
}
