package io.handoff.plugin.triton;

import io.handoff.math.HalfLanes;
import io.handoff.spi.attention.KvCacheView;
import io.handoff.spi.attention.KvDtype;
import io.handoff.spi.attention.KvRows;
import jdk.incubator.vector.IntVector;
import jdk.incubator.vector.ShortVector;
import jdk.incubator.vector.VectorOperators;
import jdk.incubator.vector.VectorSpecies;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;

/**
 * One thread's copy of the K and V rows of one split (decode) or tile (extend) for one KV head, as
 * floats. Loading gives exactly the values {@link KvRows#load} gives: F32 is a plain copy and BF16 is
 * widened by a shift, vectorised eight elements at a time; for llama.cpp's arithmetic they are then rounded to F16.
 */
final class KeyTile
{
    private static final VectorSpecies<Short> BF16_LANES = ShortVector.SPECIES_128;
    private static final VectorSpecies<Integer> WIDE_LANES = IntVector.SPECIES_256;
    private static final ValueLayout.OfShort BF16 = ValueLayout.JAVA_SHORT_UNALIGNED;
    // F16 rows widened in 16-lane vectors where the machine has them
    private static final boolean F16_LANES = IntVector.SPECIES_PREFERRED.vectorBitSize() >= 512;
    private static final VectorSpecies<Short> HALF_LANES = ShortVector.SPECIES_256;
    private static final VectorSpecies<Integer> WIDE_INTS = IntVector.SPECIES_512;
    private static final ValueLayout.OfFloat F32 = ValueLayout.JAVA_FLOAT_UNALIGNED;

    final int qkDim;
    final int vDim;
    /** {@code [rows][qkDim]}. */
    final float[] keys;
    /**
     * For {@link LlamaCppSoftmax}'s scores, keys in lanes: {@code keysByDim[i * keyLanes + t]} is value {@code i} of row
     * {@code t} ({@code keyLanes} is the rows rounded up to a vector's lanes); {@code null} when not used.
     */
    final float[] keysByDim;
    final int keyLanes;
    /** Whether {@link #keysByDim} holds the keys of the last load. */
    boolean keysInLanes;
    /** Scratch of those scores: 16 vectors of lane sums. */
    final float[] laneSums = new float[16 * 16];
    /** {@code [rows][valueStride]}: the key array itself when V is the latent prefix of the key row (MLA). */
    final float[] values;
    final int valueStride;
    /** Scores of the current query head (or heads, each {@code rows} long) against the loaded rows. */
    final float[] scores;
    /** Scratch of {@link LlamaCppSoftmax}: the queries rounded to F16, each key's exp step and whether it raised the maximum. */
    final float[] query16;
    final float[] weights;
    final boolean[] rises;
    /** The weight of the current key for each head. */
    final float[] headWeights;

    private final KvCacheView kv;
    private final boolean valuesInKeyRow;
    /** Round loaded rows to F16 ({@link LlamaCppSoftmax}'s operands), unless the pool holds F16 already. */
    private final boolean round16;

    KeyTile(KvCacheView kv, int rows, int qkDim, int vDim)
    {
        this(kv, rows, qkDim, vDim, false);
    }

    KeyTile(KvCacheView kv, int rows, int qkDim, int vDim, boolean toF16)
    {
        this(kv, rows, qkDim, vDim, toF16, 1);
    }

    /** With scratch for {@code heads} query heads at once ({@link LlamaCppSoftmax#partials}). */
    KeyTile(KvCacheView kv, int rows, int qkDim, int vDim, boolean toF16, int heads)
    {
        this.kv = kv;
        this.round16 = toF16 && kv.dtype() != KvDtype.F16;
        this.qkDim = qkDim;
        this.vDim = vDim;
        this.valuesInKeyRow = kv.valuesInKeyRow();
        this.keys = new float[rows * qkDim];
        this.values = valuesInKeyRow ? keys : new float[rows * vDim];
        this.valueStride = valuesInKeyRow ? qkDim : vDim;
        this.keyLanes = LlamaCppSoftmax.keyLanes(rows);
        this.keysByDim = toF16 && LlamaCppSoftmax.scoresByLane(qkDim) ? new float[qkDim * keyLanes] : null;
        this.scores = new float[rows * heads];
        this.query16 = new float[qkDim * heads];
        this.weights = new float[rows * heads];
        this.rises = new boolean[rows * heads];
        this.headWeights = new float[heads];
    }

    /** Loads positions {@code from .. to-1} of the sequence whose slots start at {@code kvIndices[kvStart]}. */
    void load(int layer, int[] kvIndices, int kvStart, int from, int to, int kvHead)
    {
        load(layer, kvIndices, kvStart, from, to, kvHead, false);
    }

