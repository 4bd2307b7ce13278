package io.handoff.plugin.triton;

import io.handoff.plugin.triton.SplitSoftmax.Partials;
import io.handoff.spi.attention.AttentionArithmetic;
import io.handoff.spi.attention.AttentionBackend;
import io.handoff.spi.attention.AttentionGeometry;
import io.handoff.spi.attention.DecodeMetadata;
import io.handoff.spi.attention.ExtendMetadata;
import io.handoff.spi.attention.KvCacheView;

import java.util.concurrent.ForkJoinPool;
import java.util.concurrent.ForkJoinWorkerThread;
import java.util.stream.IntStream;

import static io.handoff.plugin.triton.SplitSoftmax.merge;
import static java.util.Objects.requireNonNull;

/**
 * Two-stage split-KV flash-decoding and a tiled extend over the paged KV pool.
 *
 * <p>Decode, stage 1: for every (request, split) and group of KV heads one task loads the split's rows of
 * those heads, slot by slot, and computes a {@link Partials partial} for each query head of each head's group
 * (for MLA: every query head against the one latent row). Stage 2: for every (request, query head) one task merges the request's partials left to
 * right. Extend: for every (request, KV head, block of query rows) one task walks the tiles
 * {@code [k * SPLIT_TOKENS, (k + 1) * SPLIT_TOKENS)} in ascending order, computing each query's partial
 * over the keys of the tile it may see and merging it into that query's running state.
 *
 * <p>Splits and tiles are the same thing: their boundaries sit at multiples of {@link #SPLIT_TOKENS} in
 * absolute position, so a query's result depends only on its position, its values and the keys,
 * never on the batch, the chunking of its prompt, or how tasks land on threads (each output element is
 * written by exactly one task). Decode of the token at position {@code p} and extend of the query at
 * {@code p} run the same partials and merges, so they agree to the bit. A partial is {@link SplitSoftmax}'s or, for
 * {@link AttentionArithmetic#LLAMA_CPP_F16}, {@link LlamaCppSoftmax}'s.
 */
