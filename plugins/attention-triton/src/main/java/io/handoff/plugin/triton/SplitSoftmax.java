package io.handoff.plugin.triton;

import io.handoff.math.ExactExp;
import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.VectorMask;
import jdk.incubator.vector.VectorOperators;
import jdk.incubator.vector.VectorShuffle;
import jdk.incubator.vector.VectorSpecies;

import java.util.Arrays;

/**
 * The arithmetic of flash-decoding, shared by decode and extend so that both give the same bits for a
 * query at the same position. A <em>partial</em> is one query head's attention over the keys of one
 * split: the split's max score {@code m}, {@code l = sum exp(s - m)} and the unnormalised
 * {@code acc = sum exp(s - m) * v}. Partials are merged left to right in split order and the result is
 * {@code acc / l}.
 *
 * <p>Every reduction has an order fixed by its length: dot products use a fixed 8-lane layout (two
 * accumulators over alternating 8-element blocks, then a fixed pairwise lane tree, then a scalar
 * tail), and sums over keys run in ascending position. The species is 256 bits on every machine, not
 * the preferred one, so that hosts with different vector widths agree to the bit. {@code exp} is
 * {@link StrictMath#exp}, which is the same function everywhere; a split's weights come from {@link ExactExp},
 * which gives its bits a lane-width batch at a time.
 */
final class SplitSoftmax
{
    private static final VectorSpecies<Float> LANES = FloatVector.SPECIES_256;
    private static final int WIDTH = 8;
    // sixteen-lane vectors in hardware: there, a step of the 8-lane order takes one 16-lane operation (the same bits)
    private static final boolean WIDE = FloatVector.SPECIES_PREFERRED.vectorBitSize() >= 512;
    private static final VectorSpecies<Float> WIDE_LANES = FloatVector.SPECIES_512;
    private static final VectorMask<Float> LOW_HALF = VectorMask.fromLong(WIDE_LANES, 0xFFL);
    private static final VectorMask<Float> HIGH_HALF = LOW_HALF.not();
    private static final VectorShuffle<Float> WIDE_SWAP_8 = VectorShuffle.fromOp(WIDE_LANES, l -> l ^ 8);
    private static final VectorShuffle<Float> WIDE_SWAP_1 = VectorShuffle.fromOp(WIDE_LANES, l -> l ^ 1);
    private static final VectorShuffle<Float> WIDE_SWAP_2 = VectorShuffle.fromOp(WIDE_LANES, l -> l ^ 2);
    private static final VectorShuffle<Float> WIDE_SWAP_4 = VectorShuffle.fromOp(WIDE_LANES, l -> l ^ 4);
    /** Keys whose value rows {@link #accumulate4} keeps in L1 while it passes over their elements. */
    private static final int KEYS_PER_BLOCK = 16;
    private static final VectorShuffle<Float> SWAP_1 = VectorShuffle.fromOp(LANES, l -> l ^ 1);
    private static final VectorShuffle<Float> SWAP_2 = VectorShuffle.fromOp(LANES, l -> l ^ 2);
    private static final VectorShuffle<Float> SWAP_4 = VectorShuffle.fromOp(LANES, l -> l ^ 4);

    private SplitSoftmax() {}

    /** Partial state for {@code count} query heads (or splits) with {@code vDim}-wide values. */
    static final class Partials
    {
        final int vDim;
        final float[] max;
        final float[] sum;
        final float[] acc;

        Partials(int count, int vDim)
        {
            this.vDim = vDim;
            this.max = new float[count];
            this.sum = new float[count];
            this.acc = new float[Math.multiplyExact(count, vDim)];
        }
    }

    /**
     * Computes the partial of the query head at {@code q[qOffset..]} over the first {@code count} rows of
     * {@code tile} into {@code out[index]}.
     */
    static void partial(KeyTile tile, int count, float[] q, int qOffset, float scale, Partials out, int index)
    {
        partials(tile, count, q, qOffset, 1, scale, out, index);
    }

