package io.handoff.core.model.gguf;

import io.handoff.core.model.BlockFormat;

import java.io.IOException;
import java.io.OutputStream;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static java.util.Objects.requireNonNull;

/**
 * Rewrites an F32, F16 or BF16 GGUF file with its matrices in a quantized type, by llama.cpp's per-tensor recipe for the
 * mixes ({@code _s}, {@code _m}): every metadata key carried over (tokenizer and chat template included) but
 * {@code general.file_type}; vectors (norms, biases) kept as they are; {@code output.weight} in Q6_K (Q8_0 for a Q8_0
 * file); for Q4_K_M and Q5_K_M, {@code attn_v} and {@code ffn_down} in Q6_K in the layers that get more bits (the first
 * and last eighth and every third between), for Q4_K_S in Q5_K in the first layers; a matrix whose rows are not whole
 * 256-value super-blocks in the legacy type llama.cpp falls back to.
 */
public final class GgufQuantizer
{
    private static final ValueLayout.OfFloat F32_LE = ValueLayout.JAVA_FLOAT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    private static final ValueLayout.OfShort U16_LE = ValueLayout.JAVA_SHORT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    private static final Pattern LAYER = Pattern.compile("^blk\\.(\\d+)\\.");
    // rows converted at a time: a few MiB of F32 whatever the matrix
    private static final int CHUNK_VALUES = 1 << 20;

    /** A target: a type, or a mix of types by llama.cpp's recipe, with the {@code general.file_type} llama.cpp writes for it. */
    public enum Target
    {
        Q4_0(2, GgufTensorType.Q4_0),
        Q4_1(3, GgufTensorType.Q4_1),
        Q5_0(8, GgufTensorType.Q5_0),
        Q5_1(9, GgufTensorType.Q5_1),
        Q8_0(7, GgufTensorType.Q8_0),
        Q4_K_S(14, GgufTensorType.Q4_K),
        Q4_K_M(15, GgufTensorType.Q4_K),
        Q5_K_S(16, GgufTensorType.Q5_K),
        Q5_K_M(17, GgufTensorType.Q5_K),
        Q6_K(18, GgufTensorType.Q6_K),
        F16(1, GgufTensorType.F16),
        BF16(32, GgufTensorType.BF16);

        private final int fileType;
        private final GgufTensorType base;

        Target(int fileType, GgufTensorType base)
        {
            this.fileType = fileType;
            this.base = base;
        }

        /** The target a user names: {@code q4_k_m}, {@code Q8_0}, {@code bf16}. */
        public static Target parse(String name)
        {
            try {
                return valueOf(name.strip().toUpperCase(Locale.ROOT));
            }
            catch (IllegalArgumentException e) {
                throw new IllegalArgumentException("unknown quantization type '" + name + "'; one of " + names());
            }
        }

        public static String names()
        {
            return String.join(", ", java.util.Arrays.stream(values()).map(t -> t.name().toLowerCase(Locale.ROOT)).toList());
        }

        public int fileType()
        {
            return fileType;
        }
    }

    /** What the quantizer reports as it goes. */
    public interface Progress
    {
        void tensor(int index, int count, String name, GgufTensorType type, long bytes);
    }

    private GgufQuantizer() {}

    /** The type each tensor of {@code source} gets under {@code target}, in the file's order. */
    public static Map<String, GgufTensorType> plan(GgufFile source, Target target)
    {
        requireNonNull(target, "target is null");
        int layers = 0;
        int attentionV = 0;
        for (String name : source.tensors().keySet()) {
            Matcher m = LAYER.matcher(name);
            if (m.find()) {
                layers = Math.max(layers, Integer.parseInt(m.group(1)) + 1);
            }
            if (name.endsWith("attn_v.weight")) {
                attentionV++;
            }
        }
        boolean hasOutput = source.tensors().containsKey("output.weight");
        Map<String, GgufTensorType> plan = new LinkedHashMap<>();
        int seenV = 0;
        for (GgufTensor tensor : source.tensors().values()) {
            String name = tensor.name();
            switch (tensor.type()) {
                case F32, F16, BF16 -> {}
                default -> throw new IllegalArgumentException(source.path() + ": tensor " + name + " is already " + tensor.type()
                        + "; quantize from an F32, F16 or BF16 file (re-quantizing a quantized file compounds the error)");
            }
            if (tensor.dims().length < 2 || !name.endsWith(".weight")) {
                plan.put(name, tensor.type());
                continue;
            }
            GgufTensorType type = target.base;
            Matcher m = LAYER.matcher(name);
            int layer = m.find() ? Integer.parseInt(m.group(1)) : -1;
            if (name.equals("output.weight") || (!hasOutput && name.equals("token_embd.weight"))) {
                type = switch (target) {
                    case Q8_0, F16, BF16 -> target.base;
                    default -> GgufTensorType.Q6_K;
                };
            }
            else if (name.endsWith("attn_v.weight")) {
                int i = seenV++;
                if ((target == Target.Q4_K_M || target == Target.Q5_K_M) && moreBits(i, attentionV)) {
                    type = GgufTensorType.Q6_K;
                }
                else if (target == Target.Q4_K_S && i < 4) {
                    type = GgufTensorType.Q5_K;
                }
            }
            else if (name.endsWith("ffn_down.weight") && layer >= 0) {
                if ((target == Target.Q4_K_M || target == Target.Q5_K_M) && moreBits(layer, layers)) {
                    type = GgufTensorType.Q6_K;
                }
                else if (target == Target.Q4_K_S && layer < layers / 8) {
                    type = GgufTensorType.Q5_K;
                }
            }
            plan.put(name, fallback(type, tensor.dims()[0]));
        }
        return plan;
    }