final class TritonAttention
        implements AttentionBackend
{
    /**
     * Keys per decode split and per extend tile. 256 keeps a split's rows (256 x 576 floats for a
     * DeepSeek-sized latent row) within L2 and gives long sequences enough splits to spread over cores.
     * Changing it changes results in the last bits: it is part of the numerics, not a tuning knob.
     */
    static final int SPLIT_TOKENS = 256;

    /** Query rows times query heads of a group that one extend task keeps running state for. */
    private static final int EXTEND_STATES_PER_TASK = 128;

    /** The floats of the KV heads one decode task loads together: a split's rows of them stay within L2. */
    private static final int DECODE_TILE_FLOATS = 128 * 1024;

    /** Decode tasks per thread below which a task takes fewer KV heads, so that short sequences still spread over the threads. */
    private static final int DECODE_TASKS_PER_THREAD = 4;

    private final AttentionGeometry geometry;
    private final KvCacheView kv;
    private final int numQHeads;
    private final int groupSize;
    private final int qkDim;
    private final int vDim;
    private final float scale;
    private final ThreadLocal<KeyTile> tiles;
    /** {@link AttentionArithmetic#LLAMA_CPP_F16}: the tiles' rows are rounded to F16 as they load. */
    private final boolean llamaCpp;
    /** The most KV heads a decode task loads together: a divisor of the KV heads. */
    private final int decodeHeads;

    TritonAttention(AttentionGeometry geometry, KvCacheView kv)
    {
        this.geometry = requireNonNull(geometry, "geometry is null");
        this.kv = requireNonNull(kv, "kv is null");
        this.numQHeads = geometry.numQHeads();
        this.groupSize = geometry.groupSize();
        this.qkDim = geometry.qkDim();
        this.vDim = geometry.vDim();
        this.scale = geometry.scale();
        this.llamaCpp = geometry.arithmetic() == AttentionArithmetic.LLAMA_CPP_F16;
        int rowFloats = SPLIT_TOKENS * (qkDim + (kv.valuesInKeyRow() ? 0 : vDim));
        this.decodeHeads = largestDivisor(geometry.numKvHeads(), Math.max(1, DECODE_TILE_FLOATS / rowFloats));
        this.tiles = ThreadLocal.withInitial(() -> new KeyTile(kv, SPLIT_TOKENS, qkDim, vDim, llamaCpp, groupSize, decodeHeads));
    }

    @Override
    public int numKvSplits(int seqLen)
    {
        if (seqLen < 1) {
            throw new IllegalArgumentException("seq_len must be positive: " + seqLen);
        }
        return (seqLen + SPLIT_TOKENS - 1) / SPLIT_TOKENS;
    }

    @Override
    public void decode(int layer, DecodeMetadata metadata, float[] q, float[] out)
    {
        int batch = metadata.batchSize();
        int[] seqLens = metadata.seqLens();
        int[] kvIndptr = metadata.kvIndptr();
        int[] kvIndices = metadata.kvIndices();
        checkCall(layer, kvIndices, kvIndptr[batch], q, out, batch);

        // Split s of the whole batch belongs to request splitRequest[s]; its partials are s * numQHeads + h.
        int[] firstSplit = new int[batch + 1];
        for (int i = 0; i < batch; i++) {
            int splits = numKvSplits(seqLens[i]);
            if (metadata.numKvSplits()[i] != splits) {
                throw new IllegalArgumentException("request " + i + ": num_kv_splits " + metadata.numKvSplits()[i]
                        + " but triton splits seq_len " + seqLens[i] + " into " + splits + " (build it with numKvSplits)");
            }
            firstSplit[i + 1] = firstSplit[i] + splits;
        }
        int totalSplits = firstSplit[batch];
        int[] splitRequest = new int[totalSplits];
        for (int i = 0; i < batch; i++) {
            for (int s = firstSplit[i]; s < firstSplit[i + 1]; s++) {
                splitRequest[s] = i;
            }
        }
        int numKvHeads = geometry.numKvHeads();
        Partials partials = new Partials(totalSplits * numQHeads, vDim);

        // each task a split of one request and some of its KV heads, their rows read slot by slot in one pass; how many
        // heads a task takes changes where rows are read, never a head's arithmetic
        int heads = tileHeads(totalSplits);
        int headGroups = numKvHeads / heads;
        IntStream.range(0, totalSplits * headGroups).parallel().forEach(task -> {
            int split = task / headGroups;
            int firstHead = task % headGroups * heads;
            int request = splitRequest[split];
            int from = (split - firstSplit[request]) * SPLIT_TOKENS;
            int to = Math.min(from + SPLIT_TOKENS, seqLens[request]);
            KeyTile tile = tiles.get();
            tile.loadHeads(layer, kvIndices, kvIndptr[request], from, to, firstHead, heads);
            for (int k = 0; k < heads; k++) {
                tile.select(k);
                int h = (firstHead + k) * groupSize;
                groupPartials(tile, to - from, q, (request * numQHeads + h) * qkDim, partials, split * numQHeads + h);
            }
        });

        // The first split's partial is the running state; no other task touches it.
        IntStream.range(0, batch * numQHeads).parallel().forEach(task -> {
            int request = task / numQHeads;
            int h = task % numQHeads;
            int state = firstSplit[request] * numQHeads + h;
            for (int split = firstSplit[request] + 1; split < firstSplit[request + 1]; split++) {
                merge(partials, state, partials, split * numQHeads + h);
            }
            finish(partials, state, out, task * vDim);
        });
    }

    @Override
    public void extend(int layer, ExtendMetadata metadata, float[] q, float[] out)
    {
        int batch = metadata.batchSize();
        int[] qoIndptr = metadata.qoIndptr();
        int[] kvIndptr = metadata.kvIndptr();
        int[] kvIndices = metadata.kvIndices();
        int[] prefixLens = metadata.prefixLens();
        checkCall(layer, kvIndices, kvIndptr[batch], q, out, metadata.tokens());

        int blockRows = Math.max(1, EXTEND_STATES_PER_TASK / groupSize);
        int[] firstBlock = new int[batch + 1];
        for (int i = 0; i < batch; i++) {
            int rows = qoIndptr[i + 1] - qoIndptr[i];
            firstBlock[i + 1] = firstBlock[i] + (rows + blockRows - 1) / blockRows;
        }
        int blocks = firstBlock[batch];
        int[] blockRequest = new int[blocks];
        for (int i = 0; i < batch; i++) {
            for (int b = firstBlock[i]; b < firstBlock[i + 1]; b++) {
                blockRequest[b] = i;
            }
        }
        int numKvHeads = geometry.numKvHeads();

        IntStream.range(0, blocks * numKvHeads).parallel().forEach(task -> {
            int block = task / numKvHeads;
            int kvHead = task % numKvHeads;
            int request = blockRequest[block];
            int firstRow = qoIndptr[request] + (block - firstBlock[request]) * blockRows;
            int endRow = Math.min(firstRow + blockRows, qoIndptr[request + 1]);
            int firstPosition = prefixLens[request] + (firstRow - qoIndptr[request]);
            extendBlock(layer, kvIndices, kvIndptr[request], firstRow, endRow, firstPosition, kvHead, q, out);
        });
    }

    /**
     * KV heads per decode task for {@code splits} splits: {@link #decodeHeads}, or a smaller divisor of the KV heads where
     * that would leave fewer than {@link #DECODE_TASKS_PER_THREAD} tasks per thread of the pool.
     */
    int tileHeads(int splits)
    {
        int numKvHeads = geometry.numKvHeads();
        int wanted = DECODE_TASKS_PER_THREAD * parallelism();
        int heads = decodeHeads;
        while (heads > 1 && splits * (numKvHeads / heads) < wanted) {
            heads = largestDivisor(numKvHeads, heads - 1);
        }
        return heads;
    }

    /** The threads a parallel stream started here runs on: this worker's pool, or the common pool. */
    private static int parallelism()
    {
        return Thread.currentThread() instanceof ForkJoinWorkerThread worker ? worker.getPool().getParallelism() : ForkJoinPool.getCommonPoolParallelism();
    }

    /** The largest divisor of {@code n} that is at most {@code bound} (at least 1). */
    static int largestDivisor(int n, int bound)
    {
        for (int d = Math.min(n, bound); d > 1; d--) {
            if (n % d == 0) {
                return d;
            }
        }
        return 1;
    }

    /** Rows {@code firstRow .. endRow-1} of one request, at positions {@code firstPosition ..}, for one KV head's query heads. */
    private void extendBlock(int layer, int[] kvIndices, int kvStart, int firstRow, int endRow, int firstPosition, int kvHead,
            float[] q, float[] out)
    {
        int rows = endRow - firstRow;
        int lastPosition = firstPosition + rows - 1;
        Partials states = new Partials(rows * groupSize, vDim);
        Partials tilePartials = new Partials(groupSize, vDim);
        KeyTile tile = tiles.get();
        for (int from = 0; from <= lastPosition; from += SPLIT_TOKENS) {
            int to = Math.min(from + SPLIT_TOKENS, lastPosition + 1);
            tile.load(layer, kvIndices, kvStart, from, to, kvHead, true);
            for (int r = Math.max(0, from - firstPosition); r < rows; r++) {
                int count = Math.min(to, firstPosition + r + 1) - from;
                int qOffset = ((firstRow + r) * numQHeads + kvHead * groupSize) * qkDim;
                if (from == 0) {
                    groupPartials(tile, count, q, qOffset, states, r * groupSize);
                }
                else {
                    groupPartials(tile, count, q, qOffset, tilePartials, 0);
                    for (int g = 0; g < groupSize; g++) {
                        merge(states, r * groupSize + g, tilePartials, g);
                    }
                }
            }
        }
        for (int r = 0; r < rows; r++) {
            for (int g = 0; g < groupSize; g++) {
                int h = kvHead * groupSize + g;
                finish(states, r * groupSize + g, out, ((firstRow + r) * numQHeads + h) * vDim);
            }
        }
    }

    /** The partials of one KV head's query heads (their queries from {@code q[qOffset ..]}) into {@code out[index ..]}. */
    private void groupPartials(KeyTile tile, int count, float[] q, int qOffset, Partials out, int index)
    {
        if (llamaCpp) {
            LlamaCppSoftmax.partials(tile, count, q, qOffset, groupSize, scale, out, index);
        }
        else {
            SplitSoftmax.partials(tile, count, q, qOffset, groupSize, scale, out, index);
        }
    }

    private void finish(Partials partials, int index, float[] out, int outOffset)
    {
        if (llamaCpp) {
            LlamaCppSoftmax.finish(partials, index, out, outOffset);
        }
        else {
            SplitSoftmax.finish(partials, index, out, outOffset);
        }
    }

    private void checkCall(int layer, int[] kvIndices, int usedIndices, float[] q, float[] out, int rows)
    {
        if (layer < 0 || layer >= kv.layers()) {
            throw new IllegalArgumentException("layer " + layer + " is outside the KV pool's " + kv.layers() + " layers");
        }
        if (q.length < rows * numQHeads * qkDim) {
            throw new IllegalArgumentException("q has " + q.length + " floats; " + rows + " rows need " + rows * numQHeads * qkDim);
        }
        if (out.length < rows * numQHeads * vDim) {
            throw new IllegalArgumentException("out has " + out.length + " floats; " + rows + " rows need " + rows * numQHeads * vDim);
        }
        int slots = kv.slots();
        for (int i = 0; i < usedIndices; i++) {
            if (kvIndices[i] < 0 || kvIndices[i] >= slots) {
                throw new IllegalArgumentException("kv_indices[" + i + "] = " + kvIndices[i] + " is outside the pool's " + slots + " slots");
            }
        }
    }
}