    /**
     * {@link #partial} of {@code heads} query heads that share the tile's rows (a GQA group, or every head of an MLA
     * layer): head {@code g}'s query at {@code q[qOffset + g * qkDim ..]}, its partial into {@code out[index + g]}. Each
     * head's arithmetic is exactly {@link #partial}'s, its scores {@link #dot}, its weights summed in key order and its
     * values added by {@link #axpy}'s fused steps in key order; four heads at a time share each load of a key or value
     * and keep their chains side by side, which one head's latency-bound chain alone cannot.
     */
    static void partials(KeyTile tile, int count, float[] q, int qOffset, int heads, float scale, Partials out, int index)
    {
        int qkDim = tile.qkDim;
        int vDim = out.vDim;
        // head g's scores, then its weights, at scores[g * count + t]
        float[] scores = tile.scores;
        int g = 0;
        for (; g + 3 < heads; g += 4) {
            if (WIDE && qkDim % (2 * WIDTH) == 0) {
                scores4Wide(q, qOffset + g * qkDim, qkDim, tile.keys, tile.keyBase, tile.keyStride, count, scale, scores, g * count);
            }
            else {
                scores4(q, qOffset + g * qkDim, qkDim, tile.keys, tile.keyBase, tile.keyStride, count, scale, scores, g * count);
            }
        }
        for (; g < heads; g++) {
            for (int t = 0; t < count; t++) {
                scores[g * count + t] = dot(q, qOffset + g * qkDim, tile.keys, tile.keyBase + t * tile.keyStride, qkDim) * scale;
            }
        }
        for (g = 0; g < heads; g++) {
            int at = g * count;
            float max = max(scores, at, count);
            // the weights exp(s - max) a lane-width batch at a time, with StrictMath.exp's bits
            ExactExp.expMinus(scores, at, max, scores, at, count);
            out.max[index + g] = max;
        }
        sums(scores, count, heads, out.sum, index);
        Arrays.fill(out.acc, index * vDim, (index + heads) * vDim, 0f);
        for (g = 0; g + 3 < heads; g += 4) {
            accumulate4(scores, g * count, count, tile.values, tile.valueBase, tile.valueStride, out.acc, (index + g) * vDim, vDim);
        }
        for (; g < heads; g++) {
            for (int t = 0; t < count; t++) {
                axpy(scores[g * count + t], tile.values, tile.valueBase + t * tile.valueStride, out.acc, (index + g) * vDim, vDim);
            }
        }
    }

    /** The largest of {@code values[at .. at + count)} as {@link Math#max} finds it, which any grouping of the values gives. */
    private static float max(float[] values, int at, int count)
    {
        int t = 0;
        float max = Float.NEGATIVE_INFINITY;
        if (count >= WIDTH) {
            FloatVector lanes = FloatVector.broadcast(LANES, Float.NEGATIVE_INFINITY);
            for (; t + WIDTH <= count; t += WIDTH) {
                lanes = lanes.max(FloatVector.fromArray(LANES, values, at + t));
            }
            max = lanes.reduceLanes(VectorOperators.MAX);
        }
        for (; t < count; t++) {
            max = Math.max(max, values[at + t]);
        }
        return max;
    }

    /**
     * Each head's weights ({@code weights[g * count ..]}) summed in key order into {@code sums[index + g]}: four heads'
     * chains side by side, each the same additions as alone.
     */
    private static void sums(float[] weights, int count, int heads, float[] sums, int index)
    {
        int g = 0;
        for (; g + 3 < heads; g += 4) {
            int a0 = g * count;
            float s0 = 0;
            float s1 = 0;
            float s2 = 0;
            float s3 = 0;
            for (int t = 0; t < count; t++) {
                s0 += weights[a0 + t];
                s1 += weights[a0 + count + t];
                s2 += weights[a0 + 2 * count + t];
                s3 += weights[a0 + 3 * count + t];
            }
            sums[index + g] = s0;
            sums[index + g + 1] = s1;
            sums[index + g + 2] = s2;
            sums[index + g + 3] = s3;
        }
        for (; g < heads; g++) {
            float sum = 0;
            for (int t = 0; t < count; t++) {
                sum += weights[g * count + t];
            }
            sums[index + g] = sum;
        }
    }

