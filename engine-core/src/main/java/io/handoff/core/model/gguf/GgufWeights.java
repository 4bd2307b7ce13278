package io.handoff.core.model.gguf;

import io.handoff.core.model.WeightSource;

import java.nio.file.Path;
import java.util.Arrays;
import java.util.LinkedHashSet;
import java.util.Optional;
import java.util.Set;

import static java.util.Objects.requireNonNull;

/**
 * The weights of one GGUF file by their Hugging Face names and shapes, so the transformer reads a
 * GGUF model as it reads a safetensors one. Every tensor is dequantized to F32 on request (Q8_0
 * included), and Llama's q and k projections get Transformers' row order back
 * ({@link LlamaQkPermutation}). A file without {@code output.weight} ties the lm_head to the
 * embeddings, as llama.cpp does, so {@code lm_head.weight} then reads {@code token_embd.weight}.
 */
public final class GgufWeights
        implements WeightSource, AutoCloseable
{
    private final GgufFile file;
    private final GgufModel model;
    private volatile boolean closed;

    private GgufWeights(GgufFile file, GgufModel model)
    {
        this.file = file;
        this.model = model;
    }

    /** Maps {@code path} and reads its model; throws {@link IllegalArgumentException} starting with the path when either is malformed. */
    public static GgufWeights open(Path path)
    {
        GgufFile file = GgufFile.open(requireNonNull(path, "path is null"));
        try {
            return new GgufWeights(file, GgufModel.read(file));
        }
        catch (RuntimeException e) {
            file.close();
            throw e;
        }
    }

    public GgufModel model()
    {
        return model;
    }

    public GgufFile file()
    {
        return file;
    }

    @Override
    public float[] floats(String name, int... shape)
    {
        if (closed) {
            throw new IllegalStateException(description() + " is closed; its mapping is released");
        }
        requireNonNull(name, "name is null");
        String ggufName = GgufTensorNames.toGguf(name).orElseThrow(() -> new IllegalArgumentException(file.path() + ": tensor '" + name
                + "' has no GGUF counterpart the engine maps; the model's architecture does not match this file"));
        GgufTensor tensor = file.tensor(ggufName)
                .or(() -> name.equals("lm_head.weight") && model.tiedEmbeddings() ? file.tensor("token_embd.weight") : Optional.empty())
                .orElseThrow(() -> new IllegalArgumentException(file.path() + ": tensor '" + name + "' (GGUF '" + ggufName + "') is not in the file ("
                        + file.tensors().size() + " tensors); the file does not match the model's architecture"));
        long[] fileShape = tensor.rowMajorShape();
        if (!Arrays.equals(fileShape, Arrays.stream(shape).asLongStream().toArray())) {
            throw new IllegalArgumentException(file.path() + ": tensor '" + tensor.name() + "' (for '" + name + "') has shape "
                    + Arrays.toString(fileShape) + " (GGUF dims " + Arrays.toString(tensor.dims()) + "), the model expects "
                    + Arrays.toString(shape) + "; the file's metadata does not match its tensors");
        }
        float[] values = tensor.toFloats();
        if (model.architecture().permutedQk()) {
            // a bias is permuted like its matrix's rows: a one-column matrix
            int[] matrix = shape.length == 2 ? shape : new int[] {shape[0], 1};
            if (name.endsWith(".self_attn.q_proj.weight") || name.endsWith(".self_attn.q_proj.bias")) {
                return unpermute(tensor, values, matrix, model.config().heads());
            }
            if (name.endsWith(".self_attn.k_proj.weight") || name.endsWith(".self_attn.k_proj.bias")) {
                return unpermute(tensor, values, matrix, model.config().kvHeads());
            }
        }
        return values;
    }

    private float[] unpermute(GgufTensor tensor, float[] values, int[] shape, int heads)
    {
        try {
            return LlamaQkPermutation.unpermute(values, shape[0], shape[1], heads);
        }
        catch (IllegalArgumentException e) {
            throw new IllegalArgumentException(file.path() + ": tensor '" + tensor.name() + "': " + e.getMessage()
                    + "; the file's head counts do not match its tensors", e);
        }
    }

    /** The Hugging Face names of the file's tensors that map, plus {@code lm_head.weight} when tied. */
    public Set<String> names()
    {
        Set<String> names = new LinkedHashSet<>();
        file.tensors().keySet().forEach(n -> GgufTensorNames.toHf(n).ifPresent(names::add));
        if (model.tiedEmbeddings() && file.tensor("token_embd.weight").isPresent()) {
            names.add("lm_head.weight");
        }
        return names;
    }

    @Override
    public String description()
    {
        return "GGUF " + model.architecture().ggufName() + " model " + file.path();
    }

    /** Unmaps the file; {@link #floats} fails afterwards. */
    @Override
    public void close()
    {
        closed = true;
        file.close();
    }
}
