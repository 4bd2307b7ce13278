package io.handoff.core.model.hf;

import io.handoff.core.model.WeightMatrix;
import io.handoff.core.model.WeightSource;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

import static java.util.Objects.requireNonNull;

/**
 * The weights of a Hugging Face model directory: {@code model.safetensors}, or the shards named by
 * {@code model.safetensors.index.json} (its {@code weight_map} maps each tensor to a shard file). Each
 * shard is mapped once, when the directory is opened, and every tensor the index names is checked to
 * be in its shard then, so a bad checkpoint fails at load rather than half way through building a
 * model. Like Transformers, a {@code model.safetensors} is preferred when both are present.
 *
 * <p>{@link #matrix} serves a view of the mapping in the stored type (F32, F16, BF16), so the directory must stay
 * open while a model built from it runs; {@link #floats} copies.
 */
public final class SafetensorsWeights
        implements WeightSource, AutoCloseable
{
    public static final String SINGLE_FILE = "model.safetensors";
    public static final String INDEX_FILE = "model.safetensors.index.json";
    private static final int MAX_INDEX_BYTES = 64 * 1024 * 1024;

    private final Path directory;
    private final List<SafetensorsFile> files;
    private final Map<String, SafetensorsTensor> tensors;
    private volatile boolean closed;

    private SafetensorsWeights(Path directory, List<SafetensorsFile> files, Map<String, SafetensorsTensor> tensors)
    {
        this.directory = directory;
        this.files = List.copyOf(files);
        this.tensors = Map.copyOf(tensors);
    }

    public static SafetensorsWeights open(Path directory)
    {
        requireNonNull(directory, "directory is null");
        if (!Files.isDirectory(directory)) {
            throw new IllegalArgumentException(directory + " is not a directory; give the Hugging Face model directory "
                    + "(the one holding config.json and the .safetensors files)");
        }
        if (Files.isRegularFile(directory.resolve(SINGLE_FILE))) {
            return single(directory);
        }
        if (Files.isRegularFile(directory.resolve(INDEX_FILE))) {
            return sharded(directory);
        }
        throw new IllegalArgumentException(directory + " holds neither " + SINGLE_FILE + " nor " + INDEX_FILE
                + "; download the checkpoint's safetensors weights (.bin and .pth checkpoints are not read)");
    }

    private static SafetensorsWeights single(Path directory)
    {
        SafetensorsFile file = SafetensorsFile.open(directory.resolve(SINGLE_FILE));
        return new SafetensorsWeights(directory, List.of(file), file.tensors());
    }

    private static SafetensorsWeights sharded(Path directory)
    {
        Path indexPath = directory.resolve(INDEX_FILE);
        Map<String, String> weightMap = weightMap(indexPath);
        Map<String, SafetensorsFile> shards = new LinkedHashMap<>();
        try {
            Map<String, SafetensorsTensor> tensors = new LinkedHashMap<>();
            for (Map.Entry<String, String> e : weightMap.entrySet()) {
                SafetensorsFile shard = shards.get(e.getValue());
                if (shard == null) {
                    shard = SafetensorsFile.open(directory.resolve(e.getValue()));
                    shards.put(e.getValue(), shard);
                }
                String tensor = e.getKey();
                tensors.put(tensor, shard.tensor(tensor).orElseThrow(() -> new IllegalArgumentException(indexPath + " puts tensor '"
                        + tensor + "' in " + e.getValue() + ", but that shard does not hold it; the download is incomplete or mixed")));
            }
            return new SafetensorsWeights(directory, new ArrayList<>(shards.values()), tensors);
        }
        catch (RuntimeException e) {
            shards.values().forEach(SafetensorsFile::close);
            throw e;
        }
    }

    private static Map<String, String> weightMap(Path indexPath)
    {
        Map<String, Object> index = JsonFile.readObject(indexPath, MAX_INDEX_BYTES);
        if (!(index.get("weight_map") instanceof Map<?, ?> map) || map.isEmpty()) {
            throw new IllegalArgumentException(indexPath + ": expected a non-empty \"weight_map\" object of tensor name to shard file");
        }
        Map<String, String> weightMap = new LinkedHashMap<>();
        for (Map.Entry<?, ?> e : map.entrySet()) {
            if (!(e.getValue() instanceof String shard) || !isPlainFileName(shard)) {
                throw new IllegalArgumentException(indexPath + ": tensor '" + e.getKey() + "' names shard " + e.getValue()
                        + "; a shard must be a plain file name inside the model directory (no '/', '\\' or '..')");
            }
            weightMap.put((String) e.getKey(), shard);
        }
        return weightMap;
    }

    /** A name that resolves to a file directly inside the directory, whatever the platform's separators. */
    static boolean isPlainFileName(String name)
    {
        return !name.isEmpty() && !name.equals(".") && !name.equals("..") && name.indexOf('/') < 0 && name.indexOf('\\') < 0
                && name.indexOf('\0') < 0 && name.indexOf(':') < 0;
    }

    @Override
    public float[] floats(String name, int... shape)
    {
        return tensor(name, shape).toFloats();
    }

    /** The matrix in its stored type over the mapping, valid until {@link #close()}. */
    @Override
    public WeightMatrix matrix(String name, int rows, int cols)
    {
        SafetensorsTensor tensor = tensor(name, rows, cols);
        return switch (tensor.dtype()) {
            case F32 -> WeightMatrix.f32(tensor.data(), rows, cols);
            case F16 -> WeightMatrix.f16(tensor.data(), rows, cols);
            case BF16 -> WeightMatrix.bf16(tensor.data(), rows, cols);
        };
    }

    private SafetensorsTensor tensor(String name, int... shape)
    {
        if (closed) {
            throw new IllegalStateException(description() + " is closed; its mappings are released");
        }
        SafetensorsTensor tensor = tensors.get(requireNonNull(name, "name is null"));
        if (tensor == null) {
            throw new IllegalArgumentException("tensor '" + name + "' is not in " + directory + " (" + tensors.size()
                    + " tensors); the checkpoint does not match the model's architecture or config.json");
        }
        if (!Arrays.equals(tensor.shape(), shape)) {
            throw new IllegalArgumentException("tensor '" + name + "' in " + directory.resolve(tensor.file()) + " has shape "
                    + Arrays.toString(tensor.shape()) + ", the model expects " + Arrays.toString(shape)
                    + "; the checkpoint does not match config.json");
        }
        return tensor;
    }

    /** Tensor names, for diagnostics. */
    public Set<String> names()
    {
        return tensors.keySet();
    }

    @Override
    public String description()
    {
        return "safetensors checkpoint " + directory + " (" + files.size() + (files.size() == 1 ? " file)" : " shards)");
    }

    /** Unmaps every shard; {@link #floats} and {@link #matrix} fail afterwards, and so do reads of the matrices served. */
    @Override
    public void close()
    {
        closed = true;
        files.forEach(SafetensorsFile::close);
    }
}
