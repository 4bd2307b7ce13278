package io.handoff.spi.attention;

import static java.util.Objects.requireNonNull;

/**
 * One extend (prefill) step's attention inputs. Request {@code i} has query rows
 * {@code qoIndptr[i] .. qoIndptr[i+1]}, the tokens at positions {@code prefixLens[i] ..
 * seqLens[i]-1}; it attends causally to the slots {@code kvIndices[kvIndptr[i] .. kvIndptr[i+1])}
 * (positions {@code 0 .. seqLens[i]-1}, all already written to the pool, the current chunk included).
 * A query at position {@code p} sees keys {@code 0..p} and nothing else, whatever the chunking.
 */
public record ExtendMetadata(int[] qoIndptr, int[] kvIndptr, int[] kvIndices, int[] prefixLens, int[] seqLens)
{
    public ExtendMetadata
    {
        requireNonNull(qoIndptr, "qoIndptr is null");
        requireNonNull(kvIndptr, "kvIndptr is null");
        requireNonNull(kvIndices, "kvIndices is null");
        requireNonNull(prefixLens, "prefixLens is null");
        requireNonNull(seqLens, "seqLens is null");
        int batch = seqLens.length;
        if (qoIndptr.length != batch + 1 || kvIndptr.length != batch + 1 || prefixLens.length != batch
                || qoIndptr[0] != 0 || kvIndptr[0] != 0 || kvIndptr[batch] > kvIndices.length) {
            throw new IllegalArgumentException("inconsistent extend metadata for batch " + batch);
        }
        for (int i = 0; i < batch; i++) {
            int extend = qoIndptr[i + 1] - qoIndptr[i];
            if (extend < 1 || prefixLens[i] < 0 || prefixLens[i] + extend != seqLens[i] || kvIndptr[i + 1] - kvIndptr[i] != seqLens[i]) {
                throw new IllegalArgumentException("request " + i + ": prefix " + prefixLens[i] + " + extend " + extend
                        + " != seq_len " + seqLens[i] + " or kv span " + (kvIndptr[i + 1] - kvIndptr[i]));
            }
        }
    }

    public int batchSize()
    {
        return seqLens.length;
    }

    public int tokens()
    {
        return qoIndptr[seqLens.length];
    }
}
