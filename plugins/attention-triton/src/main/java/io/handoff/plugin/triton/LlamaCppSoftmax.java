package io.handoff.plugin.triton;

import io.handoff.math.ExactExp;
import io.handoff.plugin.triton.SplitSoftmax.Partials;
import io.handoff.spi.attention.AttentionArithmetic;
import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.IntVector;
import jdk.incubator.vector.VectorMask;
import jdk.incubator.vector.VectorOperators;
import jdk.incubator.vector.VectorShuffle;
import jdk.incubator.vector.VectorSpecies;

import java.util.Arrays;

/**
 * {@link AttentionArithmetic#LLAMA_CPP_F16}: a split's partial as llama.cpp's CPU flash attention computes one query row
 * ({@code ggml_compute_forward_flash_attn_ext_f16_one_chunk} for fewer than 64 queries). The query, keys and values are
 * rounded to F16 (the keys and values as their tile loads); each key's score is its F16 products summed as {@link #dot}
 * does; keys are taken in position order with a running maximum {@code m}: a new maximum rescales the F16 accumulator by
 * {@code exp(m_old - m)} and adds the value once, any other key adds {@code exp(s - m)} times its value, each step rounded
 * back to F16; {@code sum = sum * ms + vs}. The result is the accumulator times {@code 1 / sum}. {@code exp} is
 * {@link StrictMath#exp} rounded to F32, the same everywhere: the steps' arguments follow from the scores alone, so
 * {@link ExactExp} takes them a lane-width batch at a time. Partials of several splits merge as {@link SplitSoftmax#merge}
 * does. Lanes are 256 bits on every machine; every step is exact or rounded once, element by element, so the bits do not
 * depend on it.
 */
final class LlamaCppSoftmax
{
    private static final VectorSpecies<Float> F = FloatVector.SPECIES_256;
    private static final VectorSpecies<Integer> I = IntVector.SPECIES_256;
    private static final int L = F.length();
    // lane-wise steps (F16 rounding, the weighted sums) take the machine's widest vectors: any width gives the same bits
    private static final VectorSpecies<Float> W = FloatVector.SPECIES_PREFERRED.vectorBitSize() >= 512 ? FloatVector.SPECIES_512 : F;
    private static final VectorShuffle<Float> SWAP_8 = VectorShuffle.fromOp(W, l -> (l ^ 8) & (W.length() - 1));
    private static final VectorShuffle<Float> SWAP_4 = VectorShuffle.fromOp(W, l -> (l ^ 4) & (W.length() - 1));
    private static final VectorShuffle<Float> SWAP_2 = VectorShuffle.fromOp(W, l -> l ^ 2);
    private static final VectorShuffle<Float> SWAP_1 = VectorShuffle.fromOp(W, l -> l ^ 1);
    private static final VectorMask<Float> HIGH_HALF = VectorMask.fromLong(W, 0xFF00L);
    /** 2^16 as an exponent: a lane this large or larger is past F16's largest value, 65504, whatever its rounding. */
    private static final int F16_LARGEST_EXPONENT = 0x47800000;
    /** 2^-14, F16's smallest normal value: below it F16 counts in steps of 2^-24. */
    private static final int F16_MIN_NORMAL = 0x38800000;

    private LlamaCppSoftmax() {}

    /** {@link SplitSoftmax#partial}'s contract in this arithmetic; the tile's rows are F16 values already. */
    static void partial(KeyTile tile, int count, float[] q, int qOffset, float scale, Partials out, int index)
    {
        partials(tile, count, q, qOffset, 1, scale, out, index);
    }

