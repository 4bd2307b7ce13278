package io.handoff.plugin.triton;

import io.handoff.plugin.triton.SplitSoftmax.Partials;
import io.handoff.spi.attention.AttentionArithmetic;

import java.util.Arrays;

/**
 * {@link AttentionArithmetic#LLAMA_CPP_F16}: a split's partial as llama.cpp's CPU flash attention computes one query row
 * ({@code ggml_compute_forward_flash_attn_ext_f16_one_chunk} for fewer than 64 queries). The query, keys and values are
 * rounded to F16 (a no-op for keys and values already stored as F16); each key's score is its F16 products summed as
 * {@link #dot} does; keys are taken in position order with a running maximum {@code m}: a new maximum rescales the F16
 * accumulator by {@code exp(m_old - m)} and adds the value once, any other key adds {@code exp(s - m)} times its value, each
 * step rounded back to F16; {@code sum = sum * ms + vs}. The result is the accumulator times {@code 1 / sum}.
 * {@code exp} is {@link StrictMath#exp} rounded to F32, the same everywhere. Partials of several splits merge as
 * {@link SplitSoftmax#merge} does.
 */
final class LlamaCppSoftmax
{
    private LlamaCppSoftmax() {}

    /** {@link SplitSoftmax#partial}'s contract in this arithmetic; {@code roundKv}: the pool's keys and values are not F16 already. */
    static void partial(KeyTile tile, int count, float[] q, int qOffset, float scale, Partials out, int index, boolean roundKv)
    {
        int qkDim = tile.qkDim;
        int vDim = out.vDim;
        float[] query = tile.query16;
        float[] key = tile.key16;
        for (int i = 0; i < qkDim; i++) {
            query[i] = f16(q[qOffset + i]);
        }
        float[] acc = out.acc;
        int accOffset = index * vDim;
        Arrays.fill(acc, accOffset, accOffset + vDim, 0f);
        float max = Float.NEGATIVE_INFINITY;
        float sum = 0;
        for (int t = 0; t < count; t++) {
            int keyOffset = t * qkDim;
            float[] keys = tile.keys;
            if (roundKv) {
                for (int i = 0; i < qkDim; i++) {
                    key[i] = f16(keys[t * qkDim + i]);
                }
                keys = key;
                keyOffset = 0;
            }
            float s = dot(query, keys, keyOffset, qkDim, tile.lanes) * scale;
            float ms = 1;
            float vs = 1;
            if (s > max) {
                ms = max == Float.NEGATIVE_INFINITY ? 0f : (float) StrictMath.exp(max - s);
                max = s;
                for (int d = 0; d < vDim; d++) {
                    acc[accOffset + d] = f16(acc[accOffset + d] * ms);
                }
            }
            else {
                vs = (float) StrictMath.exp(s - max);
            }
            int valueOffset = t * tile.valueStride;
            for (int d = 0; d < vDim; d++) {
                float v = roundKv ? f16(tile.values[valueOffset + d]) : tile.values[valueOffset + d];
                acc[accOffset + d] = f16(Math.fma(v, vs, acc[accOffset + d]));
            }
            sum = sum * ms + vs;
        }
        out.max[index] = max;
        out.sum[index] = sum;
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
     * {@code (c0 + c2) + (c1 + c3)}; values past the last 64 are added one by one in double. {@code lanes}: 64 floats of scratch.
     */
    static float dot(float[] query, float[] keys, int keyOffset, int length, float[] lanes)
    {
        Arrays.fill(lanes, 0, 64, 0f);
        int whole = length & ~63;
        for (int i = 0; i < whole; i += 64) {
            for (int l = 0; l < 64; l++) {
                lanes[l] = Math.fma(query[i + l], keys[keyOffset + i + l], lanes[l]);
            }
        }
        for (int l = 0; l < 16; l++) {
            lanes[l] = (lanes[l] + lanes[32 + l]) + (lanes[16 + l] + lanes[48 + l]);
        }
        float b0 = lanes[8] + lanes[0];
        float b1 = lanes[9] + lanes[1];
        float b2 = lanes[10] + lanes[2];
        float b3 = lanes[11] + lanes[3];
        float b4 = lanes[12] + lanes[4];
        float b5 = lanes[13] + lanes[5];
        float b6 = lanes[14] + lanes[6];
        float b7 = lanes[15] + lanes[7];
        float c0 = b4 + b0;
        float c1 = b5 + b1;
        float c2 = b6 + b2;
        float c3 = b7 + b3;
        double sum = (c0 + c2) + (c1 + c3);
        for (int i = whole; i < length; i++) {
            sum += query[i] * keys[keyOffset + i];
        }
        return (float) sum;
    }

    static float f16(float x)
    {
        return Float.float16ToFloat(Float.floatToFloat16(x));
    }
}