    /** llama.cpp's use_more_bits: the first and last eighth of {@code n}, and every third in between. */
    private static boolean moreBits(int i, int n)
    {
        return i < n / 8 || i >= 7 * n / 8 || (i - n / 8) % 3 == 2;
    }

    /** What llama.cpp writes when a row is not whole blocks of the type: a legacy type of 32-value blocks, else F16. */
    private static GgufTensorType fallback(GgufTensorType type, long cols)
    {
        if (cols % type.blockElements() == 0) {
            return type;
        }
        GgufTensorType legacy = switch (type) {
            case Q4_K -> GgufTensorType.Q5_0;
            case Q5_K -> GgufTensorType.Q5_1;
            case Q6_K -> GgufTensorType.Q8_0;
            default -> type;
        };
        return cols % legacy.blockElements() == 0 ? legacy : GgufTensorType.F16;
    }

    /** Writes {@code source} quantized to {@code target} as {@code out}. */
    public static void quantize(GgufFile source, Target target, Path out, Progress progress)
    {
        Map<String, GgufTensorType> plan = plan(source, target);
        Map<String, GgufValue> metadata = new LinkedHashMap<>(source.metadata().values());
        metadata.put("general.file_type", new GgufValue(GgufValueType.UINT32, (long) target.fileType));
        metadata.put("general.quantization_version", new GgufValue(GgufValueType.UINT32, 2L));
        List<GgufOutput.Tensor> tensors = new ArrayList<>();
        int index = 0;
        for (GgufTensor tensor : source.tensors().values()) {
            GgufTensorType type = plan.get(tensor.name());
            long cols = tensor.dims()[0];
            long rows = tensor.elements() / cols;
            long bytes = rows * (cols / type.blockElements()) * type.blockBytes();
            int at = ++index;
            int count = source.tensors().size();
            tensors.add(new GgufOutput.Tensor(tensor.name(), type, tensor.dims(), bytes, stream -> {
                progress.tensor(at, count, tensor.name(), type, bytes);
                write(tensor, type, (int) cols, rows, stream);
            }));
        }
        GgufOutput.write(out, metadata, tensors);
    }

    private static void write(GgufTensor tensor, GgufTensorType type, int cols, long rows, OutputStream out)
            throws IOException
    {
        if (type == tensor.type()) {
            MemorySegment data = tensor.data();
            byte[] buffer = new byte[1 << 20];
            for (long at = 0; at < data.byteSize(); at += buffer.length) {
                int n = (int) Math.min(buffer.length, data.byteSize() - at);
                MemorySegment.copy(data, ValueLayout.JAVA_BYTE, at, buffer, 0, n);
                out.write(buffer, 0, n);
            }
            return;
        }
        int chunkRows = Math.max(1, CHUNK_VALUES / cols);
        float[] values = new float[chunkRows * cols];
        for (long row = 0; row < rows; row += chunkRows) {
            int n = (int) Math.min(chunkRows, rows - row);
            read(tensor, row * cols, n * cols, values);
            out.write(encode(type, values, n * cols));
        }
    }

    /** {@code n} values from value {@code from} of an F32, F16 or BF16 tensor. */
    private static void read(GgufTensor tensor, long from, int n, float[] out)
    {
        MemorySegment data = tensor.data();
        for (int i = 0; i < n; i++) {
            long at = from + i;
            out[i] = switch (tensor.type()) {
                case F32 -> data.get(F32_LE, 4 * at);
                case F16 -> Float.float16ToFloat(data.get(U16_LE, 2 * at));
                case BF16 -> Float.intBitsToFloat((data.get(U16_LE, 2 * at) & 0xffff) << 16);
                default -> throw new IllegalStateException(tensor.type() + " passed the plan's check");
            };
        }
    }

    private static byte[] encode(GgufTensorType type, float[] values, int n)
    {
        return switch (type) {
            case F32 -> {
                java.nio.ByteBuffer b = java.nio.ByteBuffer.allocate(4 * n).order(ByteOrder.LITTLE_ENDIAN);
                for (int i = 0; i < n; i++) {
                    b.putFloat(values[i]);
                }
                yield b.array();
            }
            case F16, BF16 -> {
                java.nio.ByteBuffer b = java.nio.ByteBuffer.allocate(2 * n).order(ByteOrder.LITTLE_ENDIAN);
                for (int i = 0; i < n; i++) {
                    b.putShort(type == GgufTensorType.F16 ? Float.floatToFloat16(values[i]) : bf16(values[i]));
                }
                yield b.array();
            }
            case Q8_0 -> BlockQuantizer.encode(BlockFormat.Q8_0, values, 0, n);
            default -> BlockQuantizer.encode(type.blockFormat().orElseThrow(), values, 0, n);
        };
    }

    /** BF16 rounded to nearest even, as ggml's fp32_to_bf16 does (NaN kept quiet). */
    private static short bf16(float value)
    {
        int bits = Float.floatToRawIntBits(value);
        if ((bits & 0x7fffffff) > 0x7f800000) {
            return (short) ((bits >>> 16) | 64);
        }
        return (short) ((bits + (0x7fff + ((bits >>> 16) & 1))) >>> 16);
    }
}
