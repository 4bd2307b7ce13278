package io.handoff.core.model.hf;

import io.handoff.core.json.JsonFile;
import io.handoff.core.model.WeightMatrix;
import io.handoff.core.model.WeightSource;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;

import static java.util.Objects.requireNonNull;

/**
 * The weights of a Hugging Face model directory: {@code model.safetensors}, or the shards named by
 * {@code model.safetensors.index.json} (its {@code weight_map} maps each tensor to a shard file). Each
 * shard is mapped once, when the directory is opened, and every tensor the index names is checked to
 * be in its shard then, so a bad checkpoint fails at load rather than half way through building a
 * model. Like Transformers, a {@code model.safetensors} is preferred when both are present.
 *
 * <p>{@link #matrix} serves a view of the mapping in the stored type (F32, F16, BF16, or FP8 E4M3 with its block scales
 * when config.json's {@code quantization_config} declares them, see {@link Fp8BlockScaling}), so the directory must stay
 * open while a model built from it runs; {@link #floats} copies, dequantizing FP8 to the same values.
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
    private final Optional<Fp8BlockScaling> fp8;
    private volatile boolean closed;

    private SafetensorsWeights(Path directory, List<SafetensorsFile> files, Map<String, SafetensorsTensor> tensors,
            Optional<Fp8BlockScaling> fp8)
    {
        this.directory = directory;
        this.files = List.copyOf(files);
        this.tensors = Map.copyOf(tensors);
        this.fp8 = fp8;
    }

    public static SafetensorsWeights open(Path directory)
    {
        Path config = requireNonNull(directory, "directory is null").resolve(HfModelConfig.FILE);
        return open(directory, Files.isRegularFile(config) ? JsonFile.readObject(config, HfModelConfig.MAX_CONFIG_BYTES) : Map.of());
    }

    /** @param config the directory's config.json as read (empty without one): its {@code quantization_config} is obeyed */
    public static SafetensorsWeights open(Path directory, Map<String, Object> config)
    {
        requireNonNull(directory, "directory is null");
        if (!Files.isDirectory(directory)) {
            throw new IllegalArgumentException(directory + " is not a directory; give the Hugging Face model directory "
                    + "(the one holding config.json and the .safetensors files)");
        }
        Optional<Fp8BlockScaling> fp8 = Fp8BlockScaling.fromConfig(requireNonNull(config, "config is null"),
                directory.resolve(HfModelConfig.FILE).toString());
        if (Files.isRegularFile(directory.resolve(SINGLE_FILE))) {
            return single(directory, fp8);
        }
        if (Files.isRegularFile(directory.resolve(INDEX_FILE))) {
            return sharded(directory, fp8);
        }
        throw new IllegalArgumentException(directory + " holds neither " + SINGLE_FILE + " nor " + INDEX_FILE
                + "; download the checkpoint's safetensors weights (.bin and .pth checkpoints are not read)");
    }

    private static SafetensorsWeights single(Path directory, Optional<Fp8BlockScaling> fp8)
    {
        SafetensorsFile file = SafetensorsFile.open(directory.resolve(SINGLE_FILE));
        return new SafetensorsWeights(directory, List.of(file), file.tensors(), fp8);
    }

    private static SafetensorsWeights sharded(Path directory, Optional<Fp8BlockScaling> fp8)
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
            return new SafetensorsWeights(directory, new ArrayList<>(shards.values()), tensors, fp8);
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

    /** The tensor as F32; an FP8 one dequantized exactly as its {@link #matrix} reads. */
    @Override
    public float[] floats(String name, int... shape)
    {
        SafetensorsTensor tensor = tensor(name, shape);
        if (tensor.dtype() != TensorDtype.F8_E4M3) {
            refuseStrayScales(name, tensor);
            return tensor.toFloats();
        }
        if (shape.length != 2) {
            throw new IllegalArgumentException("tensor '" + name + "' in " + directory.resolve(tensor.file()) + " is F8_E4M3 of shape "
                    + Arrays.toString(shape) + "; only a [rows, cols] matrix has block scales: the checkpoint is not DeepSeek-V3's FP8 layout");
        }
        WeightMatrix matrix = fp8Matrix(name, tensor, shape[0], shape[1]);
        float[] values = new float[Math.multiplyExact(shape[0], shape[1])];
        for (int r = 0; r < shape[0]; r++) {
            matrix.readRow(r, values, r * shape[1]);
        }
        return values;
    }

    /** The matrix in its stored type over the mapping, valid until {@link #close()}. */
    @Override
    public WeightMatrix matrix(String name, int rows, int cols)
    {
        SafetensorsTensor tensor = tensor(name, rows, cols);
        if (tensor.dtype() != TensorDtype.F8_E4M3) {
            refuseStrayScales(name, tensor);
        }
        return switch (tensor.dtype()) {
            case F32 -> WeightMatrix.f32(tensor.data(), rows, cols);
            case F16 -> WeightMatrix.f16(tensor.data(), rows, cols);
            case BF16 -> WeightMatrix.bf16(tensor.data(), rows, cols);
            case F8_E4M3 -> fp8Matrix(name, tensor, rows, cols);
        };
    }

    /** An F8_E4M3 tensor with its {@code _scale_inv}, checked against config.json's block size. */
    private WeightMatrix fp8Matrix(String name, SafetensorsTensor tensor, int rows, int cols)
    {
        String where = "tensor '" + name + "' in " + directory.resolve(tensor.file());
        Fp8BlockScaling scaling = fp8.orElseThrow(() -> new IllegalArgumentException(where + " is F8_E4M3, but config.json has no "
                + Fp8BlockScaling.KEY + "; add the checkpoint's own ({\"quant_method\": \"fp8\", \"fmt\": \"e4m3\", "
                + "\"activation_scheme\": \"dynamic\", \"weight_block_size\": [128, 128]} for DeepSeek-V3)"));
        String scaleName = Fp8BlockScaling.scaleName(name);
        SafetensorsTensor scale = tensors.get(scaleName);
        if (scale == null) {
            throw new IllegalArgumentException(where + " is F8_E4M3, but its block scales '" + scaleName + "' are not in the checkpoint; "
                    + "the download is incomplete, or its FP8 layout is not DeepSeek-V3's block-scaled one");
        }
        int[] expected = {Math.ceilDiv(rows, scaling.blockRows()), Math.ceilDiv(cols, scaling.blockCols())};
        if (!Arrays.equals(scale.shape(), expected)) {
            throw new IllegalArgumentException("scales '" + scaleName + "' in " + directory.resolve(scale.file()) + " have shape "
                    + Arrays.toString(scale.shape()) + ", but a " + rows + " x " + cols + " weight in config.json's " + scaling.blockRows()
                    + " x " + scaling.blockCols() + " blocks (" + Fp8BlockScaling.KEY + ".weight_block_size) has " + Arrays.toString(expected)
                    + "; the checkpoint's blocks are not the ones its config declares");
        }
        if (scale.dtype() == TensorDtype.F8_E4M3) {
            throw new IllegalArgumentException("scales '" + scaleName + "' in " + directory.resolve(scale.file()) + " are F8_E4M3; "
                    + "block scales are F32 (or F16, BF16)");
        }
        try {
            return WeightMatrix.fp8Blocks(tensor.data(), rows, cols, scale.toFloats(), scaling.blockRows(), scaling.blockCols());
        }
        catch (IllegalArgumentException e) {
            throw new IllegalArgumentException(where + ": " + e.getMessage() + "; the checkpoint is corrupt", e);
        }
    }

    /** Scales beside a tensor that is not FP8 would be silently ignored: the checkpoint is half converted. */
    private void refuseStrayScales(String name, SafetensorsTensor tensor)
    {
        String scaleName = Fp8BlockScaling.scaleName(name);
        if (tensors.containsKey(scaleName)) {
            throw new IllegalArgumentException("tensor '" + name + "' in " + directory.resolve(tensor.file()) + " is " + tensor.dtype()
                    + " but the checkpoint also holds block scales '" + scaleName + "' for it; only F8_E4M3 weights have scales: "
                    + "the checkpoint is half converted, convert it again");
        }
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
