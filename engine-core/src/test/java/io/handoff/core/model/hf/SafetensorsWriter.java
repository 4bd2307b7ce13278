package io.handoff.core.model.hf;

import io.handoff.core.model.ModelConfig;
import io.handoff.core.model.WeightSource;
import io.handoff.testkit.model.SafetensorsEncoder;
import io.handoff.testkit.model.SeededCheckpoint;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.SequencedMap;
import java.util.stream.Collectors;

/**
 * Writes safetensors checkpoints for tests: whole files from tensors (F32, F16 or BF16, one file or
 * shards with an index), or raw bytes with a hand-written header for the malformed cases.
 */
final class SafetensorsWriter
{
    private SafetensorsWriter() {}

    record Tensor(String name, int[] shape, float[] values) {}

    /**
     * The tensors {@code Transformer} reads for a GQA model, by name and shape in load order: the same
     * names ModelWeights asks its WeightSource for.
     */
    static Map<String, int[]> gqaTensorShapes(ModelConfig c)
    {
        return SeededCheckpoint.tensorShapes(c);
    }

    static List<Tensor> tensors(Map<String, int[]> shapes, WeightSource source)
    {
        List<Tensor> tensors = new ArrayList<>();
        shapes.forEach((name, shape) -> tensors.add(new Tensor(name, shape, source.floats(name, shape))));
        return tensors;
    }

    /** One file holding {@code tensors} stored as {@code dtype}, with a {@code __metadata__} entry. */
    static void write(Path file, List<Tensor> tensors, TensorDtype dtype)
    {
        SequencedMap<String, int[]> shapes = new LinkedHashMap<>();
        Map<String, float[]> values = new LinkedHashMap<>();
        for (Tensor t : tensors) {
            shapes.put(t.name(), t.shape());
            values.put(t.name(), t.values());
        }
        writeBytes(file, SafetensorsEncoder.encode(shapes, (name, shape) -> values.get(name), dtype));
    }

    /**
     * Shards: tensor {@code i} goes to shard {@code i % shards}, named as Transformers names them,
     * and an index maps every tensor to its shard.
     */
    static void writeSharded(Path directory, List<Tensor> tensors, TensorDtype dtype, int shards)
    {
        Map<String, String> weightMap = new LinkedHashMap<>();
        for (int s = 0; s < shards; s++) {
            String shardName = String.format("model-%05d-of-%05d.safetensors", s + 1, shards);
            List<Tensor> part = new ArrayList<>();
            for (int i = s; i < tensors.size(); i += shards) {
                part.add(tensors.get(i));
                weightMap.put(tensors.get(i).name(), shardName);
            }
            write(directory.resolve(shardName), part, dtype);
        }
        writeIndex(directory, weightMap);
    }

    static void writeIndex(Path directory, Map<String, String> weightMap)
    {
        String entries = weightMap.entrySet().stream()
                .map(e -> "\"" + e.getKey() + "\": \"" + e.getValue() + "\"")
                .collect(Collectors.joining(",\n    "));
        writeText(directory.resolve(SafetensorsWeights.INDEX_FILE),
                "{\n  \"metadata\": {\"total_size\": 0},\n  \"weight_map\": {\n    " + entries + "\n  }\n}\n");
    }

    /** One header entry, for hand-written headers. */
    static String entry(String name, String dtype, int[] shape, long begin, long end)
    {
        String dims = Arrays.stream(shape).mapToObj(Integer::toString).collect(Collectors.joining(","));
        return "\"" + name + "\":{\"dtype\":\"" + dtype + "\",\"shape\":[" + dims + "],\"data_offsets\":[" + begin + "," + end + "]}";
    }

    /** A file whose length field is the header's true length. */
    static void writeRaw(Path file, String header, byte[] data)
    {
        byte[] headerBytes = header.getBytes(StandardCharsets.UTF_8);
        writeRaw(file, headerBytes.length, headerBytes, data);
    }

    /** A file whose length field says {@code declaredHeaderLength}, whatever follows. */
    static void writeRaw(Path file, long declaredHeaderLength, byte[] header, byte[] data)
    {
        ByteBuffer bytes = ByteBuffer.allocate(8 + header.length + data.length).order(ByteOrder.LITTLE_ENDIAN);
        bytes.putLong(declaredHeaderLength).put(header).put(data);
        writeBytes(file, bytes.array());
    }

    static void writeBytes(Path file, byte[] bytes)
    {
        try {
            Files.write(file, bytes);
        }
        catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    static void writeText(Path file, String text)
    {
        writeBytes(file, text.getBytes(StandardCharsets.UTF_8));
    }

    /** F32 to BF16 rounding to nearest, ties to even (what PyTorch's {@code .to(torch.bfloat16)} does for finite values). */
    static short bf16Bits(float value)
    {
        return SafetensorsEncoder.bf16Bits(value);
    }

    /** What a BF16 file stores for {@code value}, back in F32. */
    static float bf16Rounded(float value)
    {
        return SafetensorsEncoder.rounded(TensorDtype.BF16, value);
    }

    /** What an F16 file stores for {@code value}, back in F32. */
    static float f16Rounded(float value)
    {
        return SafetensorsEncoder.rounded(TensorDtype.F16, value);
    }

    static byte[] floatsLittleEndian(float... values)
    {
        ByteBuffer bytes = ByteBuffer.allocate(values.length * 4).order(ByteOrder.LITTLE_ENDIAN);
        for (float v : values) {
            bytes.putFloat(v);
        }
        return bytes.array();
    }
}
