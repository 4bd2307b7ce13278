package io.handoff.bench.attention;

import io.handoff.core.kv.KvGeometry;
import io.handoff.core.kv.KvPool;
import io.handoff.spi.attention.AttentionBackend;
import io.handoff.spi.attention.AttentionGeometry;
import io.handoff.spi.attention.DecodeMetadata;
import io.handoff.spi.attention.ExtendMetadata;
import io.handoff.spi.attention.KvCacheView;
import io.handoff.spi.attention.KvRows;

import java.util.Arrays;
import java.util.SplittableRandom;

import static java.util.Objects.requireNonNull;

/**
 * A real KV pool ({@link KvPool}, as the engine allocates it) holding {@code batch} sequences of {@code maxSeqLen}
 * tokens, every row filled with seeded values in [-1, 1). Each sequence owns whole pages taken from a seeded
 * shuffle of the pool, so its slots are scattered the way a long-running engine's free list scatters them, and
 * attention reads through {@code kv_indices} as it does in the engine. Queries come from the same seed, in
 * [-2, 2), rounded to the pool's element type as the model rounds them.
 */
final class SeededKv
        implements AutoCloseable
{
    private final KvPool pool;
    private final AttentionGeometry geometry;
    private final int batch;
    private final int maxSeqLen;
    // slots[i][p]: the slot holding position p of sequence i
    private final int[][] slots;
    private final long seed;

    SeededKv(KvGeometry kvGeometry, AttentionGeometry geometry, int batch, int maxSeqLen, long seed)
    {
        this.geometry = requireNonNull(geometry, "geometry is null");
        this.batch = batch;
        this.maxSeqLen = maxSeqLen;
        this.seed = seed;
        int pageSize = kvGeometry.pageSize();
        int pagesPerSequence = Math.ceilDiv(maxSeqLen, pageSize);
        int pages = Math.multiplyExact(batch, pagesPerSequence);
        this.pool = KvPool.allocate(kvGeometry, pages);
        try {
            int[] order = shuffledPages(pages, new SplittableRandom(seed));
            this.slots = new int[batch][maxSeqLen];
            for (int i = 0; i < batch; i++) {
                for (int p = 0; p < maxSeqLen; p++) {
                    slots[i][p] = order[i * pagesPerSequence + p / pageSize] * pageSize + p % pageSize;
                }
            }
            fill(new SplittableRandom(seed + 1));
        }
        catch (RuntimeException | Error e) {
            pool.close();
            throw e;
        }
    }

    private static int[] shuffledPages(int pages, SplittableRandom random)
    {
        int[] order = new int[pages];
        Arrays.setAll(order, i -> i);
        for (int i = pages - 1; i > 0; i--) {
            int j = random.nextInt(i + 1);
            int swap = order[i];
            order[i] = order[j];
            order[j] = swap;
        }
        return order;
    }

    private void fill(SplittableRandom random)
    {
        KvCacheView kv = pool.view();
        float[] row = new float[Math.max(kv.keyRowElements(), kv.valueRowElements())];
        for (int layer = 0; layer < kv.layers(); layer++) {
            for (int slot = 0; slot < kv.slots(); slot++) {
                randomize(row, kv.keyRowElements(), random, 1);
                KvRows.store(kv.keys(layer), slot * kv.keyRowBytes(), kv.dtype(), row, 0, kv.keyRowElements());
                if (!kv.valuesInKeyRow()) {
                    randomize(row, kv.valueRowElements(), random, 1);
                    KvRows.store(kv.values(layer), slot * kv.valueRowBytes(), kv.dtype(), row, 0, kv.valueRowElements());
                }
            }
        }
    }

    private static void randomize(float[] values, int count, SplittableRandom random, double bound)
    {
        for (int i = 0; i < count; i++) {
            values[i] = (float) random.nextDouble(-bound, bound);
        }
    }

    KvCacheView view()
    {
        return pool.view();
    }

    long footprintBytes()
    {
        return pool.footprintBytes();
    }

    /** Bytes a decode step over every layer must read at {@code seqLen}: each sequence's K and V rows (for MLA the latent row, V inside it). */
    long decodeBytes(int seqLen)
    {
        KvCacheView kv = pool.view();
        long rowBytes = kv.keyRowBytes() + (kv.valuesInKeyRow() ? 0 : kv.valueRowBytes());
        return (long) batch * seqLen * kv.layers() * rowBytes;
    }

    /** Every sequence at {@code seqLen} tokens, its query the token at position {@code seqLen - 1}. */
    DecodeMetadata decode(int seqLen, AttentionBackend backend)
    {
        checkLength(seqLen);
        int[] indptr = new int[batch + 1];
        int[] indices = new int[batch * seqLen];
        int[] seqLens = new int[batch];
        int[] splits = new int[batch];
        for (int i = 0; i < batch; i++) {
            System.arraycopy(slots[i], 0, indices, i * seqLen, seqLen);
            indptr[i + 1] = (i + 1) * seqLen;
            seqLens[i] = seqLen;
            splits[i] = backend.numKvSplits(seqLen);
        }
        return new DecodeMetadata(indptr, indices, seqLens, splits);
    }

    /** Sequence 0's last {@code tokens} positions of {@code seqLen} as one prompt chunk after a cached prefix. */
    ExtendMetadata extend(int seqLen, int tokens)
    {
        checkLength(seqLen);
        if (tokens < 1 || tokens > seqLen) {
            throw new IllegalArgumentException("an extend chunk of " + tokens + " tokens does not fit a sequence of " + seqLen);
        }
        return new ExtendMetadata(new int[] {0, tokens}, new int[] {0, seqLen}, Arrays.copyOf(slots[0], seqLen),
                new int[] {seqLen - tokens}, new int[] {seqLen});
    }

    /** {@code rows} query rows ({@code [rows][numQHeads][qkDim]}) drawn from {@code stream}, rounded to the pool's element type. */
    float[] queries(int rows, long stream)
    {
        float[] q = new float[rows * geometry.numQHeads() * geometry.qkDim()];
        randomize(q, q.length, new SplittableRandom(seed ^ (0x9E3779B97F4A7C15L * (stream + 1))), 2);
        KvRows.round(q, 0, q.length, pool.view().dtype());
        return q;
    }

    private void checkLength(int seqLen)
    {
        if (seqLen < 1 || seqLen > maxSeqLen) {
            throw new IllegalArgumentException("sequence length " + seqLen + " is outside 1.." + maxSeqLen);
        }
    }

    @Override
    public void close()
    {
        pool.close();
    }
}
