package io.handoff.spi.attention;

/**
 * How attention rounds and sums. Both are deterministic and batch- and chunk-invariant; they differ in the bits.
 */
public enum AttentionArithmetic
{
    /** Queries, keys and values as they are (the pool's values), scores, softmax and the weighted sum of values in F32. */
    F32,
    /**
     * llama.cpp's CPU flash attention for batches of fewer than 64 queries, the arithmetic behind its default context: the
     * query, keys and values rounded to F16; each score the F16 products summed in F32 in ggml's order (four 16-lane
     * accumulators over each 64 values, added pairwise, then the lanes halved down); keys taken one at a time with a running
     * maximum; values accumulated in F16 (each step rounded), then multiplied by the reciprocal of the sum of weights.
     * Less precise than {@link #F32} (the F16 accumulator loses bits over long contexts); chosen to give llama.cpp's outputs.
     */
    LLAMA_CPP_F16
}