    /**
     * The scores of four queries ({@code q[q0 + j * qkDim ..]}, {@code j < 4}) against keys {@code 0 .. count-1} (key
     * {@code t} at {@code keys[base + t * stride ..]}), each {@link #dot} times {@code scale}, into
     * {@code out[o + j * count + t]}: the four dots' accumulators side by side.
     */
    private static void scores4(float[] q, int q0, int qkDim, float[] keys, int base, int stride, int count, float scale, float[] out, int o)
    {
        int q1 = q0 + qkDim;
        int q2 = q1 + qkDim;
        int q3 = q2 + qkDim;
        for (int t = 0; t < count; t++) {
            int k = base + t * stride;
            FloatVector even0 = FloatVector.zero(LANES);
            FloatVector odd0 = even0;
            FloatVector even1 = even0;
            FloatVector odd1 = even0;
            FloatVector even2 = even0;
            FloatVector odd2 = even0;
            FloatVector even3 = even0;
            FloatVector odd3 = even0;
            int i = 0;
            for (; i + 2 * WIDTH <= qkDim; i += 2 * WIDTH) {
                FloatVector keyEven = FloatVector.fromArray(LANES, keys, k + i);
                FloatVector keyOdd = FloatVector.fromArray(LANES, keys, k + i + WIDTH);
                even0 = FloatVector.fromArray(LANES, q, q0 + i).fma(keyEven, even0);
                odd0 = FloatVector.fromArray(LANES, q, q0 + i + WIDTH).fma(keyOdd, odd0);
                even1 = FloatVector.fromArray(LANES, q, q1 + i).fma(keyEven, even1);
                odd1 = FloatVector.fromArray(LANES, q, q1 + i + WIDTH).fma(keyOdd, odd1);
                even2 = FloatVector.fromArray(LANES, q, q2 + i).fma(keyEven, even2);
                odd2 = FloatVector.fromArray(LANES, q, q2 + i + WIDTH).fma(keyOdd, odd2);
                even3 = FloatVector.fromArray(LANES, q, q3 + i).fma(keyEven, even3);
                odd3 = FloatVector.fromArray(LANES, q, q3 + i + WIDTH).fma(keyOdd, odd3);
            }
            if (i + WIDTH <= qkDim) {
                FloatVector key = FloatVector.fromArray(LANES, keys, k + i);
                even0 = FloatVector.fromArray(LANES, q, q0 + i).fma(key, even0);
                even1 = FloatVector.fromArray(LANES, q, q1 + i).fma(key, even1);
                even2 = FloatVector.fromArray(LANES, q, q2 + i).fma(key, even2);
                even3 = FloatVector.fromArray(LANES, q, q3 + i).fma(key, even3);
                i += WIDTH;
            }
            out[o + t] = tail(even0.add(odd0), q, q0, keys, k, i, qkDim) * scale;
            out[o + count + t] = tail(even1.add(odd1), q, q1, keys, k, i, qkDim) * scale;
            out[o + 2 * count + t] = tail(even2.add(odd2), q, q2, keys, k, i, qkDim) * scale;
            out[o + 3 * count + t] = tail(even3.add(odd3), q, q3, keys, k, i, qkDim) * scale;
        }
    }

    /**
     * {@link #dot}'s end: the lane tree of {@code s} by three lane swaps and adds (each adds the tree's two operands, so
     * lane 0 ends with the tree's sum), then the values from {@code i} to {@code length} one by one.
     */
    private static float tail(FloatVector s, float[] a, int aOffset, float[] b, int bOffset, int i, int length)
    {
        FloatVector pairs = s.add(s.rearrange(SWAP_1));
        FloatVector quads = pairs.add(pairs.rearrange(SWAP_2));
        float result = quads.add(quads.rearrange(SWAP_4)).lane(0);
        for (; i < length; i++) {
            result = Math.fma(a[aOffset + i], b[bOffset + i], result);
        }
        return result;
    }

