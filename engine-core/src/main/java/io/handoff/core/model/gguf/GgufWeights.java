package io.handoff.core.model.gguf;

import io.handoff.core.model.activation.ActivationFormat;
import io.handoff.core.model.BlockFormat;
import io.handoff.core.model.WeightMatrix;
import io.handoff.core.model.WeightSource;

import java.nio.file.Path;
import java.util.Arrays;
import java.util.LinkedHashSet;
import java.util.Optional;
import java.util.Set;

import static java.util.Objects.requireNonNull;

/**
 * The weights of one GGUF file by their Hugging Face names and shapes, so the transformer reads a
 * GGUF model as it reads a safetensors one. {@link #matrix} serves a matrix in its file type (F32, F16,
 * BF16, Q8_0) over the mapping; {@link #floats} dequantizes a tensor to F32. Llama's q and k projections get
 * Transformers' row order back ({@link LlamaQkPermutation}): a matrix by a row order over the same bytes,
 * floats by a copy. A file without {@code output.weight} ties the lm_head to the embeddings, as llama.cpp
 * does, so {@code lm_head.weight} then reads {@code token_embd.weight}. DeepSeek's routed experts are served as slices of
 * llama.cpp's stacked {@code ffn_*_exps} tensors, and its {@code kv_b_proj} from the split {@code attn_k_b} /
 * {@code attn_v_b} pair ({@link MlaKvB}) when the file has no single {@code attn_kv_b}.
 */
