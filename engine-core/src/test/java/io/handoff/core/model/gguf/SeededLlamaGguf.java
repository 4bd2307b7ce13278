package io.handoff.core.model.gguf;

import java.nio.file.Path;
import java.util.SplittableRandom;

/**
 * Writes a small Llama-architecture GGUF file as llama.cpp's converter lays one out (Q/K rows permuted, norms F32,
 * matrices in the chosen type) with seeded Gaussian weights and a real vocabulary, so llama.cpp and Handoff can be run on
 * the same file. The weights are drawn for large logit margins, so that two correct implementations rarely meet a
 * near-tie: queries and keys at 3/sqrt(d) (sharp attention), lm_head at 4/sqrt(d), embeddings at 1, everything else at
 * 1/sqrt(fan-in).
 */
public final class SeededLlamaGguf
{
    public static final int HIDDEN = 64;
    public static final int LAYERS = 2;
    public static final int HEADS = 4;
    public static final int KV_HEADS = 2;
    public static final int FFN = 128;
    public static final int CONTEXT = 2048;

    /** A model's widths: {@link #SMALL} is the constants above; {@link #WIDE} has rows of whole 256-value super-blocks (K-quants). */
    public record Shape(int hidden, int layers, int heads, int kvHeads, int ffn) {}

    public static final Shape SMALL = new Shape(HIDDEN, LAYERS, HEADS, KV_HEADS, FFN);
    public static final Shape WIDE = new Shape(256, 2, 4, 2, 512);

    private SeededLlamaGguf() {}

    /** An F32 file of {@code shape}. */
    public static Path write(Path file, GgufVocabulary vocabulary, Shape shape, long seed)
    {
        return write(file, vocabulary, GgufTensorType.F32, GgufTensorType.F32, seed, shape);
    }

    /** @param type F32, F16 or Q8_0: the type of every matrix (norms stay F32, as llama.cpp's converter keeps them) */
    public static Path write(Path file, GgufVocabulary vocabulary, GgufTensorType type, long seed)
    {
        return write(file, vocabulary, type, type, seed, SMALL);
    }

    /**
     * The weights {@link #write} writes as {@code type}, written as F32 after rounding them through {@code type}: the same
     * values, so a reader of the F32 file computes with exactly the weights a reader of the {@code type} file decodes.
     */
    public static Path writeDecodedAsF32(Path file, GgufVocabulary vocabulary, GgufTensorType type, long seed)
    {
        return write(file, vocabulary, type, GgufTensorType.F32, seed, SMALL);
    }

    /** Matrices rounded through {@code values}' type, then written as {@code type}. */
    private static Path write(Path file, GgufVocabulary vocabulary, GgufTensorType values, GgufTensorType type, long seed, Shape shape)
    {
        int hidden = shape.hidden();
        int layers = shape.layers();
        int heads = shape.heads();
        int kvHeads = shape.kvHeads();
        int ffn = shape.ffn();
        GgufTensorType rounding = values == type ? GgufTensorType.F32 : values;
        int vocab = vocabulary.tokens().size();
        int headDim = hidden / heads;
        SplittableRandom random = new SplittableRandom(seed);
        GgufWriter writer = new GgufWriter()
                .put(GgufArchitecture.KEY, GgufValueType.STRING, "llama")
                .put("general.name", GgufValueType.STRING, file.getFileName().toString())
                .put("llama.context_length", GgufValueType.UINT32, (long) CONTEXT)
                .put("llama.embedding_length", GgufValueType.UINT32, (long) hidden)
                .put("llama.block_count", GgufValueType.UINT32, (long) layers)
                .put("llama.feed_forward_length", GgufValueType.UINT32, (long) ffn)
                .put("llama.attention.head_count", GgufValueType.UINT32, (long) heads)
                .put("llama.attention.head_count_kv", GgufValueType.UINT32, (long) kvHeads)
                .put("llama.rope.dimension_count", GgufValueType.UINT32, (long) headDim)
                .put("llama.rope.freq_base", GgufValueType.FLOAT32, 10000f)
                .put("llama.attention.layer_norm_rms_epsilon", GgufValueType.FLOAT32, 1e-5f)
                .put("llama.vocab_size", GgufValueType.UINT32, (long) vocab);
        vocabulary.writeTo(writer);
        double unit = 1 / Math.sqrt(hidden);
        matrix(writer, "token_embd.weight", rounding, type, vocab, hidden, 1, random);
        for (int l = 0; l < layers; l++) {
            String p = "blk." + l + ".";
            norm(writer, p + "attn_norm.weight", hidden, random);
            float[] q = gaussian(random, heads * headDim * hidden, 3 * unit);
            float[] k = gaussian(random, kvHeads * headDim * hidden, 3 * unit);
            writer.tensor(p + "attn_q.weight", type, GgufWriter.dims(heads * headDim, hidden),
                    GgufWriter.decoded(rounding, GgufWriter.llamaPermute(q, heads * headDim, hidden, heads)));
            writer.tensor(p + "attn_k.weight", type, GgufWriter.dims(kvHeads * headDim, hidden),
                    GgufWriter.decoded(rounding, GgufWriter.llamaPermute(k, kvHeads * headDim, hidden, kvHeads)));
            matrix(writer, p + "attn_v.weight", rounding, type, kvHeads * headDim, hidden, unit, random);
            matrix(writer, p + "attn_output.weight", rounding, type, hidden, heads * headDim, 1 / Math.sqrt(heads * headDim), random);
            norm(writer, p + "ffn_norm.weight", hidden, random);
            matrix(writer, p + "ffn_gate.weight", rounding, type, ffn, hidden, unit, random);
            matrix(writer, p + "ffn_up.weight", rounding, type, ffn, hidden, unit, random);
            matrix(writer, p + "ffn_down.weight", rounding, type, hidden, ffn, 1 / Math.sqrt(ffn), random);
        }
        float[] ones = new float[hidden];
        java.util.Arrays.fill(ones, 1f);
        writer.tensor("output_norm.weight", GgufTensorType.F32, GgufWriter.dims(hidden), ones);
        matrix(writer, "output.weight", rounding, type, vocab, hidden, 4 * unit, random);
        return writer.write(file);
    }

    private static void matrix(GgufWriter writer, String name, GgufTensorType rounding, GgufTensorType type, int rows, int cols, double scale,
            SplittableRandom random)
    {
        writer.tensor(name, type, GgufWriter.dims(rows, cols), GgufWriter.decoded(rounding, gaussian(random, rows * cols, scale)));
    }

    /** An RMSNorm gain near 1: 1 + 0.1 N(0, 1). */
    private static void norm(GgufWriter writer, String name, int hidden, SplittableRandom random)
    {
        float[] gain = gaussian(random, hidden, 0.1);
        for (int i = 0; i < gain.length; i++) {
            gain[i] += 1;
        }
        writer.tensor(name, GgufTensorType.F32, GgufWriter.dims(hidden), gain);
    }

    private static float[] gaussian(SplittableRandom random, int n, double scale)
    {
        float[] values = new float[n];
        for (int i = 0; i < n; i++) {
            values[i] = (float) (random.nextGaussian() * scale);
        }
        return values;
    }
}