    /**
     * {@link #partial} of {@code heads} query heads that share the tile's keys (a GQA group): head {@code g}'s query at
     * {@code q[qOffset + g * qkDim ..]}, its partial into {@code out[index + g]}. Each head's arithmetic is exactly
     * {@link #partial}'s; the keys go in the outer loop, so that the heads' accumulators, each a chain of F16 roundings
     * from key to key, interleave instead of waiting on one another.
     */
    static void partials(KeyTile tile, int count, float[] q, int qOffset, int heads, float scale, Partials out, int index)
    {
        int qkDim = tile.qkDim;
        int vDim = out.vDim;
        float[] query = tile.query16;
        System.arraycopy(q, qOffset, query, 0, heads * qkDim);
        roundToF16(query, 0, heads * qkDim);
        float[] acc = out.acc;
        Arrays.fill(acc, index * vDim, (index + heads) * vDim, 0f);
        float[] keys = tile.keys;
        float[] values = tile.values;
        // per head g: the scores, then where the running maximum rises, at [g * count + t]; the exps of the steps in one batch
        float[] scores = tile.scores;
        float[] steps = tile.weights;
        boolean[] rises = tile.rises;
        if (tile.keysInLanes) {
            for (int g = 0; g < heads; g++) {
                for (int t = 0; t < count; t += W.length()) {
                    scoresByLane(query, g * qkDim, tile.keysByDim, tile.keyLanes, t, qkDim / 64, scale, scores, g * count, count, tile.laneSums);
                }
            }
        }
        else {
            int t = 0;
            if (W.length() == 16 && qkDim % 64 == 0) {
                for (int g = 0; g < heads; g++) {
                    scoresInPairs(query, g * qkDim, keys, tile.keyBase, tile.keyStride, qkDim, count / 2, scale, scores, g * count);
                }
                t = count - count % 2;
            }
            for (; t < count; t++) {
                for (int g = 0; g < heads; g++) {
                    scores[g * count + t] = dot(query, g * qkDim, keys, tile.keyBase + t * tile.keyStride, qkDim) * scale;
                }
            }
        }
        for (int g = 0; g < heads; g++) {
            float max = Float.NEGATIVE_INFINITY;
            for (int t = g * count; t < (g + 1) * count; t++) {
                float s = scores[t];
                rises[t] = s > max;
                // a new maximum scales what came before by exp(m_old - m); any other key weighs exp(s - m)
                steps[t] = rises[t] ? (max == Float.NEGATIVE_INFINITY ? 0f : max - s) : s - max;
                max = Math.max(max, s);
            }
            out.max[index + g] = max;
            out.sum[index + g] = 0;
        }
        ExactExp.expMinus(steps, 0, 0f, steps, 0, heads * count);
        float[] weights = tile.headWeights;
        for (int t = 0; t < count; t++) {
            for (int g = 0; g < heads; g++) {
                int at = g * count + t;
                float ms = 1;
                float vs = 1;
                if (rises[at]) {
                    ms = t == 0 ? 0f : steps[at];
                    scaleF16(acc, (index + g) * vDim, vDim, ms);
                }
                else {
                    vs = steps[at];
                }
                weights[g] = vs;
                out.sum[index + g] = out.sum[index + g] * ms + vs;
            }
            addF16(values, tile.valueBase + t * tile.valueStride, weights, heads, acc, index * vDim, vDim);
        }
    }

    /** Whether {@link #scoresByLane} computes scores for a query of {@code qkDim} values: whole 64-value chunks of ggml's accumulators. */
    static boolean scoresByLane(int qkDim)
    {
        return qkDim % 64 == 0;
    }

    /** {@code rows} rounded up to whole vectors of keys. */
    static int keyLanes(int rows)
    {
        return (rows + W.length() - 1) / W.length() * W.length();
    }

    /**
     * The scores of the query at {@code query[q0 ..]} against keys {@code t0 .. t0 + lanes - 1} at once, one key a lane
     * ({@code byDim[i * stride + t]}, {@code chunks * 64} values each), times {@code scale}, into {@code out[o + t]} for
     * {@code t < count}. Each lane takes the very sums {@link #dot} takes for its key, in the same order: ggml's accumulator
     * {@code j} lane {@code l} is the chain over the chunks of the products of value {@code 64c + 16j + l} (the first an
     * exact product, as {@code fma} with zero is), then {@code (a0 + a2) + (a1 + a3)}, lanes {@code l + 8} and
     * {@code l + 4} onto {@code l} (b_l = s_l + s_{l+8}, c_l = b_l + b_{l+4}), then {@code (c0 + c2) + (c1 + c3)}.
     */
    private static void scoresByLane(float[] query, int q0, float[] byDim, int stride, int t0, int chunks, float scale, float[] out, int o,
            int count, float[] sums)
    {
        // the sixteen lane sums through memory: kept in registers, their chains outgrow what one compilation inlines
        int n = W.length();
        for (int l = 0; l < 16; l++) {
            lane(query, q0, byDim, stride, t0, chunks, l).intoArray(sums, l * n);
        }
        FloatVector c0 = FloatVector.fromArray(W, sums, 0).add(FloatVector.fromArray(W, sums, 8 * n))
                .add(FloatVector.fromArray(W, sums, 4 * n).add(FloatVector.fromArray(W, sums, 12 * n)));
        FloatVector c1 = FloatVector.fromArray(W, sums, n).add(FloatVector.fromArray(W, sums, 9 * n))
                .add(FloatVector.fromArray(W, sums, 5 * n).add(FloatVector.fromArray(W, sums, 13 * n)));
        FloatVector c2 = FloatVector.fromArray(W, sums, 2 * n).add(FloatVector.fromArray(W, sums, 10 * n))
                .add(FloatVector.fromArray(W, sums, 6 * n).add(FloatVector.fromArray(W, sums, 14 * n)));
        FloatVector c3 = FloatVector.fromArray(W, sums, 3 * n).add(FloatVector.fromArray(W, sums, 11 * n))
                .add(FloatVector.fromArray(W, sums, 7 * n).add(FloatVector.fromArray(W, sums, 15 * n)));
        FloatVector scores = c0.add(c2).add(c1.add(c3)).mul(scale);
        if (t0 + n <= count) {
            scores.intoArray(out, o + t0);
        }
        else {
            scores.intoArray(out, o + t0, W.indexInRange(t0, count));
        }
    }

