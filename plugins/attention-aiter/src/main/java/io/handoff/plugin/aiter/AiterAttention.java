package io.handoff.plugin.aiter;

import io.handoff.spi.attention.AttentionBackend;
import io.handoff.spi.attention.AttentionGeometry;
import io.handoff.spi.attention.DecodeMetadata;
import io.handoff.spi.attention.ExtendMetadata;
import io.handoff.spi.attention.KvCacheView;

import java.util.Arrays;
import java.util.stream.IntStream;

import static java.util.Objects.requireNonNull;

/**
 * MLA attention in the style of aiter's absorbed decode: the query (already in latent space) is padded
 * with zero heads to a multiple of {@value MlaKernel#HEAD_TILE}; a precomputed {@link WorkSchedule}
 * hands (request, split) items to workers balanced by key count; each item yields a normalised partial
 * and its log-sum-exp per head; a reduce merges each request's partials in split order and drops the
 * padded heads. Heads never interact, so padding cannot change a real head's result; and since the reduce never reads
 * a padded head's partial, the kernel computes none (on an 8-head model that halves the work).
 *
 * <p>Extend uses the same splits, kernel and reduce for each query at position {@code p} over keys
 * {@code 0..p}, with split boundaries at absolute multiples of {@link #SPLIT_TOKENS}; blocks of query
 * rows are balanced over workers by keys visited. Decode of position {@code p} therefore equals extend
 * of position {@code p} to the bit, and neither depends on the batch, the prompt's chunking or the
 * number of workers.
 */