    /**
     * {@link #load}, and with {@code inLanes} the keys laid out by dimension too ({@link #keysByDim}, where the tile has
     * one): worth it for a tile many queries meet (extend), not for a decode split that one group's heads meet once.
     */
    void load(int layer, int[] kvIndices, int kvStart, int from, int to, int kvHead, boolean inLanes)
    {
        KvDtype dtype = kv.dtype();
        MemorySegment keyRegion = kv.keys(layer);
        long keyRowBytes = kv.keyRowBytes();
        long keyHeadBytes = (long) kvHead * qkDim * dtype.bytes();
        loadRows(keyRegion, keyRowBytes, keyHeadBytes, dtype, kvIndices, kvStart, from, to, keys, qkDim);
        if (round16) {
            LlamaCppSoftmax.roundToF16(keys, 0, (to - from) * qkDim);
        }
        keysInLanes = false;
        if (inLanes && keysByDim != null) {
            transposeKeys(to - from);
        }
        if (valuesInKeyRow) {
            return;
        }
        MemorySegment valueRegion = kv.values(layer);
        long valueRowBytes = kv.valueRowBytes();
        long valueHeadBytes = (long) kvHead * vDim * dtype.bytes();
        loadRows(valueRegion, valueRowBytes, valueHeadBytes, dtype, kvIndices, kvStart, from, to, values, vDim);
        if (round16) {
            LlamaCppSoftmax.roundToF16(values, 0, (to - from) * vDim);
        }
    }

    /** {@link #keysByDim} of the first {@code count} rows; the lanes past them are zero. */
    void transposeKeys(int count)
    {
        keysInLanes = true;
        int padded = LlamaCppSoftmax.keyLanes(count);
        for (int i = 0; i < qkDim; i++) {
            int to = i * keyLanes;
            for (int t = 0; t < count; t++) {
                keysByDim[to + t] = keys[t * qkDim + i];
            }
            java.util.Arrays.fill(keysByDim, to + count, to + padded, 0f);
        }
    }

    /**
     * Rows {@code from .. to-1} ({@code width} values at {@code headBytes} into each slot's row of {@code rowBytes}) into
     * {@code dst[(t - from) * width ..]}. F32 rows that fill their slot's row and sit in consecutive slots (a page's tokens)
     * are one copy: a copy a row costs more in calls than in bytes.
     */
    static void loadRows(MemorySegment region, long rowBytes, long headBytes, KvDtype dtype, int[] kvIndices, int kvStart, int from,
            int to, float[] dst, int width)
    {
        if (dtype == KvDtype.F16 && F16_LANES && width % HALF_LANES.length() == 0
                && halfRowsInLanes(region, rowBytes, headBytes, kvIndices, kvStart, from, to, dst, width)) {
            return;
        }
        boolean whole = dtype == KvDtype.F32 && rowBytes == (long) width * Float.BYTES;
        for (int t = from; t < to; ) {
            long slot = kvIndices[kvStart + t];
            int run = 1;
            while (whole && t + run < to && kvIndices[kvStart + t + run] == slot + run) {
                run++;
            }
            if (run > 1) {
                MemorySegment.copy(region, F32, slot * rowBytes, dst, (t - from) * width, run * width);
            }
            else {
                loadRow(region, slot * rowBytes + headBytes, dtype, dst, (t - from) * width, width);
            }
            t += run;
        }
    }

    /**
     * {@link #loadRows} of F16 rows ({@code width} a multiple of 16) widened sixteen at a time ({@link HalfLanes#widen});
     * the largest magnitude is tracked, and a tile that holds an infinity or a NaN answers false, for the caller to widen
     * it again one value at a time.
     */
    private static boolean halfRowsInLanes(MemorySegment region, long rowBytes, long headBytes, int[] kvIndices, int kvStart, int from, int to,
            float[] dst, int width)
    {
        IntVector largest = IntVector.zero(WIDE_INTS);
        for (int t = from; t < to; t++) {
            long at = kvIndices[kvStart + t] * rowBytes + headBytes;
            int into = (t - from) * width;
            for (int i = 0; i < width; i += HALF_LANES.length()) {
                IntVector h = (IntVector) ShortVector.fromMemorySegment(HALF_LANES, region, at + 2L * i, ByteOrder.nativeOrder())
                        .convertShape(VectorOperators.S2I, WIDE_INTS, 0);
                largest = largest.max(HalfLanes.magnitude(h));
                HalfLanes.widen(h).intoArray(dst, into + i);
            }
        }
        return largest.reduceLanes(VectorOperators.MAX) < HalfLanes.SPECIAL;
    }

    static void loadRow(MemorySegment region, long byteOffset, KvDtype dtype, float[] dst, int dstOffset, int count)
    {
        if (dtype == KvDtype.F32) {
            MemorySegment.copy(region, F32, byteOffset, dst, dstOffset, count);
            return;
        }
        if (dtype == KvDtype.F16) {
            KvRows.load(region, byteOffset, dtype, dst, dstOffset, count);
            return;
        }
        // BF16 is the upper half of an F32: widen each 16-bit pattern and shift it into place.
        int i = 0;
        for (int bound = BF16_LANES.loopBound(count); i < bound; i += BF16_LANES.length()) {
            ShortVector halves = ShortVector.fromMemorySegment(BF16_LANES, region, byteOffset + 2L * i, ByteOrder.nativeOrder());
            IntVector widened = (IntVector) halves.convertShape(VectorOperators.S2I, WIDE_LANES, 0);
            widened.lanewise(VectorOperators.LSHL, 16).reinterpretAsFloats().intoArray(dst, dstOffset + i);
        }
        for (; i < count; i++) {
            dst[dstOffset + i] = KvRows.bf16ToFloat(region.get(BF16, byteOffset + 2L * i));
        }
    }
}