public final class GgufWeights
        implements WeightSource, AutoCloseable
{
    private final GgufFile file;
    private final GgufModel model;
    private final boolean quantizedActivations;
    private volatile boolean closed;

    private GgufWeights(GgufFile file, GgufModel model, boolean quantizedActivations)
    {
        this.file = file;
        this.model = model;
        this.quantizedActivations = quantizedActivations;
    }

    /** {@link #open(Path, boolean)} with quantized activations, as llama.cpp multiplies. */
    public static GgufWeights open(Path path)
    {
        return open(path, true);
    }

    /**
     * Maps {@code path} and reads its model; throws {@link IllegalArgumentException} starting with the path when either is malformed.
     *
     * @param quantizedActivations whether a block-quantized matrix rounds its input as llama.cpp's CPU build does
     *                             ({@link BlockFormat#llamaCppActivations}); without, it multiplies the exact input, the product of
     *                             the file's F32 expansion
     */
    public static GgufWeights open(Path path, boolean quantizedActivations)
    {
        GgufFile file = GgufFile.open(requireNonNull(path, "path is null"));
        try {
            return new GgufWeights(file, GgufModel.read(file), quantizedActivations);
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

    @Override
    public boolean roundsActivations()
    {
        return quantizedActivations && file.tensors().values().stream().anyMatch(tensor -> tensor.type().blockFormat().isPresent() || tensor.type() == GgufTensorType.Q8_0);
    }

    public GgufFile file()
    {
        return file;
    }

    @Override
    public float[] floats(String name, int... shape)
    {
        if (MlaKvB.isKvB(name) && splitKvB(name)) {
            return MlaKvB.join(this, file.path(), name, model.config(), shape);
        }
        GgufTensor tensor = tensor(name, shape);
        float[] values = tensor.toFloats();
        int qkHeads = permutedQkHeads(name);
        if (qkHeads > 0) {
            // a bias is permuted like its matrix's rows: a one-column matrix
            int[] matrix = shape.length == 2 ? shape : new int[] {shape[0], 1};
            try {
                return LlamaQkPermutation.unpermute(values, matrix[0], matrix[1], qkHeads);
            }
            catch (IllegalArgumentException e) {
                throw headMismatch(tensor, e);
            }
        }
        return values;
    }

    /** The matrix in its file type over the mapping, valid until {@link #close()}. */
    @Override
    public WeightMatrix matrix(String name, int rows, int cols)
    {
        GgufTensor tensor = tensor(name, rows, cols);
        WeightMatrix matrix = switch (tensor.type()) {
            case F32 -> WeightMatrix.f32(tensor.data(), rows, cols);
            case F16 -> WeightMatrix.f16(tensor.data(), rows, cols);
            case BF16 -> WeightMatrix.bf16(tensor.data(), rows, cols);
            case Q8_0 -> activations(WeightMatrix.q8_0(tensor.data(), rows, cols), ActivationFormat.Q8_0);
            case Q4_0, Q4_1, Q5_0, Q5_1, Q4_K, Q5_K, Q6_K -> {
                BlockFormat format = tensor.type().blockFormat().orElseThrow();
                yield activations(WeightMatrix.blocks(format, tensor.data(), rows, cols), format.llamaCppActivations());
            }
        };
        int qkHeads = permutedQkHeads(name);
        if (qkHeads > 0) {
            try {
                return matrix.withRowOrder(LlamaQkPermutation.ggufRows(rows, qkHeads));
            }
            catch (IllegalArgumentException e) {
                throw headMismatch(tensor, e);
            }
        }
        return matrix;
    }

    private WeightMatrix activations(WeightMatrix matrix, ActivationFormat format)
    {
        return quantizedActivations ? matrix.withActivations(format) : matrix;
    }

    private GgufTensor tensor(String name, int... shape)
    {
        if (closed) {
            throw new IllegalStateException(description() + " is closed; its mapping is released");
        }
        requireNonNull(name, "name is null");
        Optional<GgufTensorNames.ExpertSlice> expert = GgufTensorNames.expert(name);
        if (expert.isPresent()) {
            return expertTensor(name, expert.get(), shape);
        }
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
        return tensor;
    }

    /** A routed expert's matrix: a slice of the stacked {@code [experts, rows, cols]} tensor. */
    private GgufTensor expertTensor(String name, GgufTensorNames.ExpertSlice slice, int... shape)
    {
        GgufTensor stack = file.tensor(slice.ggufName()).orElseThrow(() -> new IllegalArgumentException(file.path() + ": tensor '" + name
                + "' (GGUF '" + slice.ggufName() + "' [" + slice.expert() + "]) is not in the file; the file does not match the model's architecture"));
        long[] stackShape = stack.rowMajorShape();
        long[] want = new long[shape.length + 1];
        want[0] = model.config().moe() == null ? -1 : model.config().moe().experts();
        for (int i = 0; i < shape.length; i++) {
            want[i + 1] = shape[i];
        }
        if (!Arrays.equals(stackShape, want)) {
            throw new IllegalArgumentException(file.path() + ": tensor '" + stack.name() + "' has shape " + Arrays.toString(stackShape)
                    + ", the model expects " + Arrays.toString(want) + " (experts, rows, cols); the file's metadata does not match its tensors");
        }
        return stack.slice(slice.expert());
    }

    /** Whether {@code kvBName}'s layer stores {@code kv_b_proj} split (llama.cpp's converter today) rather than whole. */
    private boolean splitKvB(String kvBName)
    {
        return file.tensor(GgufTensorNames.toGguf(kvBName).orElseThrow()).isEmpty();
    }

    /** The raw tensor {@code ggufName} with shape {@code shape}, for {@link MlaKvB}. */
    float[] rawFloats(String ggufName, String forName, int... shape)
    {
        GgufTensor tensor = file.tensor(ggufName).orElseThrow(() -> new IllegalArgumentException(file.path() + ": neither '"
                + GgufTensorNames.toGguf(forName).orElseThrow() + "' nor '" + ggufName + "' (for '" + forName + "') is in the file; the file does "
                + "not match the model's architecture"));
        if (!Arrays.equals(tensor.rowMajorShape(), Arrays.stream(shape).asLongStream().toArray())) {
            throw new IllegalArgumentException(file.path() + ": tensor '" + ggufName + "' (for '" + forName + "') has shape "
                    + Arrays.toString(tensor.rowMajorShape()) + ", the model expects " + Arrays.toString(shape)
                    + "; the file's metadata does not match its tensors");
        }
        return tensor.toFloats();
    }

    /** The heads whose rows llama.cpp permuted in tensor {@code name} (its q or k projection, weight or bias), or 0. */
    private int permutedQkHeads(String name)
    {
        if (!model.architecture().permutedQk()) {
            return 0;
        }
        if (name.endsWith(".self_attn.q_proj.weight") || name.endsWith(".self_attn.q_proj.bias")) {
            return model.config().heads();
        }
        if (name.endsWith(".self_attn.k_proj.weight") || name.endsWith(".self_attn.k_proj.bias")) {
            return model.config().kvHeads();
        }
        return 0;
    }

    private IllegalArgumentException headMismatch(GgufTensor tensor, IllegalArgumentException e)
    {
        return new IllegalArgumentException(file.path() + ": tensor '" + tensor.name() + "': " + e.getMessage()
                + "; the file's head counts do not match its tensors", e);
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

    /** Unmaps the file; {@link #floats} and {@link #matrix} fail afterwards, and so do reads of the matrices served. */
    @Override
    public void close()
    {
        closed = true;
        file.close();
    }
}