    /**
     * {@link #axpy} of every key's value row ({@code values[base + t * stride ..]}) into four heads' accumulators
     * ({@code acc[a0 + j * vDim ..]}) with their weights ({@code weights[w0 + j * count + t]}), keys in order: each
     * element's chain of fused steps is axpy's, sixteen elements of four heads held in registers over all the keys.
     */
    private static void accumulate4(float[] weights, int w0, int count, float[] values, int base, int stride, float[] acc, int a0, int vDim)
    {
        int w1 = w0 + count;
        int w2 = w1 + count;
        int w3 = w2 + count;
        int wide = WIDE ? vDim - vDim % (4 * WIDTH) : 0;
        if (wide > 0) {
            accumulate4Wide(weights, w0, count, values, base, stride, acc, a0, vDim, wide);
        }
        int d = vDim - vDim % (2 * WIDTH);
        // keys a block at a time, so that a block's rows stay in L1 while every sixteen elements of them pass
        for (int t0 = 0; t0 < count; t0 += KEYS_PER_BLOCK) {
            int tEnd = Math.min(count, t0 + KEYS_PER_BLOCK);
            for (int e = wide; e < d; e += 2 * WIDTH) {
                int c0 = a0 + e;
                int c1 = c0 + vDim;
                int c2 = c1 + vDim;
                int c3 = c2 + vDim;
                FloatVector low0 = FloatVector.fromArray(LANES, acc, c0);
                FloatVector high0 = FloatVector.fromArray(LANES, acc, c0 + WIDTH);
                FloatVector low1 = FloatVector.fromArray(LANES, acc, c1);
                FloatVector high1 = FloatVector.fromArray(LANES, acc, c1 + WIDTH);
                FloatVector low2 = FloatVector.fromArray(LANES, acc, c2);
                FloatVector high2 = FloatVector.fromArray(LANES, acc, c2 + WIDTH);
                FloatVector low3 = FloatVector.fromArray(LANES, acc, c3);
                FloatVector high3 = FloatVector.fromArray(LANES, acc, c3 + WIDTH);
                for (int t = t0; t < tEnd; t++) {
                    FloatVector low = FloatVector.fromArray(LANES, values, base + t * stride + e);
                    FloatVector high = FloatVector.fromArray(LANES, values, base + t * stride + e + WIDTH);
                    FloatVector p = FloatVector.broadcast(LANES, weights[w0 + t]);
                    low0 = low.fma(p, low0);
                    high0 = high.fma(p, high0);
                    p = FloatVector.broadcast(LANES, weights[w1 + t]);
                    low1 = low.fma(p, low1);
                    high1 = high.fma(p, high1);
                    p = FloatVector.broadcast(LANES, weights[w2 + t]);
                    low2 = low.fma(p, low2);
                    high2 = high.fma(p, high2);
                    p = FloatVector.broadcast(LANES, weights[w3 + t]);
                    low3 = low.fma(p, low3);
                    high3 = high.fma(p, high3);
                }
                low0.intoArray(acc, c0);
                high0.intoArray(acc, c0 + WIDTH);
                low1.intoArray(acc, c1);
                high1.intoArray(acc, c1 + WIDTH);
                low2.intoArray(acc, c2);
                high2.intoArray(acc, c2 + WIDTH);
                low3.intoArray(acc, c3);
                high3.intoArray(acc, c3 + WIDTH);
            }
        }
        // the rest of the row, a head at a time (axpy's own steps)
        for (int j = 0; j < 4 && d < vDim; j++) {
            for (int t = 0; t < count; t++) {
                axpy(weights[w0 + j * count + t], values, base + t * stride + d, acc, a0 + j * vDim + d, vDim - d);
            }
        }
    }

    /**
     * {@link #scores4} in 16-lane vectors: lanes 0 to 7 of each accumulator are {@link #dot}'s {@code even}, lanes 8 to
     * 15 its {@code odd} (sixteen consecutive values a step, so one product where the 8-lane form takes two); folding the
     * high lanes onto the low ones gives {@code even + odd}, then the tree. Two keys at a time, so that eight chains of
     * products are in flight. For whole steps of sixteen values.
     */
    private static void scores4Wide(float[] q, int q0, int qkDim, float[] keys, int base, int stride, int count, float scale, float[] out, int o)
    {
        int q1 = q0 + qkDim;
        int q2 = q1 + qkDim;
        int q3 = q2 + qkDim;
        int t = 0;
        for (; t + 1 < count; t += 2) {
            int k = base + t * stride;
            int l = k + stride;
            FloatVector a0 = FloatVector.zero(WIDE_LANES);
            FloatVector a1 = a0;
            FloatVector a2 = a0;
            FloatVector a3 = a0;
            FloatVector b0 = a0;
            FloatVector b1 = a0;
            FloatVector b2 = a0;
            FloatVector b3 = a0;
            for (int i = 0; i < qkDim; i += 2 * WIDTH) {
                FloatVector first = FloatVector.fromArray(WIDE_LANES, keys, k + i);
                FloatVector second = FloatVector.fromArray(WIDE_LANES, keys, l + i);
                FloatVector x = FloatVector.fromArray(WIDE_LANES, q, q0 + i);
                a0 = x.fma(first, a0);
                b0 = x.fma(second, b0);
                x = FloatVector.fromArray(WIDE_LANES, q, q1 + i);
                a1 = x.fma(first, a1);
                b1 = x.fma(second, b1);
                x = FloatVector.fromArray(WIDE_LANES, q, q2 + i);
                a2 = x.fma(first, a2);
                b2 = x.fma(second, b2);
                x = FloatVector.fromArray(WIDE_LANES, q, q3 + i);
                a3 = x.fma(first, a3);
                b3 = x.fma(second, b3);
            }
            // eight trees two to a vector (the second head's lanes folded into the first's high half): sums at lanes 0 and 8
            FloatVector p0 = laneTrees(a0, a1);
            FloatVector p1 = laneTrees(a2, a3);
            FloatVector p2 = laneTrees(b0, b1);
            FloatVector p3 = laneTrees(b2, b3);
            out[o + t] = p0.lane(0) * scale;
            out[o + count + t] = p0.lane(WIDTH) * scale;
            out[o + 2 * count + t] = p1.lane(0) * scale;
            out[o + 3 * count + t] = p1.lane(WIDTH) * scale;
            out[o + t + 1] = p2.lane(0) * scale;
            out[o + count + t + 1] = p2.lane(WIDTH) * scale;
            out[o + 2 * count + t + 1] = p3.lane(0) * scale;
            out[o + 3 * count + t + 1] = p3.lane(WIDTH) * scale;
        }
        if (t < count) {
            for (int j = 0; j < 4; j++) {
                out[o + j * count + t] = dot(q, q0 + j * qkDim, keys, base + t * stride, qkDim) * scale;
            }
        }
    }