    /** Lane {@code l} of ggml's four accumulators summed, {@code (a0 + a2) + (a1 + a3)}, for a vector of keys. */
    private static FloatVector lane(float[] query, int q0, float[] byDim, int stride, int t0, int chunks, int l)
    {
        FloatVector a0 = FloatVector.zero(W);
        FloatVector a1 = a0;
        FloatVector a2 = a0;
        FloatVector a3 = a0;
        for (int c = 0; c < chunks; c++) {
            int i = 64 * c + l;
            a0 = FloatVector.fromArray(W, byDim, i * stride + t0).fma(FloatVector.broadcast(W, query[q0 + i]), a0);
            a1 = FloatVector.fromArray(W, byDim, (i + 16) * stride + t0).fma(FloatVector.broadcast(W, query[q0 + i + 16]), a1);
            a2 = FloatVector.fromArray(W, byDim, (i + 32) * stride + t0).fma(FloatVector.broadcast(W, query[q0 + i + 32]), a2);
            a3 = FloatVector.fromArray(W, byDim, (i + 48) * stride + t0).fma(FloatVector.broadcast(W, query[q0 + i + 48]), a3);
        }
        return a0.add(a2).add(a1.add(a3));
    }

    /** The attention output of {@code partials[index]}: the accumulator times the reciprocal of the sum of weights. */
    static void finish(Partials partials, int index, float[] out, int outOffset)
    {
        int vDim = partials.vDim;
        float sum = partials.sum[index];
        float reciprocal = sum == 0 ? 0 : 1f / sum;
        for (int d = 0; d < vDim; d++) {
            out[outOffset + d] = partials.acc[index * vDim + d] * reciprocal;
        }
    }

    /**
     * {@code query . keys[keyOffset ..]} as ggml's AVX-512 {@code ggml_vec_dot_f16} sums F16 values: four 16-lane accumulators
     * take 64 values at a time (lane {@code l} of accumulator {@code j} the products of values {@code 64k + 16j + l}, each
     * exact in F32), then {@code (a0 + a2) + (a1 + a3)}, lanes {@code l + 8}, {@code l + 4} onto {@code l}, then
     * {@code (c0 + c2) + (c1 + c3)}; values past the last 64 are added one by one in double. Each 16-lane accumulator is
     * held as two 8-lane halves.
     */
    static float dot(float[] query, float[] keys, int keyOffset, int length)
    {
        return dot(query, 0, keys, keyOffset, length);
    }

