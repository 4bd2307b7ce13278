package io.handoff.bench.attention;

import io.handoff.spi.attention.AttentionBackend;
import io.handoff.spi.attention.AttentionGeometry;
import io.handoff.spi.attention.DecodeMetadata;
import io.handoff.spi.attention.ExtendMetadata;

/**
 * The inputs of one sequence length: a decode step of every sequence and an extend chunk at the end of sequence 0.
 * The chunk's last query is sequence 0's decode query, so after both have run, the backend's contract says their
 * outputs for that token are the same bits ({@link #decodeMatchesExtend}).
 */
final class SeqLenCase
{
    final int seqLen;
    final int extendTokens;
    final long decodeBytes;
    final DecodeMetadata decode;
    final ExtendMetadata extend;
    final float[] decodeQ;
    final float[] decodeOut;
    final float[] extendQ;
    final float[] extendOut;
    private final int qRow;
    private final int outRow;
    int decodeIterations = 1;
    int extendIterations = 1;

    SeqLenCase(SeededKv kv, AttentionBackend backend, AttentionGeometry geometry, int batch, int seqLen, int extendTokens)
    {
        this.seqLen = seqLen;
        this.extendTokens = extendTokens;
        this.decodeBytes = kv.decodeBytes(seqLen);
        this.qRow = geometry.numQHeads() * geometry.qkDim();
        this.outRow = geometry.numQHeads() * geometry.vDim();
        this.decode = kv.decode(seqLen, backend);
        this.extend = kv.extend(seqLen, extendTokens);
        this.decodeQ = kv.queries(batch, 2L * seqLen);
        this.extendQ = kv.queries(extendTokens, 2L * seqLen + 1);
        System.arraycopy(decodeQ, 0, extendQ, (extendTokens - 1) * qRow, qRow);
        this.decodeOut = new float[batch * outRow];
        this.extendOut = new float[extendTokens * outRow];
    }

    /** Whether sequence 0's decode output equals the chunk's last row to the bit (both from the last layer run). */
    boolean decodeMatchesExtend()
    {
        int last = (extendTokens - 1) * outRow;
        for (int i = 0; i < outRow; i++) {
            if (Float.floatToRawIntBits(decodeOut[i]) != Float.floatToRawIntBits(extendOut[last + i])) {
                return false;
            }
        }
        return allFinite(decodeOut) && allFinite(extendOut);
    }

    private static boolean allFinite(float[] values)
    {
        for (float value : values) {
            if (!Float.isFinite(value)) {
                return false;
            }
        }
        return true;
    }
}
