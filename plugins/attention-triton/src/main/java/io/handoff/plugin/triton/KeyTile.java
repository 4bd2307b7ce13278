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
 * One thread's copy of the K and V rows of one split (decode) or tile (extend) for one KV head or a few consecutive
 * ones, as floats, row by row ({@code [rows][heads * qkDim]}); {@link #select} picks the head the arithmetic reads.
 * Loading gives exactly the values {@link KvRows#load} gives: F32 is a plain copy, F16 rows that fill their slot's row
 * are copied a page's run of slots at a time and widened by the JIT's vectorised {@link Float#float16ToFloat}, other
 * F16 rows widened sixteen at a time in lanes, and BF16 is widened by a shift, vectorised eight elements at a time;
 * for llama.cpp's arithmetic they are then rounded to F16.
 */
final class KeyTile
{
    private static final VectorSpecies<Short> BF16_LANES = ShortVector.SPECIES_128;
    private static final VectorSpecies<Integer> WIDE_LANES = IntVector.SPECIES_256;
    /** A BF16 or F16 value's 16 bits. */
    private static final ValueLayout.OfShort HALFWORD = ValueLayout.JAVA_SHORT_UNALIGNED;
    // F16 rows widened in 16-lane vectors where the machine has them
    private static final boolean F16_LANES = IntVector.SPECIES_PREFERRED.vectorBitSize() >= 512;
    private static final VectorSpecies<Short> HALF_LANES = ShortVector.SPECIES_256;
    private static final VectorSpecies<Integer> WIDE_INTS = IntVector.SPECIES_512;
    private static final ValueLayout.OfFloat F32 = ValueLayout.JAVA_FLOAT_UNALIGNED;
    // the F16 halves staged per copy: a page's run of whole rows at most, more in several copies
    private static final int STAGED_HALVES = 8192;
    /** One read this far apart requests the bytes of a tile's rows ({@link #request}). */
    private static final long REQUEST_STRIDE = 1024;
    /** Where {@link #request}'s reads go, so that the JIT keeps them. */
    @SuppressWarnings("unused")
    private static volatile long requested;

    final int qkDim;
    final int vDim;
    /** {@code [rows][keyStride]}: the loaded heads' keys, the selected head's from {@link #keyBase} in each row. */
    final float[] keys;
    int keyStride;
    int keyBase;
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
    /**
     * {@code [rows][valueStride]}, the selected head's values from {@link #valueBase} in each row: the key array itself
     * when V is the latent prefix of the key row (MLA).
     */
    final float[] values;
    int valueStride;
    int valueBase;
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
    /** The most KV heads one load takes ({@link #loadHeads}). */
    private final int kvHeads;
    private final short[] staged = new short[STAGED_HALVES];

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
        this(kv, rows, qkDim, vDim, toF16, heads, 1);
    }

    /** With room for the rows of {@code kvHeads} consecutive KV heads at once ({@link #loadHeads}). */
    KeyTile(KvCacheView kv, int rows, int qkDim, int vDim, boolean toF16, int heads, int kvHeads)
    {
        this.kv = kv;
        this.kvHeads = kvHeads;
        this.round16 = toF16 && kv.dtype() != KvDtype.F16;
        this.qkDim = qkDim;
        this.vDim = vDim;
        this.valuesInKeyRow = kv.valuesInKeyRow();
        if (valuesInKeyRow && kvHeads != 1) {
            throw new IllegalArgumentException("values inside the key row (MLA) have one KV head; asked for " + kvHeads);
        }
        this.keys = new float[rows * qkDim * kvHeads];
        this.values = valuesInKeyRow ? keys : new float[rows * vDim * kvHeads];
        this.keyStride = qkDim;
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
        loadHeads(layer, kvIndices, kvStart, from, to, kvHead, 1);
        if (inLanes && keysByDim != null) {
            transposeKeys(to - from);
        }
    }

    /**
     * Loads positions {@code from .. to-1} of KV heads {@code firstHead .. firstHead + heads - 1} (at most
     * the tile's {@code kvHeads}), each slot's heads in one pass over its row, and selects the first of them ({@link #select}):
     * a decode split reads whole rows once, instead of a head's slice of each row per pass.
     */
    void loadHeads(int layer, int[] kvIndices, int kvStart, int from, int to, int firstHead, int heads)
    {
        if (heads < 1 || heads > kvHeads) {
            throw new IllegalArgumentException(heads + " KV heads in one load; this tile takes 1 to " + kvHeads);
        }
        KvDtype dtype = kv.dtype();
        keysInLanes = false;
        keyStride = heads * qkDim;
        loadRows(kv.keys(layer), kv.keyRowBytes(), (long) firstHead * qkDim * dtype.bytes(), dtype, kvIndices, kvStart, from, to, keys,
                keyStride, staged);
        if (round16) {
            LlamaCppSoftmax.roundToF16(keys, 0, (to - from) * keyStride);
        }
        if (valuesInKeyRow) {
            valueStride = keyStride;
        }
        else {
            valueStride = heads * vDim;
            loadRows(kv.values(layer), kv.valueRowBytes(), (long) firstHead * vDim * dtype.bytes(), dtype, kvIndices, kvStart, from, to, values,
                    valueStride, staged);
            if (round16) {
                LlamaCppSoftmax.roundToF16(values, 0, (to - from) * valueStride);
            }
        }
        select(0);
    }

    /** Makes head {@code h} of the last {@link #loadHeads} the one the arithmetic reads ({@link #keyBase}, {@link #valueBase}). */
    void select(int h)
    {
        keyBase = h * qkDim;
        valueBase = valuesInKeyRow ? keyBase : h * vDim;
    }

    /** {@link #keysByDim} of the first {@code count} rows; the lanes past them are zero. */
    void transposeKeys(int count)
    {
        keysInLanes = true;
        int padded = LlamaCppSoftmax.keyLanes(count);
        for (int i = 0; i < qkDim; i++) {
            int to = i * keyLanes;
            for (int t = 0; t < count; t++) {
                keysByDim[to + t] = keys[keyBase + t * keyStride + i];
            }
            java.util.Arrays.fill(keysByDim, to + count, to + padded, 0f);
        }
    }

    /**
     * Rows {@code from .. to-1} ({@code width} values at {@code headBytes} into each slot's row of {@code rowBytes}) into
     * {@code dst[(t - from) * width ..]}. Rows that fill their slot's row and sit in consecutive slots (a page's tokens)
     * are one copy (F32) or one staged copy into {@code staged} widened in one loop (F16): a copy a row costs more in calls
     * than in bytes. The bytes are {@linkplain #request requested} first.
     */
    static void loadRows(MemorySegment region, long rowBytes, long headBytes, KvDtype dtype, int[] kvIndices, int kvStart, int from,
            int to, float[] dst, int width, short[] staged)
    {
        boolean whole = rowBytes == (long) width * dtype.bytes() && (dtype == KvDtype.F32 || dtype == KvDtype.F16);
        request(region, rowBytes, headBytes, (long) width * dtype.bytes(), kvIndices, kvStart, from, to);
        if (!whole && dtype == KvDtype.F16 && F16_LANES && width % HALF_LANES.length() == 0
                && halfRowsInLanes(region, rowBytes, headBytes, kvIndices, kvStart, from, to, dst, width)) {
            return;
        }
        for (int t = from; t < to; ) {
            long slot = kvIndices[kvStart + t];
            int run = 1;
            while (whole && t + run < to && kvIndices[kvStart + t + run] == slot + run) {
                run++;
            }
            if (!whole) {
                loadRow(region, slot * rowBytes + headBytes, dtype, dst, (t - from) * width, width);
            }
            else if (dtype == KvDtype.F32) {
                MemorySegment.copy(region, F32, slot * rowBytes, dst, (t - from) * width, run * width);
            }
            else {
                halfRunOfRows(region, slot * rowBytes, dst, (t - from) * width, run * width, staged);
            }
            t += run;
        }
    }

    /**
     * Reads one byte of every KiB of the rows' {@code bytes} at {@code headBytes} into each slot's row, before they are
     * copied: a split's slots lie on pages scattered over the pool, and these reads, independent of each other, ask the
     * memory for all of its pages at once, where the copy alone reads one page after another, each starting a full memory
     * latency later. Rows of consecutive slots run on from one another, so the reads keep their KiB spacing across them.
     */
    private static void request(MemorySegment region, long rowBytes, long headBytes, long bytes, int[] kvIndices, int kvStart, int from, int to)
    {
        long sum = 0;
        long end = -1;
        long next = 0;
        for (int t = from; t < to; t++) {
            long at = kvIndices[kvStart + t] * rowBytes + headBytes;
            // a whole row right after the last one goes on at the spacing; any other row starts at its first byte
            long o = at == end && bytes == rowBytes ? next : at;
            for (; o < at + bytes; o += REQUEST_STRIDE) {
                sum += region.get(ValueLayout.JAVA_BYTE, o);
            }
            next = o;
            end = at + rowBytes;
        }
        requested = sum;
    }

    /**
     * {@code count} F16 values from {@code region[at ..]} into {@code dst[into ..]}, copied into {@code staged} (in parts of
     * its size) and widened there by a loop the JIT vectorises ({@link Float#float16ToFloat}, every value exact).
     */
    private static void halfRunOfRows(MemorySegment region, long at, float[] dst, int into, int count, short[] staged)
    {
        for (int done = 0; done < count; ) {
            int n = Math.min(staged.length, count - done);
            MemorySegment.copy(region, HALFWORD, at + 2L * done, staged, 0, n);
            widenHalves(staged, n, dst, into + done);
            done += n;
        }
    }

    private static void widenHalves(short[] halves, int n, float[] dst, int into)
    {
        for (int i = 0; i < n; i++) {
            dst[into + i] = Float.float16ToFloat(halves[i]);
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
            dst[dstOffset + i] = KvRows.bf16ToFloat(region.get(HALFWORD, byteOffset + 2L * i));
        }
    }
}