    /** {@link #dot} of the query at {@code query[queryOffset ..]}. */
    static float dot(float[] query, int queryOffset, float[] keys, int keyOffset, int length)
    {
        if (W.length() == 16) {
            return dotWide(query, queryOffset, keys, keyOffset, length);
        }
        FloatVector a0 = FloatVector.zero(F);
        FloatVector b0 = a0;
        FloatVector a1 = a0;
        FloatVector b1 = a0;
        FloatVector a2 = a0;
        FloatVector b2 = a0;
        FloatVector a3 = a0;
        FloatVector b3 = a0;
        int whole = length & ~63;
        for (int i = 0; i < whole; i += 64) {
            int k = keyOffset + i;
            int j = queryOffset + i;
            a0 = FloatVector.fromArray(F, query, j).fma(FloatVector.fromArray(F, keys, k), a0);
            b0 = FloatVector.fromArray(F, query, j + 8).fma(FloatVector.fromArray(F, keys, k + 8), b0);
            a1 = FloatVector.fromArray(F, query, j + 16).fma(FloatVector.fromArray(F, keys, k + 16), a1);
            b1 = FloatVector.fromArray(F, query, j + 24).fma(FloatVector.fromArray(F, keys, k + 24), b1);
            a2 = FloatVector.fromArray(F, query, j + 32).fma(FloatVector.fromArray(F, keys, k + 32), a2);
            b2 = FloatVector.fromArray(F, query, j + 40).fma(FloatVector.fromArray(F, keys, k + 40), b2);
            a3 = FloatVector.fromArray(F, query, j + 48).fma(FloatVector.fromArray(F, keys, k + 48), a3);
            b3 = FloatVector.fromArray(F, query, j + 56).fma(FloatVector.fromArray(F, keys, k + 56), b3);
        }
        FloatVector low = a0.add(a2).add(a1.add(a3));
        FloatVector high = b0.add(b2).add(b1.add(b3));
        FloatVector b = high.add(low);
        float c0 = b.lane(4) + b.lane(0);
        float c1 = b.lane(5) + b.lane(1);
        float c2 = b.lane(6) + b.lane(2);
        float c3 = b.lane(7) + b.lane(3);
        double sum = (c0 + c2) + (c1 + c3);
        for (int i = whole; i < length; i++) {
            sum += query[queryOffset + i] * keys[keyOffset + i];
        }
        return (float) sum;
    }

    /**
     * {@link #dot} on 16-lane vectors, the same sums: the accumulators as ggml holds them, then lanes {@code l + 8} and
     * {@code l + 4} folded onto {@code l} by swapping lanes (each lane's sum is the same two operands either way round).
     */
    private static float dotWide(float[] query, int queryOffset, float[] keys, int keyOffset, int length)
    {
        FloatVector a0 = FloatVector.zero(W);
        FloatVector a1 = a0;
        FloatVector a2 = a0;
        FloatVector a3 = a0;
        int whole = length & ~63;
        for (int i = 0; i < whole; i += 64) {
            int k = keyOffset + i;
            int j = queryOffset + i;
            a0 = FloatVector.fromArray(W, query, j).fma(FloatVector.fromArray(W, keys, k), a0);
            a1 = FloatVector.fromArray(W, query, j + 16).fma(FloatVector.fromArray(W, keys, k + 16), a1);
            a2 = FloatVector.fromArray(W, query, j + 32).fma(FloatVector.fromArray(W, keys, k + 32), a2);
            a3 = FloatVector.fromArray(W, query, j + 48).fma(FloatVector.fromArray(W, keys, k + 48), a3);
        }
        FloatVector s = a0.add(a2).add(a1.add(a3));
        FloatVector b = s.add(s.rearrange(SWAP_8));
        FloatVector c = b.add(b.rearrange(SWAP_4));
        double sum = (c.lane(0) + c.lane(2)) + (c.lane(1) + c.lane(3));
        for (int i = whole; i < length; i++) {
            sum += query[queryOffset + i] * keys[keyOffset + i];
        }
        return (float) sum;
    }

    /**
     * {@link #dotWide}'s scores of one query against keys {@code 0 .. 2 * pairs - 1} (key {@code t} at
     * {@code keys[base + t * stride ..]}), times {@code scale}, into {@code out[o + t]}; for whole 64-value chunks. Keys go
     * two at a time: their accumulators run side by side, and after the first fold the second key's eight lanes move into
     * the first's high half, so the rest of both trees (lanes {@code l + 4}, then the last four as
     * {@code (c0 + c2) + (c1 + c3)}) is one series of lane swaps and adds, each adding the tree's two operands. The pairs
     * loop here, so that one pair's tree overlaps the next pair's products.
     */
    private static void scoresInPairs(float[] query, int q0, float[] keys, int base, int stride, int qkDim, int pairs, float scale, float[] out, int o)
    {
        for (int p = 0; p < pairs; p++) {
            int k = base + 2 * p * stride;
            int l = k + stride;
            FloatVector a0 = FloatVector.zero(W);
            FloatVector a1 = a0;
            FloatVector a2 = a0;
            FloatVector a3 = a0;
            FloatVector b0 = a0;
            FloatVector b1 = a0;
            FloatVector b2 = a0;
            FloatVector b3 = a0;
            for (int i = 0; i < qkDim; i += 64) {
                FloatVector x = FloatVector.fromArray(W, query, q0 + i);
                a0 = x.fma(FloatVector.fromArray(W, keys, k + i), a0);
                b0 = x.fma(FloatVector.fromArray(W, keys, l + i), b0);
                x = FloatVector.fromArray(W, query, q0 + i + 16);
                a1 = x.fma(FloatVector.fromArray(W, keys, k + i + 16), a1);
                b1 = x.fma(FloatVector.fromArray(W, keys, l + i + 16), b1);
                x = FloatVector.fromArray(W, query, q0 + i + 32);
                a2 = x.fma(FloatVector.fromArray(W, keys, k + i + 32), a2);
                b2 = x.fma(FloatVector.fromArray(W, keys, l + i + 32), b2);
                x = FloatVector.fromArray(W, query, q0 + i + 48);
                a3 = x.fma(FloatVector.fromArray(W, keys, k + i + 48), a3);
                b3 = x.fma(FloatVector.fromArray(W, keys, l + i + 48), b3);
            }
            FloatVector first = a0.add(a2).add(a1.add(a3));
            FloatVector second = b0.add(b2).add(b1.add(b3));
            FloatVector both = first.add(first.rearrange(SWAP_8)).blend(second.add(second.rearrange(SWAP_8)).rearrange(SWAP_8), HIGH_HALF);
            both = both.add(both.rearrange(SWAP_4));
            both = both.add(both.rearrange(SWAP_2));
            both = both.add(both.rearrange(SWAP_1));
            out[o + 2 * p] = both.lane(0) * scale;
            out[o + 2 * p + 1] = both.lane(8) * scale;
        }
    }

