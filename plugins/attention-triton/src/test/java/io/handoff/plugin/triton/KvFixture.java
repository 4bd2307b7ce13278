package io.handoff.plugin.triton;

import io.handoff.spi.attention.AttentionBackend;
import io.handoff.spi.attention.AttentionGeometry;
import io.handoff.spi.attention.DecodeMetadata;
import io.handoff.spi.attention.ExtendMetadata;
import io.handoff.spi.attention.KvDtype;
import io.handoff.spi.attention.KvLayout;
import io.handoff.spi.attention.KvRows;
import io.handoff.core.kv.PagedKvCache;

import java.lang.foreign.Arena;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Random;

/**
 * A one-layer paged KV pool filled with seeded random rows in [-1, 1], holding sequences whose pages
 * are shuffled across the pool, plus seeded queries in [-2, 2] for any (sequence, position).
 */
final class KvFixture
{
    final AttentionGeometry geometry;
    final PagedKvCache kv;
    final int[] seqLens;
    /** {@code slots[s][p]}: the pool slot holding position {@code p} of sequence {@code s}. */
    final int[][] slots;
    private final long seed;

    private KvFixture(AttentionGeometry geometry, PagedKvCache kv, int[] seqLens, int[][] slots, long seed)
    {
        this.geometry = geometry;
        this.kv = kv;
        this.seqLens = seqLens;
        this.slots = slots;
        this.seed = seed;
    }

    static KvFixture create(Arena arena, AttentionGeometry geometry, int pageSize, KvDtype dtype, long seed, int... seqLens)
    {
        Random random = new Random(seed);
        int pagesNeeded = 0;
        for (int length : seqLens) {
            pagesNeeded += (length + pageSize - 1) / pageSize;
        }
        int pages = pagesNeeded + 5;
        boolean mla = geometry.layout() == KvLayout.MLA;
        PagedKvCache kv = PagedKvCache.allocate(arena, 1, pages, pageSize, dtype, geometry.keyRowElements(), geometry.valueRowElements(), mla);

        List<Integer> pageOrder = new ArrayList<>();
        for (int page = 0; page < pages; page++) {
            pageOrder.add(page);
        }
        Collections.shuffle(pageOrder, random);
        int[][] slots = new int[seqLens.length][];
        int nextPage = 0;
        for (int s = 0; s < seqLens.length; s++) {
            slots[s] = new int[seqLens[s]];
            int page = -1;
            for (int p = 0; p < seqLens[s]; p++) {
                if (p % pageSize == 0) {
                    page = pageOrder.get(nextPage++);
                }
                slots[s][p] = page * pageSize + p % pageSize;
            }
        }

        float[] keyRow = new float[kv.keyRowElements()];
        float[] valueRow = new float[kv.valueRowElements()];
        for (int slot = 0; slot < kv.slots(); slot++) {
            fill(random, keyRow, 1);
            KvRows.store(kv.keys(0), slot * kv.keyRowBytes(), dtype, keyRow, 0, keyRow.length);
            if (!mla) {
                fill(random, valueRow, 1);
                KvRows.store(kv.values(0), slot * kv.valueRowBytes(), dtype, valueRow, 0, valueRow.length);
            }
        }
        return new KvFixture(geometry, kv, seqLens, slots, seed);
    }

    /** The query of sequence {@code s}'s token at {@code position}: the same whatever batch or chunk it is in. */
    float[] query(int s, int position)
    {
        float[] q = new float[geometry.numQHeads() * geometry.qkDim()];
        fill(new Random(seed * 1_000_003L + s * 65_537L + position), q, 2);
        return q;
    }

    /** Decode metadata and queries for the last token of each listed sequence, in the given order. */
    Step decode(AttentionBackend backend, int... sequences)
    {
        int[] indptr = new int[sequences.length + 1];
        int[] lens = new int[sequences.length];
        int[] splits = new int[sequences.length];
        for (int i = 0; i < sequences.length; i++) {
            lens[i] = seqLens[sequences[i]];
            splits[i] = backend.numKvSplits(lens[i]);
            indptr[i + 1] = indptr[i] + lens[i];
        }
        int[] indices = new int[indptr[sequences.length]];
        float[] q = new float[sequences.length * geometry.numQHeads() * geometry.qkDim()];
        for (int i = 0; i < sequences.length; i++) {
            System.arraycopy(slots[sequences[i]], 0, indices, indptr[i], lens[i]);
            float[] query = query(sequences[i], lens[i] - 1);
            System.arraycopy(query, 0, q, i * query.length, query.length);
        }
        return new Step(new DecodeMetadata(indptr, indices, lens, splits), null, q, sequences.length);
    }

    /** Extend metadata and queries: sequence {@code sequences[i]} extends positions {@code from[i] .. to[i]-1}. */
    Step extend(int[] sequences, int[] from, int[] to)
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
        int[] prefixLens = from.clone();
        return new Step(null, new ExtendMetadata(qoIndptr, kvIndptr, indices, prefixLens, to.clone()), q, qoIndptr[batch]);
    }

    /** The whole of each listed sequence as one extend. */
    Step prefill(int... sequences)
    {
        int[] from = new int[sequences.length];
        int[] to = new int[sequences.length];
        for (int i = 0; i < sequences.length; i++) {
            to[i] = seqLens[sequences[i]];
        }
        return extend(sequences, from, to);
    }

    record Step(DecodeMetadata decode, ExtendMetadata extend, float[] q, int rows) {}

    float[] run(AttentionBackend backend, Step step)
    {
        float[] out = new float[step.rows() * geometry.numQHeads() * geometry.vDim()];
        if (step.decode() != null) {
            backend.decode(0, step.decode(), step.q(), out);
        }
        else {
            backend.extend(0, step.extend(), step.q(), out);
        }
        return out;
    }

    /** Output row {@code row} (all query heads) of an output buffer. */
    float[] row(float[] out, int row)
    {
        int width = geometry.numQHeads() * geometry.vDim();
        float[] result = new float[width];
        System.arraycopy(out, row * width, result, 0, width);
        return result;
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

    private static void fill(Random random, float[] values, float range)
    {
        for (int i = 0; i < values.length; i++) {
            values[i] = (random.nextFloat() * 2 - 1) * range;
        }
    }
}
