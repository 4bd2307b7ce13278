package io.handoff.plugin.aiter;

import io.handoff.math.ExactExp;
import io.handoff.spi.attention.KvCacheView;
import io.handoff.spi.attention.KvRows;
import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.VectorSpecies;

import java.util.Arrays;

/**
 * One worker's MLA kernel: the latent rows of one split against every (padded) query head of one
 * token, in tiles of {@value #HEAD_TILE} heads and blocks of {@value #KEY_BLOCK} keys, with an online
 * softmax per head. A split's result per head is its normalised output and its log-sum-exp; the reduce
 * weighs the splits by {@code exp(lse - max lse)} in one pass.
 *
 * <p>Fixed orders: key blocks start at multiples of {@value #KEY_BLOCK} from the split's start (an
 * absolute position), keys within a block go in ascending order, and a dot product accumulates lane
 * {@code i} over dims {@code i, i+8, ...} in one 8-lane accumulator, then adds the lanes 0..7 in
 * order, then the scalar tail. Scoring four keys at once shares the query loads but gives each key the
 * same arithmetic as scoring it alone. {@code exp} and {@code log} are {@link StrictMath}'s.
 */
final class MlaKernel
{
    /** Query heads are padded to a multiple of this: the kernel's unit of work is a tile of 16 heads. */
    static final int HEAD_TILE = 16;
    static final int KEY_BLOCK = 16;
    private static final VectorSpecies<Float> LANES = FloatVector.SPECIES_256;
    private static final int WIDTH = 8;

    private final KvCacheView kv;
    private final int qkDim;
    private final int vDim;
    private final float scale;
    private final int realHeads;
    private final int paddedHeads;
    private final float[] rows;
    private final float[] scores = new float[KEY_BLOCK];
    private final float[] max = new float[HEAD_TILE];
    private final float[] sum = new float[HEAD_TILE];
    private final float[] acc;

    /** {@code realHeads} of the {@code paddedHeads} are the model's; the rest are padding, never computed. */
    MlaKernel(KvCacheView kv, int splitTokens, int qkDim, int vDim, float scale, int realHeads, int paddedHeads)
    {
        this.kv = kv;
        this.qkDim = qkDim;
        this.vDim = vDim;
        this.scale = scale;
        this.realHeads = realHeads;
        this.paddedHeads = paddedHeads;
        this.rows = new float[splitTokens * qkDim];
        this.acc = new float[HEAD_TILE * vDim];
    }

    static int paddedHeads(int numQHeads)
    {
        return (numQHeads + HEAD_TILE - 1) / HEAD_TILE * HEAD_TILE;
    }

    /** Loads latent rows of positions {@code from .. to-1} of the sequence whose slots start at {@code kvIndices[kvStart]}. */
    void load(int layer, int[] kvIndices, int kvStart, int from, int to)
    {
        long rowBytes = kv.keyRowBytes();
        for (int t = from; t < to; t++) {
            KvRows.load(kv.keys(layer), kvIndices[kvStart + t] * rowBytes, kv.dtype(), rows, (t - from) * qkDim, qkDim);
        }
    }

    /**
     * Attends the token's padded heads {@code q[qOffset ..]} ({@code [paddedHeads][qkDim]}) to the first
     * {@code count} loaded rows; head {@code h}'s partial goes to row {@code firstPartial + h} of
     * {@code partialOut} ({@code vDim} wide) and {@code partialLse}. Padded heads' rows are left as they are: the
     * reduce never reads them, and each real head's arithmetic is its own, so skipping them changes no real bit.
     */
    void split(int count, float[] q, int qOffset, float[] partialOut, float[] partialLse, int firstPartial)
    {
        for (int tile = 0; tile < paddedHeads; tile += HEAD_TILE) {
            int heads = Math.min(HEAD_TILE, realHeads - tile);
            Arrays.fill(max, Float.NEGATIVE_INFINITY);
            Arrays.fill(sum, 0f);
            Arrays.fill(acc, 0f);
            for (int block = 0; block < count; block += KEY_BLOCK) {
                int keys = Math.min(KEY_BLOCK, count - block);
                for (int h = 0; h < heads; h++) {
                    accumulateBlock(h, q, qOffset + (tile + h) * qkDim, block, keys);
                }
            }
            for (int h = 0; h < heads; h++) {
                int partial = firstPartial + tile + h;
                for (int d = 0; d < vDim; d++) {
                    partialOut[partial * vDim + d] = acc[h * vDim + d] / sum[h];
                }
                partialLse[partial] = max[h] + (float) StrictMath.log(sum[h]);
            }
        }
    }