    /** {@code acc[i] = f16(acc[i] * scale)}. */
    private static void scaleF16(float[] acc, int offset, int length, float scale)
    {
        int i = 0;
        for (int bound = W.loopBound(length); i < bound; i += W.length()) {
            toF16(FloatVector.fromArray(W, acc, offset + i).mul(scale)).intoArray(acc, offset + i);
        }
        for (; i < length; i++) {
            acc[offset + i] = f16(acc[offset + i] * scale);
        }
    }

    /**
     * {@code acc[a + i] = f16(fma(values[i], weights[g], acc[a + i]))} for {@code heads} accumulators at once
     * ({@code a = offset + g * length}): each head's steps are its own, and side by side their chains of roundings overlap.
     */
    private static void addF16(float[] values, int valueOffset, float[] weights, int heads, float[] acc, int offset, int length)
    {
        int i = 0;
        for (int bound = W.loopBound(length); i < bound; i += W.length()) {
            FloatVector v = FloatVector.fromArray(W, values, valueOffset + i);
            for (int g = 0; g < heads; g++) {
                int at = offset + g * length + i;
                toF16(v.fma(FloatVector.broadcast(W, weights[g]), FloatVector.fromArray(W, acc, at))).intoArray(acc, at);
            }
        }
        for (; i < length; i++) {
            for (int g = 0; g < heads; g++) {
                int at = offset + g * length + i;
                acc[at] = f16(Math.fma(values[valueOffset + i], weights[g], acc[at]));
            }
        }
    }

    /** {@code x[from .. from + length)} rounded to F16 in place. */
    static void roundToF16(float[] x, int from, int length)
    {
        int i = 0;
        for (int bound = W.loopBound(length); i < bound; i += W.length()) {
            toF16(FloatVector.fromArray(W, x, from + i)).intoArray(x, from + i);
        }
        for (; i < length; i++) {
            x[from + i] = f16(x[from + i]);
        }
    }

    /**
     * Each lane rounded to the nearest F16 value, ties to even, as {@code Float.floatToFloat16} rounds: adding and taking
     * away {@code c = ±2^(e + 13)}, {@code e} the lane's exponent held between F16's smallest normal exponent (-14) and 16,
     * rounds the lane once onto F16's grid there (the sum's last place is {@code 2^(e - 10)}, {@code 2^-24} below the
     * normal range); the sign goes back on (so -0 stays -0); scaling by 2^112 and back leaves every F16 value as it is and
     * takes anything past 65504 (the next grid point is 65536 = 2^16) to infinity; NaN stays NaN.
     */
    static FloatVector toF16(FloatVector x)
    {
        IntVector bits = x.reinterpretAsInts();
        IntVector sign = bits.and(0x80000000);
        FloatVector c = bits.and(0x7F800000).max(F16_MIN_NORMAL).min(F16_LARGEST_EXPONENT).add(13 << 23).or(sign).reinterpretAsFloats();
        return x.add(c).sub(c).reinterpretAsInts().or(sign).reinterpretAsFloats().mul(0x1p112f).mul(0x1p-112f);
    }

    static float f16(float x)
    {
        return Float.float16ToFloat(Float.floatToFloat16(x));
    }
}
