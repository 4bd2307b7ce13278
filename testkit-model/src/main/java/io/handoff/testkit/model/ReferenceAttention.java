package io.handoff.testkit.model;

import io.handoff.spi.attention.AttentionBackend;
import io.handoff.spi.attention.AttentionGeometry;
import io.handoff.spi.attention.DecodeMetadata;
import io.handoff.spi.attention.ExtendMetadata;
import io.handoff.spi.attention.KvCacheView;
import io.handoff.spi.attention.KvRows;

/**
 * Naive attention, the yardstick kernels are tested against: for each query and head, scores over all
 * visible keys in double precision, a plain softmax, and a weighted sum of values. Slow and obviously
 * right; not a backend to serve with.
 */
public final class ReferenceAttention
        implements AttentionBackend
{
    private final AttentionGeometry geometry;
    private final KvCacheView kv;

    public ReferenceAttention(AttentionGeometry geometry, KvCacheView kv)
    {
        if (kv.keyRowElements() != geometry.keyRowElements() || kv.valueRowElements() != geometry.valueRowElements()) {
            throw new IllegalArgumentException("KV rows " + kv.keyRowElements() + "/" + kv.valueRowElements()
                    + " do not match the geometry " + geometry);
        }
        this.geometry = geometry;
        this.kv = kv;
    }

    @Override
    public int numKvSplits(int seqLen)
    {
        return 1;
    }

    @Override
    public void decode(int layer, DecodeMetadata m, float[] q, float[] out)
    {
        for (int i = 0; i < m.batchSize(); i++) {
            attend(layer, m.kvIndices(), m.kvIndptr()[i], m.seqLens()[i], q, i, out);
        }
    }

    @Override
    public void extend(int layer, ExtendMetadata m, float[] q, float[] out)
    {
        for (int i = 0; i < m.batchSize(); i++) {
            for (int row = m.qoIndptr()[i]; row < m.qoIndptr()[i + 1]; row++) {
                int position = m.prefixLens()[i] + (row - m.qoIndptr()[i]);
                attend(layer, m.kvIndices(), m.kvIndptr()[i], position + 1, q, row, out);
            }
        }
    }

    private void attend(int layer, int[] kvIndices, int kvStart, int visible, float[] q, int row, float[] out)
    {
        int qk = geometry.qkDim();
        int vd = geometry.vDim();
        float[] key = new float[kv.keyRowElements()];
        float[] value = new float[kv.valueRowElements()];
        for (int h = 0; h < geometry.numQHeads(); h++) {
            int kvHead = h / geometry.groupSize();
            double[] scores = new double[visible];
            double max = Double.NEGATIVE_INFINITY;
            for (int t = 0; t < visible; t++) {
                KvRows.load(kv.keys(layer), kvIndices[kvStart + t] * kv.keyRowBytes(), kv.dtype(), key, 0, key.length);
                double dot = 0;
                for (int d = 0; d < qk; d++) {
                    dot += (double) q[(row * geometry.numQHeads() + h) * qk + d] * key[kvHead * qk + d];
                }
                scores[t] = dot * geometry.scale();
                max = Math.max(max, scores[t]);
            }
            double sum = 0;
            double[] acc = new double[vd];
            for (int t = 0; t < visible; t++) {
                double p = Math.exp(scores[t] - max);
                sum += p;
                KvRows.load(kv.values(layer), kvIndices[kvStart + t] * kv.valueRowBytes(), kv.dtype(), value, 0, value.length);
                int base = kv.valuesInKeyRow() ? 0 : kvHead * vd;
                for (int d = 0; d < vd; d++) {
                    acc[d] += p * value[base + d];
                }
            }
            for (int d = 0; d < vd; d++) {
                out[(row * geometry.numQHeads() + h) * vd + d] = (float) (acc[d] / sum);
            }
        }
    }
}
