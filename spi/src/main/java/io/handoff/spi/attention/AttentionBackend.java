package io.handoff.spi.attention;

/**
 * Attention kernels bound to one model geometry and one KV pool. Implementations must be
 * deterministic and batch- and chunk-invariant: the output for a query depends only on the query, its
 * absolute position and the KV it attends to, never on the other requests in the batch, the prompt's
 * chunking or the number of threads. Every floating-point reduction therefore has an order fixed by
 * absolute positions.
 */
public interface AttentionBackend
{
    /** Decode splits for a sequence of {@code seqLen} tokens: a function of {@code seqLen} alone. */
    int numKvSplits(int seqLen);

    /**
     * @param q {@code [batch][numQHeads][qkDim]}
     * @param out {@code [batch][numQHeads][vDim]}, overwritten
     */
    void decode(int layer, DecodeMetadata metadata, float[] q, float[] out);

    /**
     * @param q {@code [tokens][numQHeads][qkDim]}
     * @param out {@code [tokens][numQHeads][vDim]}, overwritten
     */
    void extend(int layer, ExtendMetadata metadata, float[] q, float[] out);
}