final class AiterAttention
        implements AttentionBackend
{
    /**
     * Keys per split, at absolute positions {@code [128k, 128(k+1))}. Part of the numerics: changing it
     * changes results in the last bits. Smaller than triton's 256 because items are what the schedule
     * balances, and finer items balance a ragged batch better.
     */
    static final int SPLIT_TOKENS = 128;

    /** Bound on the floats of per-split partials an extend block keeps before its reduce. */
    private static final int EXTEND_PARTIAL_FLOATS = 1 << 21;
    private static final int MAX_EXTEND_BLOCK_ROWS = 16;

    private final KvCacheView kv;
    private final int numQHeads;
    private final int paddedHeads;
    private final int qkDim;
    private final int vDim;
    private final float scale;
    private final int workers;

    AiterAttention(AttentionGeometry geometry, KvCacheView kv, int workers)
    {
        requireNonNull(geometry, "geometry is null");
        this.kv = requireNonNull(kv, "kv is null");
        if (workers < 1) {
            throw new IllegalArgumentException("workers must be positive: " + workers);
        }
        this.numQHeads = geometry.numQHeads();
        this.paddedHeads = MlaKernel.paddedHeads(numQHeads);
        this.qkDim = geometry.qkDim();
        this.vDim = geometry.vDim();
        this.scale = geometry.scale();
        this.workers = workers;
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
        for (int i = 0; i < batch; i++) {
            if (metadata.numKvSplits()[i] != numKvSplits(seqLens[i])) {
                throw new IllegalArgumentException("request " + i + ": num_kv_splits " + metadata.numKvSplits()[i]
                        + " but aiter splits seq_len " + seqLens[i] + " into " + numKvSplits(seqLens[i]) + " (build it with numKvSplits)");
            }
        }
        WorkSchedule schedule = WorkSchedule.forDecode(seqLens, SPLIT_TOKENS, workers);
        float[] padded = padHeads(q, batch);
        float[] partialOut = new float[schedule.items() * paddedHeads * vDim];
        float[] partialLse = new float[schedule.items() * paddedHeads];

        IntStream.range(0, workers).parallel().forEach(worker -> {
            MlaKernel kernel = new MlaKernel(kv, SPLIT_TOKENS, qkDim, vDim, scale, numQHeads, paddedHeads);
            for (int item : schedule.workerItems()[worker]) {
                int request = schedule.itemRequest()[item];
                int from = schedule.itemFrom()[item];
                int to = schedule.itemTo()[item];
                kernel.load(layer, kvIndices, kvIndptr[request], from, to);
                kernel.split(to - from, padded, request * paddedHeads * qkDim, partialOut, partialLse, item * paddedHeads);
            }
        });

        int[] reduceIndptr = schedule.reduceIndptr();
        IntStream.range(0, batch).parallel().forEach(request -> {
            float[] scratch = new float[vDim];
            for (int h = 0; h < numQHeads; h++) {
                MlaKernel.reduce(partialOut, partialLse, paddedHeads, vDim, reduceIndptr[request], reduceIndptr[request + 1] - reduceIndptr[request],
                        h, scratch, out, (request * numQHeads + h) * vDim);
            }
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
        int[] seqLens = metadata.seqLens();
        checkCall(layer, kvIndices, kvIndptr[batch], q, out, metadata.tokens());

        // Blocks of query rows; a block's size only bounds memory, it never changes a row's arithmetic.
        int[] blockRequest = new int[metadata.tokens()];
        int[] blockFirstRow = new int[metadata.tokens()];
        int[] blockEndRow = new int[metadata.tokens()];
        long[] blockKeys = new long[metadata.tokens()];
        int blocks = 0;
        for (int i = 0; i < batch; i++) {
            int rowsPerBlock = (int) Math.clamp(EXTEND_PARTIAL_FLOATS / ((long) numKvSplits(seqLens[i]) * paddedHeads * (vDim + 1)),
                    1, MAX_EXTEND_BLOCK_ROWS);
            for (int row = qoIndptr[i]; row < qoIndptr[i + 1]; row += rowsPerBlock) {
                blockRequest[blocks] = i;
                blockFirstRow[blocks] = row;
                blockEndRow[blocks] = Math.min(row + rowsPerBlock, qoIndptr[i + 1]);
                for (int r = row; r < blockEndRow[blocks]; r++) {
                    blockKeys[blocks] += prefixLens[i] + (r - qoIndptr[i]) + 1;
                }
                blocks++;
            }
        }
        int[][] workerBlocks = WorkSchedule.balance(Arrays.copyOf(blockKeys, blocks), workers);
        float[] padded = padHeads(q, metadata.tokens());

        IntStream.range(0, workers).parallel().forEach(worker -> {
            MlaKernel kernel = new MlaKernel(kv, SPLIT_TOKENS, qkDim, vDim, scale, numQHeads, paddedHeads);
            float[] scratch = new float[vDim];
            for (int block : workerBlocks[worker]) {
                int request = blockRequest[block];
                int firstPosition = prefixLens[request] + (blockFirstRow[block] - qoIndptr[request]);
                extendBlock(kernel, scratch, layer, kvIndices, kvIndptr[request], blockFirstRow[block], blockEndRow[block], firstPosition, padded, out);
            }
        });
    }

    private void extendBlock(MlaKernel kernel, float[] scratch, int layer, int[] kvIndices, int kvStart, int firstRow, int endRow,
            int firstPosition, float[] padded, float[] out)
    {
        int rows = endRow - firstRow;
        int lastPosition = firstPosition + rows - 1;
        int splits = numKvSplits(lastPosition + 1);
        // Partial (row r, split k) is item r * splits + k, so each row's partials are contiguous and in split order.
        float[] partialOut = new float[rows * splits * paddedHeads * vDim];
        float[] partialLse = new float[rows * splits * paddedHeads];
        for (int k = 0; k < splits; k++) {
            int from = k * SPLIT_TOKENS;
            int to = Math.min(from + SPLIT_TOKENS, lastPosition + 1);
            kernel.load(layer, kvIndices, kvStart, from, to);
            for (int r = Math.max(0, from - firstPosition); r < rows; r++) {
                int count = Math.min(to, firstPosition + r + 1) - from;
                kernel.split(count, padded, (firstRow + r) * paddedHeads * qkDim, partialOut, partialLse, (r * splits + k) * paddedHeads);
            }
        }
        for (int r = 0; r < rows; r++) {
            int rowSplits = numKvSplits(firstPosition + r + 1);
            for (int h = 0; h < numQHeads; h++) {
                MlaKernel.reduce(partialOut, partialLse, paddedHeads, vDim, r * splits, rowSplits, h, scratch, out,
                        ((firstRow + r) * numQHeads + h) * vDim);
            }
        }
    }

    /** {@code [rows][paddedHeads][qkDim]}: the real heads, then zero heads up to the multiple of 16. */
    private float[] padHeads(float[] q, int rows)
    {
        if (paddedHeads == numQHeads) {
            return q;
        }
        float[] padded = new float[rows * paddedHeads * qkDim];
        for (int row = 0; row < rows; row++) {
            System.arraycopy(q, row * numQHeads * qkDim, padded, row * paddedHeads * qkDim, numQHeads * qkDim);
        }
        return padded;
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