    /**
     * The lane trees of two 16-lane accumulators: each folded ({@code even + odd} in lanes 0 to 7), {@code y}'s moved to the
     * high half, then the tree's three steps by lane swaps, each adding the tree's two operands: {@code x}'s sum at lane 0,
     * {@code y}'s at lane 8.
     */
    private static FloatVector laneTrees(FloatVector x, FloatVector y)
    {
        FloatVector v = x.add(x.rearrange(WIDE_SWAP_8)).blend(y.add(y.rearrange(WIDE_SWAP_8)).rearrange(WIDE_SWAP_8), HIGH_HALF);
        v = v.add(v.rearrange(WIDE_SWAP_1));
        v = v.add(v.rearrange(WIDE_SWAP_2));
        return v.add(v.rearrange(WIDE_SWAP_4));
    }

    /**
     * {@link #accumulate4}'s elements {@code 0 .. wide-1} (a multiple of 32) in 16-lane vectors, 32 elements of four heads
     * in registers over a block of keys: each element's chain is the same fused steps in key order.
     */
    private static void accumulate4Wide(float[] weights, int w0, int count, float[] values, int base, int stride, float[] acc, int a0, int vDim,
            int wide)
    {
        int w1 = w0 + count;
        int w2 = w1 + count;
        int w3 = w2 + count;
        int n = 2 * WIDTH;
        for (int t0 = 0; t0 < count; t0 += KEYS_PER_BLOCK) {
            int tEnd = Math.min(count, t0 + KEYS_PER_BLOCK);
            for (int e = 0; e < wide; e += 2 * n) {
                int c0 = a0 + e;
                int c1 = c0 + vDim;
                int c2 = c1 + vDim;
                int c3 = c2 + vDim;
                FloatVector low0 = FloatVector.fromArray(WIDE_LANES, acc, c0);
                FloatVector high0 = FloatVector.fromArray(WIDE_LANES, acc, c0 + n);
                FloatVector low1 = FloatVector.fromArray(WIDE_LANES, acc, c1);
                FloatVector high1 = FloatVector.fromArray(WIDE_LANES, acc, c1 + n);
                FloatVector low2 = FloatVector.fromArray(WIDE_LANES, acc, c2);
                FloatVector high2 = FloatVector.fromArray(WIDE_LANES, acc, c2 + n);
                FloatVector low3 = FloatVector.fromArray(WIDE_LANES, acc, c3);
                FloatVector high3 = FloatVector.fromArray(WIDE_LANES, acc, c3 + n);
                for (int t = t0; t < tEnd; t++) {
                    FloatVector low = FloatVector.fromArray(WIDE_LANES, values, base + t * stride + e);
                    FloatVector high = FloatVector.fromArray(WIDE_LANES, values, base + t * stride + e + n);
                    FloatVector p = FloatVector.broadcast(WIDE_LANES, weights[w0 + t]);
                    low0 = low.fma(p, low0);
                    high0 = high.fma(p, high0);
                    p = FloatVector.broadcast(WIDE_LANES, weights[w1 + t]);
                    low1 = low.fma(p, low1);
                    high1 = high.fma(p, high1);
                    p = FloatVector.broadcast(WIDE_LANES, weights[w2 + t]);
                    low2 = low.fma(p, low2);
                    high2 = high.fma(p, high2);
                    p = FloatVector.broadcast(WIDE_LANES, weights[w3 + t]);
                    low3 = low.fma(p, low3);
                    high3 = high.fma(p, high3);
                }
                low0.intoArray(acc, c0);
                high0.intoArray(acc, c0 + n);
                low1.intoArray(acc, c1);
                high1.intoArray(acc, c1 + n);
                low2.intoArray(acc, c2);
                high2.intoArray(acc, c2 + n);
                low3.intoArray(acc, c3);
                high3.intoArray(acc, c3 + n);
            }
        }
    }

