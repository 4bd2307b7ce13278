package io.handoff.plugin.triton;

import io.handoff.math.ExactExp;
import jdk.incubator.vector.FloatVector;
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
        float[] scores = tile.scores;
        float max = Float.NEGATIVE_INFINITY;
        for (int t = 0; t < count; t++) {
            float score = dot(q, qOffset, tile.keys, t * tile.qkDim, tile.qkDim) * scale;
            scores[t] = score;
            max = Math.max(max, score);
        }
        int vDim = out.vDim;
        int accOffset = index * vDim;
        Arrays.fill(out.acc, accOffset, accOffset + vDim, 0f);
        // The weights exp(s - max) a lane-width batch at a time, with StrictMath.exp's bits; the sums keep key order.
        ExactExp.expMinus(scores, 0, max, scores, 0, count);
        float sum = 0;
        for (int t = 0; t < count; t++) {
            float p = scores[t];
            sum += p;
            axpy(p, tile.values, t * tile.valueStride, out.acc, accOffset, vDim);
        }
        out.max[index] = max;
        out.sum[index] = sum;
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