    /** Online-softmax step of head-tile row {@code h} over rows {@code block .. block+keys-1}. */
    private void accumulateBlock(int h, float[] q, int qRow, int block, int keys)
    {
        int k = 0;
        for (; k + 4 <= keys; k += 4) {
            dot4(q, qRow, (block + k) * qkDim, k);
        }
        for (; k < keys; k++) {
            scores[k] = dot(q, qRow, rows, (block + k) * qkDim, qkDim) * scale;
        }
        float blockMax = Float.NEGATIVE_INFINITY;
        for (k = 0; k < keys; k++) {
            blockMax = Math.max(blockMax, scores[k]);
        }
        float newMax = Math.max(max[h], blockMax);
        float rescale = (float) StrictMath.exp(max[h] - newMax);
        int accRow = h * vDim;
        float headSum = sum[h] * rescale;
        FloatVector rescaleLanes = FloatVector.broadcast(LANES, rescale);
        int d = 0;
        for (int bound = LANES.loopBound(vDim); d < bound; d += WIDTH) {
            FloatVector.fromArray(LANES, acc, accRow + d).mul(rescaleLanes).intoArray(acc, accRow + d);
        }
        for (; d < vDim; d++) {
            acc[accRow + d] *= rescale;
        }
        // The block's weights with StrictMath.exp's bits, a lane-width batch at a time; headSum keeps key order.
        ExactExp.expMinus(scores, 0, newMax, scores, 0, keys);
        for (k = 0; k < keys; k++) {
            float p = scores[k];
            headSum += p;
            int v = (block + k) * qkDim;
            FloatVector pLanes = FloatVector.broadcast(LANES, p);
            d = 0;
            for (int bound = LANES.loopBound(vDim); d < bound; d += WIDTH) {
                FloatVector.fromArray(LANES, rows, v + d).fma(pLanes, FloatVector.fromArray(LANES, acc, accRow + d)).intoArray(acc, accRow + d);
            }
            for (; d < vDim; d++) {
                acc[accRow + d] = Math.fma(rows[v + d], p, acc[accRow + d]);
            }
        }
        sum[h] = headSum;
        max[h] = newMax;
    }

    /** Scores of the query row against four consecutive loaded rows, into {@code scores[at .. at+3]}. */
    private void dot4(float[] q, int qRow, int row, int at)
    {
        FloatVector a0 = FloatVector.zero(LANES);
        FloatVector a1 = FloatVector.zero(LANES);
        FloatVector a2 = FloatVector.zero(LANES);
        FloatVector a3 = FloatVector.zero(LANES);
        int i = 0;
        for (int bound = LANES.loopBound(qkDim); i < bound; i += WIDTH) {
            FloatVector x = FloatVector.fromArray(LANES, q, qRow + i);
            a0 = x.fma(FloatVector.fromArray(LANES, rows, row + i), a0);
            a1 = x.fma(FloatVector.fromArray(LANES, rows, row + qkDim + i), a1);
            a2 = x.fma(FloatVector.fromArray(LANES, rows, row + 2 * qkDim + i), a2);
            a3 = x.fma(FloatVector.fromArray(LANES, rows, row + 3 * qkDim + i), a3);
        }
        scores[at] = tail(q, qRow, row, i, lanes(a0)) * scale;
        scores[at + 1] = tail(q, qRow, row + qkDim, i, lanes(a1)) * scale;
        scores[at + 2] = tail(q, qRow, row + 2 * qkDim, i, lanes(a2)) * scale;
        scores[at + 3] = tail(q, qRow, row + 3 * qkDim, i, lanes(a3)) * scale;
    }

    private static float dot(float[] q, int qRow, float[] rows, int row, int length)
    {
        FloatVector a = FloatVector.zero(LANES);
        int i = 0;
        for (int bound = LANES.loopBound(length); i < bound; i += WIDTH) {
            a = FloatVector.fromArray(LANES, q, qRow + i).fma(FloatVector.fromArray(LANES, rows, row + i), a);
        }
        float result = lanes(a);
        for (; i < length; i++) {
            result = Math.fma(q[qRow + i], rows[row + i], result);
        }
        return result;
    }

    private float tail(float[] q, int qRow, int row, int from, float result)
    {
        for (int i = from; i < qkDim; i++) {
            result = Math.fma(q[qRow + i], rows[row + i], result);
        }
        return result;
    }

    private static float lanes(FloatVector a)
    {
        return ((((((a.lane(0) + a.lane(1)) + a.lane(2)) + a.lane(3)) + a.lane(4)) + a.lane(5)) + a.lane(6)) + a.lane(7);
    }

    /**
     * Merges the partials of items {@code firstItem .. firstItem+items-1} (each {@code paddedHeads} rows)
     * for head {@code head} into {@code out[outOffset ..]}: weights {@code exp(lse - max lse)}, summed in
     * item order. {@code scratch} holds {@code vDim} floats.
     */
    static void reduce(float[] partialOut, float[] partialLse, int paddedHeads, int vDim, int firstItem, int items, int head,
            float[] scratch, float[] out, int outOffset)
    {
        float maxLse = Float.NEGATIVE_INFINITY;
        for (int item = firstItem; item < firstItem + items; item++) {
            maxLse = Math.max(maxLse, partialLse[item * paddedHeads + head]);
        }
        Arrays.fill(scratch, 0, vDim, 0f);
        float weights = 0;
        for (int item = firstItem; item < firstItem + items; item++) {
            int partial = item * paddedHeads + head;
            float weight = (float) StrictMath.exp(partialLse[partial] - maxLse);
            weights += weight;
            for (int d = 0; d < vDim; d++) {
                scratch[d] = Math.fma(weight, partialOut[partial * vDim + d], scratch[d]);
            }
        }
        for (int d = 0; d < vDim; d++) {
            out[outOffset + d] = scratch[d] / weights;
        }
    }
}