    /** {@code into[i] = into[i] (+) from[j]}, where {@code from[j]} covers the keys after those of {@code into[i]}. */
    static void merge(Partials into, int i, Partials from, int j)
    {
        float max = Math.max(into.max[i], from.max[j]);
        float keep = (float) StrictMath.exp(into.max[i] - max);
        float add = (float) StrictMath.exp(from.max[j] - max);
        into.sum[i] = into.sum[i] * keep + from.sum[j] * add;
        into.max[i] = max;
        int vDim = into.vDim;
        float[] y = into.acc;
        float[] x = from.acc;
        int yOffset = i * vDim;
        int xOffset = j * vDim;
        FloatVector keepLanes = FloatVector.broadcast(LANES, keep);
        FloatVector addLanes = FloatVector.broadcast(LANES, add);
        int d = 0;
        for (int bound = LANES.loopBound(vDim); d < bound; d += WIDTH) {
            FloatVector kept = FloatVector.fromArray(LANES, y, yOffset + d).mul(keepLanes);
            kept.add(FloatVector.fromArray(LANES, x, xOffset + d).mul(addLanes)).intoArray(y, yOffset + d);
        }
        for (; d < vDim; d++) {
            y[yOffset + d] = y[yOffset + d] * keep + x[xOffset + d] * add;
        }
    }

    /** Writes the attention output {@code acc / l} of {@code partials[index]}. */
    static void finish(Partials partials, int index, float[] out, int outOffset)
    {
        int vDim = partials.vDim;
        float sum = partials.sum[index];
        for (int d = 0; d < vDim; d++) {
            out[outOffset + d] = partials.acc[index * vDim + d] / sum;
        }
    }

    static float dot(float[] a, int aOffset, float[] b, int bOffset, int length)
    {
        FloatVector even = FloatVector.zero(LANES);
        FloatVector odd = FloatVector.zero(LANES);
        int i = 0;
        for (; i + 2 * WIDTH <= length; i += 2 * WIDTH) {
            even = FloatVector.fromArray(LANES, a, aOffset + i).fma(FloatVector.fromArray(LANES, b, bOffset + i), even);
            odd = FloatVector.fromArray(LANES, a, aOffset + i + WIDTH).fma(FloatVector.fromArray(LANES, b, bOffset + i + WIDTH), odd);
        }
        if (i + WIDTH <= length) {
            even = FloatVector.fromArray(LANES, a, aOffset + i).fma(FloatVector.fromArray(LANES, b, bOffset + i), even);
            i += WIDTH;
        }
        FloatVector s = even.add(odd);
        float result = ((s.lane(0) + s.lane(1)) + (s.lane(2) + s.lane(3))) + ((s.lane(4) + s.lane(5)) + (s.lane(6) + s.lane(7)));
        for (; i < length; i++) {
            result = Math.fma(a[aOffset + i], b[bOffset + i], result);
        }
        return result;
    }

    /** {@code y += a * x}, one fused multiply-add per element, so lane width cannot change the result. */
    static void axpy(float a, float[] x, int xOffset, float[] y, int yOffset, int length)
    {
        FloatVector aLanes = FloatVector.broadcast(LANES, a);
        int i = 0;
        for (int bound = LANES.loopBound(length); i < bound; i += WIDTH) {
            FloatVector.fromArray(LANES, x, xOffset + i).fma(aLanes, FloatVector.fromArray(LANES, y, yOffset + i)).intoArray(y, yOffset + i);
        }
        for (; i < length; i++) {
            y[yOffset + i] = Math.fma(x[xOffset + i], a, y[yOffset + i]);
        }
    }
}
