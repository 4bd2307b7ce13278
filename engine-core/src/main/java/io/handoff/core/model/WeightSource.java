package io.handoff.core.model;

/**
 * Where a model's tensors come from, by their Hugging Face names ({@code model.embed_tokens.weight},
 * {@code model.layers.0.self_attn.q_proj.weight}, …) and shapes as stored in a checkpoint (a linear
 * layer is {@code [out, in]}, row-major). {@link SyntheticWeights} generates them; a safetensors loader
 * implements the same interface, so the transformer cannot tell the two apart.
 */
public interface WeightSource
{
    /**
     * The tensor as row-major F32 values, {@code product(shape)} of them. Throws
     * {@link IllegalArgumentException} naming the tensor when it is missing or has another shape.
     */
    float[] floats(String name, int... shape);

    /**
     * The {@code [rows, cols]} tensor {@code name} as a matrix in the element type it is stored in. A file-backed source
     * returns a view of its mapping, valid until the source is closed; the default copies {@link #floats}.
     */
    default WeightMatrix matrix(String name, int rows, int cols)
    {
        return WeightMatrix.f32(floats(name, rows, cols), rows, cols);
    }

    /** Whether some matrix rounds its input to 8 bits before multiplying, as llama.cpp's CPU build does (a quantized GGUF file). */
    default boolean roundsActivations()
    {
        return false;
    }

    /** What the weights are, for logs and errors (a seed, a checkpoint path). */
    String description();
}
