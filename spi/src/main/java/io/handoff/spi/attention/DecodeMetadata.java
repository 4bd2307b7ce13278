package io.handoff.spi.attention;

import static java.util.Objects.requireNonNull;

/**
 * One decode step's attention inputs, built by the core from {@code req_to_token}. Request {@code i}
 * attends to the slots {@code kvIndices[kvIndptr[i] .. kvIndptr[i+1])}, which hold its positions
 * {@code 0 .. seqLens[i]-1} in order; its query is the token at position {@code seqLens[i]-1}, whose KV
 * is already in the pool. {@code numKvSplits[i]} is a function of {@code seqLens[i]} alone
 * ({@link AttentionBackend#numKvSplits}), which is what makes decode batch-invariant.
 */
public record DecodeMetadata(int[] kvIndptr, int[] kvIndices, int[] seqLens, int[] numKvSplits)
{
    public DecodeMetadata
    {
        requireNonNull(kvIndptr, "kvIndptr is null");
        requireNonNull(kvIndices, "kvIndices is null");
        requireNonNull(seqLens, "seqLens is null");
        requireNonNull(numKvSplits, "numKvSplits is null");
        int batch = seqLens.length;
        if (kvIndptr.length != batch + 1 || numKvSplits.length != batch || kvIndptr[0] != 0 || kvIndptr[batch] > kvIndices.length) {
            throw new IllegalArgumentException("inconsistent decode metadata for batch " + batch);
        }
        for (int i = 0; i < batch; i++) {
            if (kvIndptr[i + 1] - kvIndptr[i] != seqLens[i] || seqLens[i] < 1 || numKvSplits[i] < 1) {
                throw new IllegalArgumentException("request " + i + ": kv_indptr span " + (kvIndptr[i + 1] - kvIndptr[i])
                        + " != seq_len " + seqLens[i] + " (or no splits)");
            }
        }
    }

    public int batchSize()
    {
        return seqLens.length;
    }
}
