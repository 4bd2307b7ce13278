package io.handoff.plugin.aiter;

import io.handoff.spi.attention.AttentionBackend;
import io.handoff.spi.attention.AttentionGeometry;
import io.handoff.spi.attention.DecodeMetadata;
import io.handoff.spi.attention.ExtendMetadata;
import io.handoff.spi.attention.KvDtype;
import io.handoff.spi.attention.KvRows;
import io.handoff.core.kv.PagedKvCache;

import java.lang.foreign.Arena;
import java.util.Random;

/**
 * A one-layer MLA pool of seeded latent rows in [-1, 1] holding sequences on pages drawn in a seeded
 * random order, and seeded queries in [-2, 2]. The rows depend only on the seed, the page size, the
 * dtype and the latent width, so two pools built for geometries that differ only in head count hold
 * the same KV, and a query's first heads are the same whatever the head count.
 */
final class LatentPool
{
    final AttentionGeometry geometry;
    final PagedKvCache kv;
    final int[] seqLens;
    /** {@code slots[s][p]}: the pool slot of position {@code p} of sequence {@code s}. */
    final int[][] slots;
    private final long seed;

    LatentPool(Arena arena, AttentionGeometry geometry, int pageSize, KvDtype dtype, long seed, int... seqLens)
    {
        this.geometry = geometry;
        this.seqLens = seqLens.clone();
        this.seed = seed;
        Random random = new Random(seed);
        int pages = 3;
        for (int length : seqLens) {
            pages += (length + pageSize - 1) / pageSize;
        }
        kv = PagedKvCache.allocate(arena, 1, pages, pageSize, dtype, geometry.qkDim(), geometry.vDim(), true);
        float[] row = new float[geometry.qkDim()];
        for (int slot = 0; slot < kv.slots(); slot++) {
            for (int d = 0; d < row.length; d++) {
                row[d] = random.nextFloat() * 2 - 1;
            }
            KvRows.store(kv.keys(0), slot * kv.keyRowBytes(), dtype, row, 0, row.length);
        }
        int[] pageOrder = new int[pages];
        for (int page = 0; page < pages; page++) {
            pageOrder[page] = page;
        }
        for (int i = pages - 1; i > 0; i--) {
            int j = random.nextInt(i + 1);
            int swap = pageOrder[i];
            pageOrder[i] = pageOrder[j];
            pageOrder[j] = swap;
        }
        slots = new int[seqLens.length][];
        int next = 0;
        for (int s = 0; s < seqLens.length; s++) {
            slots[s] = new int[seqLens[s]];
            for (int p = 0; p < seqLens[s]; p++) {
                if (p > 0 && p % pageSize == 0) {
                    next++;
                }
                slots[s][p] = pageOrder[next] * pageSize + p % pageSize;
            }
            next++;
        }
    }

    private float[] query(int s, int position)
    {
        Random random = new Random(seed * 31 + s * 100_003L + position);
        float[] q = new float[geometry.numQHeads() * geometry.qkDim()];
        for (int i = 0; i < q.length; i++) {
            q[i] = (random.nextFloat() * 2 - 1) * 2;
        }
        return q;
    }

    /** Decodes the last token of each listed sequence with {@code backend}; returns {@code [batch][heads][vDim]}. */
    float[] decode(AttentionBackend backend, int... sequences)
    {
        int batch = sequences.length;
        int[] indptr = new int[batch + 1];
        int[] lens = new int[batch];
        int[] splits = new int[batch];
        for (int i = 0; i < batch; i++) {
            lens[i] = seqLens[sequences[i]];
            splits[i] = backend.numKvSplits(lens[i]);
            indptr[i + 1] = indptr[i] + lens[i];
        }
        int[] indices = new int[indptr[batch]];
        int width = geometry.numQHeads() * geometry.qkDim();
        float[] q = new float[batch * width];
        for (int i = 0; i < batch; i++) {
            System.arraycopy(slots[sequences[i]], 0, indices, indptr[i], lens[i]);
            System.arraycopy(query(sequences[i], lens[i] - 1), 0, q, i * width, width);
        }
        float[] out = new float[batch * geometry.numQHeads() * geometry.vDim()];
        backend.decode(0, new DecodeMetadata(indptr, indices, lens, splits), q, out);
        return out;
    }

    /** Extends positions {@code from[i] .. to[i]-1} of each listed sequence; returns {@code [tokens][heads][vDim]}. */
    float[] extend(AttentionBackend backend, int[] sequences, int[] from, int[] to)
    {
        int batch = sequences.length;
        int[] qoIndptr = new int[batch + 1];
        int[] kvIndptr = new int[batch + 1];
        for (int i = 0; i < batch; i++) {
            qoIndptr[i + 1] = qoIndptr[i] + to[i] - from[i];
            kvIndptr[i + 1] = kvIndptr[i] + to[i];
        }
        int[] indices = new int[kvIndptr[batch]];
        int width = geometry.numQHeads() * geometry.qkDim();
        float[] q = new float[qoIndptr[batch] * width];
        for (int i = 0; i < batch; i++) {
            System.arraycopy(slots[sequences[i]], 0, indices, kvIndptr[i], to[i]);
            for (int p = from[i]; p < to[i]; p++) {
                System.arraycopy(query(sequences[i], p), 0, q, (qoIndptr[i] + p - from[i]) * width, width);
            }
        }
        float[] out = new float[qoIndptr[batch] * geometry.numQHeads() * geometry.vDim()];
        backend.extend(0, new ExtendMetadata(qoIndptr, kvIndptr, indices, from.clone(), to.clone()), q, out);
        return out;
    }

    /** Whole sequences as one extend. */
    float[] prefill(AttentionBackend backend, int... sequences)
    {
        int[] to = new int[sequences.length];
        for (int i = 0; i < sequences.length; i++) {
            to[i] = seqLens[sequences[i]];
        }
        return extend(backend, sequences, new int[sequences.length], to);
    }

    /** Heads {@code 0 .. heads-1} of output row {@code row}. */
    float[] heads(float[] out, int row, int heads)
    {
        int vDim = geometry.vDim();
        float[] result = new float[heads * vDim];
        System.arraycopy(out, row * geometry.numQHeads() * vDim, result, 0, result.length);
        return result;
    }

    float[] row(float[] out, int row)
    {
        return heads(out, row, geometry.numQHeads());
    }

    static float maxAbsDifference(float[] a, float[] b)
    {
        if (a.length != b.length) {
            throw new IllegalArgumentException("lengths differ: " + a.length + " vs " + b.length);
        }
        float max = 0;
        for (int i = 0; i < a.length; i++) {
            max = Math.max(max, Math.abs(a[i] - b[i]));
        }
        return max;
    }
}
