package io.handoff.core.model;

import io.handoff.core.model.activation.QuantizedInput;
import jdk.incubator.vector.ByteVector;
import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.LongVector;
import jdk.incubator.vector.VectorOperators;
import jdk.incubator.vector.VectorShuffle;
import jdk.incubator.vector.VectorSpecies;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;

/**
 * Rows of a block-quantized matrix in the integer form a product over a {@link QuantizedInput} takes: each value as
 * {@code scale * code} plus an offset term, the code an integer (held as a float, exact), with whatever integer
 * sub-block scale the format has folded into it:
 * <ul>
 * <li>Q8_0, Q4_0, Q5_0: code {@code q} (less 8 or 16), scale {@code d}.
 * <li>Q4_1, Q5_1: code {@code q}, scale {@code d}, offset {@code m} per block (added as {@code m} times the input's block sum).
 * <li>Q4_K, Q5_K: code {@code sc_j * q}, scale {@code d}, offset {@code dmin} per super-block with a 6-bit min {@code m_j}
 *     per 32 values (subtracted as {@code dmin * d_x * sum_j m_j * sum_j(codes)}).
 * <li>Q6_K: code {@code sc_j * (q - 32)}, scale {@code d}.
 * </ul>
 * The decoding runs in byte vectors, then widens 8 codes at a time; it is exact, so any width gives the same codes.
 */
final class BlockCodes
{
    private static final VectorSpecies<Byte> B = ByteVector.SPECIES_64;
    private static final VectorSpecies<Byte> B16 = ByteVector.SPECIES_128;
    private static final VectorSpecies<Byte> B32 = ByteVector.SPECIES_256;
    private static final VectorSpecies<Float> F = FloatVector.SPECIES_256;
    private static final VectorSpecies<Float> G = FloatVector.SPECIES_512;
    // 16-lane vectors in hardware: a row product takes 16 codes a step and folds the lanes to eight once per block
    private static final boolean WIDE = FloatVector.SPECIES_PREFERRED.vectorBitSize() >= 512;
    // per-byte masks in 64-bit lanes, for byte shifts done as 64-bit ones
    private static final long LOW_1 = 0x0101010101010101L;
    private static final long LOW_2 = 0x0303030303030303L;
    private static final long LOW_4 = 0x0f0f0f0f0f0f0f0fL;
    private static final VectorShuffle<Float> SWAP_8 = VectorShuffle.fromOp(G, l -> l ^ 8);
    private static final ByteOrder LE = ByteOrder.LITTLE_ENDIAN;
    private static final ValueLayout.OfInt U32_LE = ValueLayout.JAVA_INT_UNALIGNED.withOrder(LE);
    private static final ValueLayout.OfLong U64_LE = ValueLayout.JAVA_LONG_UNALIGNED.withOrder(LE);

    final BlockFormat format;
    final int cols;
    final int blocks;
    float[] codes;
    float[] scales;
    float[] offsets;
    int[] mins;
    // rows 2q and 2q+1 side by side, eight codes (and a block's scale eight times) each in turn: see pair
    float[] paired;
    float[] pairedScales;
    private int capacity;
    // a super-block's codes as signed bytes: formed 32 at a time, then widened 8 at a time
    private final byte[] small = new byte[256];
    // a super-block's integer sub-block scales as floats
    private final float[] subScales = new float[16];

    BlockCodes(BlockFormat format, int cols)
    {
        this.format = format;
        this.cols = cols;
        this.blocks = cols / format.blockElements();
    }

    /** Room for {@code rows} rows. */
    void ensure(int rows)
    {
        if (rows > capacity) {
            codes = new float[rows * cols];
            scales = new float[rows * blocks];
            offsets = new float[rows * blocks];
            mins = new int[rows * (cols / 32)];
            capacity = rows;
        }
    }

    /**
     * Slots {@code 2q} and {@code 2q + 1} (for {@code 2q + 1 < rows}) side by side, for a 16-lane product with two rows at
     * once: {@code paired[q * 2 * cols + 16 * (i / 8) + 8 * h + i % 8] = codes[(2q + h) * cols + i]} and
     * {@code pairedScales[(q * blocks + b) * 16 + 8 * h + l] = scales[(2q + h) * blocks + b]}.
     */
    void pair(int rows)
    {
        // only prefill tiles on 16-lane machines take this layout: its arrays come with the first call
        if (paired == null || paired.length < rows * cols) {
            paired = new float[rows * cols];
            pairedScales = new float[rows * blocks * 8];
        }
        for (int q = 0; q + 1 < rows; q += 2) {
            for (int h = 0; h < 2; h++) {
                int from = (q + h) * cols;
                int to = q * cols + 8 * h;
                // plain copies: this runs once per tile, too seldom to leave the tiers where vector operations are slow calls
                for (int i = 0; i < cols; i += 8) {
                    System.arraycopy(codes, from + i, paired, to + 2 * i, 8);
                }
                for (int b = 0; b < blocks; b++) {
                    java.util.Arrays.fill(pairedScales, (q / 2 * blocks + b) * 16 + 8 * h, (q / 2 * blocks + b) * 16 + 8 * h + 8, scales[(q + h) * blocks + b]);
                }
            }
        }
    }

    /** Matrix row {@code row} of {@code data} into slot {@code slot}. */
    void decode(MemorySegment data, int row, int slot)
    {
        long base = (long) row * blocks * format.blockBytes();
        for (int b = 0; b < blocks; b++) {
            long at = base + (long) b * format.blockBytes();
            int block = slot * blocks + b;
            int c = slot * cols + b * format.blockElements();
            switch (format) {
                case Q8_0 -> q8_0(data, at, c, block);
                case Q4_0 -> q4_0(data, at, c, block);
                case Q4_1 -> q4_1(data, at, c, block);
                case Q5_0 -> q5(data, at, c, block, false);
                case Q5_1 -> q5(data, at, c, block, true);
                case Q4_K -> k4(data, at, c, block, slot * (cols / 32) + b * 8, false);
                case Q5_K -> k4(data, at, c, block, slot * (cols / 32) + b * 8, true);
                case Q6_K -> q6_k(data, at, c, block);
            }
        }
    }

    /**
     * Row {@code row} of a Q8_0, Q4_0, Q4_K, Q5_K or Q6_K matrix times token 0 of {@code x} straight from {@code data}, the same bits
     * as decoding the row and {@link QuantizedKernels#dot}: each 16 or 32 codes' exact sum is multiplied by the
     * sub-block's integer scale (exact) before it joins the block's lanes.
     */
    float dotRow(MemorySegment data, int row, QuantizedInput x)
    {
        // one method per form, each small enough that C2 inlines every vector operation in it
        return switch (format) {
            case Q8_0, Q4_0 -> WIDE ? dotRow32Wide(data, row, x) : dotRow32(data, row, x);
            case Q6_K -> WIDE ? dotRowQ6Wide(data, row, x) : dotRowQ6(data, row, x);
            case Q4_K, Q5_K -> WIDE ? dotRowK4Wide(data, row, x) : dotRowK4(data, row, x);
            default -> throw new IllegalArgumentException("no row product straight from " + format + " bytes; decode the row first");
        };
    }

    private float dotRow32(MemorySegment data, int row, QuantizedInput x)
    {
        long base = (long) row * blocks * format.blockBytes();
        float[] xc = x.codes();
        float[] xs = x.scales();
        FloatVector acc = FloatVector.zero(F);
        for (int b = 0; b < blocks; b++) {
            long at = base + (long) b * format.blockBytes();
            int c = b * 32;
            FloatVector p;
            if (format == BlockFormat.Q8_0) {
                p = ((FloatVector) ByteVector.fromMemorySegment(B, data, at + 2, LE).convertShape(VectorOperators.B2F, F, 0))
                        .mul(FloatVector.fromArray(F, xc, c));
                for (int l = 8; l < 32; l += 8) {
                    p = ((FloatVector) ByteVector.fromMemorySegment(B, data, at + 2 + l, LE).convertShape(VectorOperators.B2F, F, 0))
                            .fma(FloatVector.fromArray(F, xc, c + l), p);
                }
            }
            else {
                nibbles(data, at + 2, (byte) 8);
                p = ((FloatVector) ByteVector.fromArray(B, small, 0).convertShape(VectorOperators.B2F, F, 0)).mul(FloatVector.fromArray(F, xc, c));
                for (int l = 8; l < 32; l += 8) {
                    p = ((FloatVector) ByteVector.fromArray(B, small, l).convertShape(VectorOperators.B2F, F, 0))
                            .fma(FloatVector.fromArray(F, xc, c + l), p);
                }
            }
            acc = p.fma(FloatVector.broadcast(F, BlockFormat.f16(data, at) * xs[b]), acc);
        }
        return laneTree(acc) + 0f;
    }

    /**
     * {@link #dotRow32} in 16-lane vectors: a block's two halves in one product each, its lanes folded to the block's
     * eight (lane {@code l} of the fold holds the values {@code i % 8 == l}, as there); exact sums, so the same bits.
     */
    private float dotRow32Wide(MemorySegment data, int row, QuantizedInput x)
    {
        long base = (long) row * blocks * format.blockBytes();
        float[] xc = x.codes();
        float[] xs = x.scales();
        boolean bytes = format == BlockFormat.Q8_0;
        FloatVector acc = FloatVector.zero(F);
        for (int b = 0; b < blocks; b++) {
            long at = base + (long) b * format.blockBytes();
            int c = b * 32;
            FloatVector q0;
            FloatVector q1;
            if (bytes) {
                q0 = (FloatVector) ByteVector.fromMemorySegment(B16, data, at + 2, LE).convertShape(VectorOperators.B2F, G, 0);
                q1 = (FloatVector) ByteVector.fromMemorySegment(B16, data, at + 18, LE).convertShape(VectorOperators.B2F, G, 0);
            }
            else {
                nibbles(data, at + 2, (byte) 8);
                q0 = q16(0);
                q1 = q16(16);
            }
            FloatVector p = q1.fma(FloatVector.fromArray(G, xc, c + 16), q0.mul(FloatVector.fromArray(G, xc, c)));
            acc = fold(p).fma(FloatVector.broadcast(F, BlockFormat.f16(data, at) * xs[b]), acc);
        }
        return laneTreeStored(acc) + 0f;
    }

    private float dotRowQ6(MemorySegment data, int row, QuantizedInput x)
    {
        long base = (long) row * blocks * format.blockBytes();
        float[] xc = x.codes();
        float[] xs = x.scales();
        FloatVector acc = FloatVector.zero(F);
        for (int b = 0; b < blocks; b++) {
            long at = base + (long) b * format.blockBytes();
            int c = b * 256;
            FloatVector p = FloatVector.zero(F);
            for (int half = 0; half < 2; half++) {
                sixBits(data, at, half);
                // the half's eight signed scale bytes at once
                long scales = data.get(U64_LE, at + 192 + 8L * half);
                for (int part = 0; part < 4; part++) {
                    for (int is = 0; is < 2; is++) {
                        int from = 32 * part + 16 * is;
                        int xi = c + 128 * half + from;
                        FloatVector ps = ((FloatVector) ByteVector.fromArray(B, small, from).convertShape(VectorOperators.B2F, F, 0)).mul(FloatVector.fromArray(F, xc, xi));
                        ps = ((FloatVector) ByteVector.fromArray(B, small, from + 8).convertShape(VectorOperators.B2F, F, 0)).fma(FloatVector.fromArray(F, xc, xi + 8), ps);
                        p = ps.fma(FloatVector.broadcast(F, (byte) (scales >>> (8 * (is + 2 * part)))), p);
                    }
                }
            }
            acc = p.fma(FloatVector.broadcast(F, BlockFormat.f16(data, at + 208) * xs[b]), acc);
        }
        return laneTree(acc) + 0f;
    }

    private float dotRowK4(MemorySegment data, int row, QuantizedInput x)
    {
        long base = (long) row * blocks * format.blockBytes();
        float[] xc = x.codes();
        float[] xs = x.scales();
        int[] sums = x.sums();
        boolean fifthBit = format == BlockFormat.Q5_K;
        FloatVector acc = FloatVector.zero(F);
        float o = 0;
        for (int b = 0; b < blocks; b++) {
            long at = base + (long) b * format.blockBytes();
            int c = b * 256;
            FloatVector p = FloatVector.zero(F);
            // the twelve bytes of 6-bit scales and mins in two loads, unpacked eight at a time
            long low = data.get(U64_LE, at + 4);
            int high = data.get(U32_LE, at + 12);
            long scales = kScales(low, high);
            long mins = kMins(low, high);
            int m = 0;
            for (int group = 0; group < 4; group++) {
                int sub = 2 * group;
                fourBits(data, at, group, fifthBit);
                for (int h = 0; h < 2; h++) {
                    int j = sub + h;
                    int xi = c + 64 * group + 32 * h;
                    FloatVector ps = ((FloatVector) ByteVector.fromArray(B, small, 32 * h).convertShape(VectorOperators.B2F, F, 0)).mul(FloatVector.fromArray(F, xc, xi));
                    ps = ((FloatVector) ByteVector.fromArray(B, small, 32 * h + 8).convertShape(VectorOperators.B2F, F, 0)).fma(FloatVector.fromArray(F, xc, xi + 8), ps);
                    ps = ((FloatVector) ByteVector.fromArray(B, small, 32 * h + 16).convertShape(VectorOperators.B2F, F, 0)).fma(FloatVector.fromArray(F, xc, xi + 16), ps);
                    ps = ((FloatVector) ByteVector.fromArray(B, small, 32 * h + 24).convertShape(VectorOperators.B2F, F, 0)).fma(FloatVector.fromArray(F, xc, xi + 24), ps);
                    p = ps.fma(FloatVector.broadcast(F, (float) ((int) (scales >>> 8 * j) & 0xFF)), p);
                    m += ((int) (mins >>> 8 * j) & 0xFF) * sums[b * 8 + j];
                }
            }
            o += (BlockFormat.f16(data, at + 2) * xs[b]) * m;
            acc = p.fma(FloatVector.broadcast(F, BlockFormat.f16(data, at) * xs[b]), acc);
        }
        return laneTree(acc) + -o;
    }

    /**
     * {@link #dotRowQ6} in 16-lane vectors: a sub-block of 16 codes a step, two chains of exact sums, folded to the eight
     * lanes of the block's sum once per block (lane {@code l} and {@code l + 8} hold the values {@code i % 8 == l}); every
     * sum is an integer below 2^24, so the same bits.
     */
    private float dotRowQ6Wide(MemorySegment data, int row, QuantizedInput x)
    {
        long base = (long) row * blocks * format.blockBytes();
        float[] xc = x.codes();
        float[] xs = x.scales();
        float[] sc = subScales;
        FloatVector acc = FloatVector.zero(F);
        for (int b = 0; b < blocks; b++) {
            long at = base + (long) b * format.blockBytes();
            int c = b * 256;
            sixBitsBlock(data, at);
            FloatVector p0 = FloatVector.zero(G);
            FloatVector p1 = FloatVector.zero(G);
            FloatVector p2 = FloatVector.zero(G);
            FloatVector p3 = FloatVector.zero(G);
            for (int s = 0; s < 16; s += 4) {
                p0 = q16(16 * s).mul(FloatVector.fromArray(G, xc, c + 16 * s)).fma(FloatVector.broadcast(G, sc[s]), p0);
                p1 = q16(16 * s + 16).mul(FloatVector.fromArray(G, xc, c + 16 * s + 16)).fma(FloatVector.broadcast(G, sc[s + 1]), p1);
                p2 = q16(16 * s + 32).mul(FloatVector.fromArray(G, xc, c + 16 * s + 32)).fma(FloatVector.broadcast(G, sc[s + 2]), p2);
                p3 = q16(16 * s + 48).mul(FloatVector.fromArray(G, xc, c + 16 * s + 48)).fma(FloatVector.broadcast(G, sc[s + 3]), p3);
            }
            acc = fold(p0.add(p1).add(p2.add(p3))).fma(FloatVector.broadcast(F, BlockFormat.f16(data, at + 208) * xs[b]), acc);
        }
        return laneTreeStored(acc) + 0f;
    }

    /** {@link #dotRowK4} in 16-lane vectors, as {@link #dotRowQ6Wide}: the same bits. */
    private float dotRowK4Wide(MemorySegment data, int row, QuantizedInput x)
    {
        long base = (long) row * blocks * format.blockBytes();
        float[] xc = x.codes();
        float[] xs = x.scales();
        int[] sums = x.sums();
        boolean fifthBit = format == BlockFormat.Q5_K;
        FloatVector acc = FloatVector.zero(F);
        float o = 0;
        for (int b = 0; b < blocks; b++) {
            long at = base + (long) b * format.blockBytes();
            int c = b * 256;
            FloatVector p0 = FloatVector.zero(G);
            FloatVector p1 = FloatVector.zero(G);
            long low = data.get(U64_LE, at + 4);
            int high = data.get(U32_LE, at + 12);
            long scales = kScales(low, high);
            long mins = kMins(low, high);
            fourBitsBlock(data, at, fifthBit);
            int m = 0;
            for (int j = 0; j < 8; j++) {
                FloatVector s = FloatVector.broadcast(G, (float) ((int) (scales >>> 8 * j) & 0xFF));
                p0 = q16(32 * j).mul(FloatVector.fromArray(G, xc, c + 32 * j)).fma(s, p0);
                p1 = q16(32 * j + 16).mul(FloatVector.fromArray(G, xc, c + 32 * j + 16)).fma(s, p1);
                m += ((int) (mins >>> 8 * j) & 0xFF) * sums[b * 8 + j];
            }
            o += (BlockFormat.f16(data, at + 2) * xs[b]) * m;
            acc = fold(p0.add(p1)).fma(FloatVector.broadcast(F, BlockFormat.f16(data, at) * xs[b]), acc);
        }
        return laneTreeStored(acc) + -o;
    }

    /**
     * A K-quant super-block's eight 6-bit sub-block scales ({@link BlockFormat#scale}) as the bytes of a long, scale
     * {@code j} in byte {@code j}: {@code low} is the twelve scale bytes' first eight, {@code high} their last four.
     */
    static long kScales(long low, int high)
    {
        int first = (int) low & 0x3F3F3F3F;
        int last = high & 0x0F0F0F0F | ((int) low >>> 6 & 0x03030303) << 4;
        return first & 0xFFFFFFFFL | (long) last << 32;
    }

    /** The eight 6-bit mins ({@link BlockFormat#minimum}) the same way. */
    static long kMins(long low, int high)
    {
        int first = (int) (low >>> 32) & 0x3F3F3F3F;
        int last = high >>> 4 & 0x0F0F0F0F | ((int) (low >>> 32) >>> 6 & 0x03030303) << 4;
        return first & 0xFFFFFFFFL | (long) last << 32;
    }

    /**
     * A whole Q6_K super-block's codes less 32 into {@code small[0..256)} in value order, and its 16 sub-block scales as
     * floats into {@code subScales}. Its own compilation (too large to inline): the product loop that calls it keeps its
     * vectors in registers, and this one its byte lanes.
     */
    private void sixBitsBlock(MemorySegment data, long at)
    {
        for (int half = 0; half < 2; half++) {
            long ql = at + 64L * half;
            int to = 128 * half;
            LongVector a = ByteVector.fromMemorySegment(B32, data, ql, LE).reinterpretAsLongs();
            LongVector b = ByteVector.fromMemorySegment(B32, data, ql + 32, LE).reinterpretAsLongs();
            LongVector h = ByteVector.fromMemorySegment(B32, data, at + 128 + 32L * half, LE).reinterpretAsLongs();
            // shifts in 64-bit lanes (x86 has no byte shift); the masks drop what crosses from the next byte
            LongVector h0 = h.and(LOW_2).lanewise(VectorOperators.LSHL, 4);
            LongVector h1 = h.lanewise(VectorOperators.LSHR, 2).and(LOW_2).lanewise(VectorOperators.LSHL, 4);
            LongVector h2 = h.lanewise(VectorOperators.LSHR, 4).and(LOW_2).lanewise(VectorOperators.LSHL, 4);
            LongVector h3 = h.lanewise(VectorOperators.LSHR, 6).and(LOW_2).lanewise(VectorOperators.LSHL, 4);
            a.and(LOW_4).or(h0).reinterpretAsBytes().sub((byte) 32).intoArray(small, to);
            b.and(LOW_4).or(h1).reinterpretAsBytes().sub((byte) 32).intoArray(small, to + 32);
            a.lanewise(VectorOperators.LSHR, 4).and(LOW_4).or(h2).reinterpretAsBytes().sub((byte) 32).intoArray(small, to + 64);
            b.lanewise(VectorOperators.LSHR, 4).and(LOW_4).or(h3).reinterpretAsBytes().sub((byte) 32).intoArray(small, to + 96);
        }
        ((FloatVector) ByteVector.fromMemorySegment(B16, data, at + 192, LE).convertShape(VectorOperators.B2F, G, 0)).intoArray(subScales, 0);
    }

    /** A whole Q4_K or Q5_K super-block's codes without their scales into {@code small[0..256)} in value order, as {@link #sixBitsBlock}. */
    private void fourBitsBlock(MemorySegment data, long at, boolean fifthBit)
    {
        LongVector high = fifthBit ? ByteVector.fromMemorySegment(B32, data, at + 16, LE).reinterpretAsLongs() : null;
        for (int group = 0; group < 4; group++) {
            LongVector v = ByteVector.fromMemorySegment(B32, data, (fifthBit ? at + 48 : at + 16) + 32L * group, LE).reinterpretAsLongs();
            LongVector low = v.and(LOW_4);
            LongVector upper = v.lanewise(VectorOperators.LSHR, 4).and(LOW_4);
            if (fifthBit) {
                low = low.or(high.lanewise(VectorOperators.LSHR, 2 * group).and(LOW_1).lanewise(VectorOperators.LSHL, 4));
                upper = upper.or(high.lanewise(VectorOperators.LSHR, 2 * group + 1).and(LOW_1).lanewise(VectorOperators.LSHL, 4));
            }
            low.reinterpretAsBytes().intoArray(small, 64 * group);
            upper.reinterpretAsBytes().intoArray(small, 64 * group + 32);
        }
    }

    /** {@code small[from .. from + 16)} as floats. */
    private FloatVector q16(int from)
    {
        return (FloatVector) ByteVector.fromArray(B16, small, from).convertShape(VectorOperators.B2F, G, 0);
    }

    /** Lanes {@code l} and {@code l + 8} of a 16-lane sum added (exact: integers below 2^24), as an 8-lane vector. */
    private static FloatVector fold(FloatVector p)
    {
        return (FloatVector) p.add(p.rearrange(SWAP_8)).reinterpretShape(F, 0);
    }

    private static float laneTree(FloatVector acc)
    {
        return ((acc.lane(0) + acc.lane(1)) + (acc.lane(2) + acc.lane(3))) + ((acc.lane(4) + acc.lane(5)) + (acc.lane(6) + acc.lane(7)));
    }

    /** {@link #laneTree} through memory: one store instead of eight lane extractions, which cost a compilation its inlining budget. */
    private float laneTreeStored(FloatVector acc)
    {
        float[] l = subScales;
        acc.intoArray(l, 0);
        return ((l[0] + l[1]) + (l[2] + l[3])) + ((l[4] + l[5]) + (l[6] + l[7]));
    }


    /** Q4_K's or Q5_K's group {@code group} (64 values) as codes without their scales: low nibbles at {@code small[0..32)}, high at {@code [32..64)}. */
    private void fourBits(MemorySegment data, long at, int group, boolean fifthBit)
    {
        ByteVector v = ByteVector.fromMemorySegment(B32, data, (fifthBit ? at + 48 : at + 16) + 32L * group, LE);
        ByteVector low = v.and((byte) 15);
        ByteVector upper = v.lanewise(VectorOperators.LSHR, 4).and((byte) 15);
        if (fifthBit) {
            ByteVector high = ByteVector.fromMemorySegment(B32, data, at + 16, LE);
            low = low.or(high.lanewise(VectorOperators.LSHR, 2 * group).and((byte) 1).lanewise(VectorOperators.LSHL, 4));
            upper = upper.or(high.lanewise(VectorOperators.LSHR, 2 * group + 1).and((byte) 1).lanewise(VectorOperators.LSHL, 4));
        }
        low.intoArray(small, 0);
        upper.intoArray(small, 32);
    }

    /** Q6_K's half {@code half} (128 values) as codes less 32 without their scales, into {@code small[0..128)}. */
    private void sixBits(MemorySegment data, long at, int half)
    {
        long ql = at + 64L * half;
        ByteVector a = ByteVector.fromMemorySegment(B32, data, ql, LE);
        ByteVector b = ByteVector.fromMemorySegment(B32, data, ql + 32, LE);
        ByteVector h = ByteVector.fromMemorySegment(B32, data, at + 128 + 32L * half, LE);
        ByteVector three = ByteVector.broadcast(B32, (byte) 3);
        a.and((byte) 15).or(h.and(three).lanewise(VectorOperators.LSHL, 4)).sub((byte) 32).intoArray(small, 0);
        b.and((byte) 15).or(h.lanewise(VectorOperators.LSHR, 2).and(three).lanewise(VectorOperators.LSHL, 4)).sub((byte) 32).intoArray(small, 32);
        a.lanewise(VectorOperators.LSHR, 4).and((byte) 15).or(h.lanewise(VectorOperators.LSHR, 4).and(three).lanewise(VectorOperators.LSHL, 4))
                .sub((byte) 32).intoArray(small, 64);
        b.lanewise(VectorOperators.LSHR, 4).and((byte) 15).or(h.lanewise(VectorOperators.LSHR, 6).and(three).lanewise(VectorOperators.LSHL, 4))
                .sub((byte) 32).intoArray(small, 96);
    }

    private void q8_0(MemorySegment data, long at, int c, int block)
    {
        scales[block] = BlockFormat.f16(data, at);
        for (int l = 0; l < 32; l += 8) {
            ((FloatVector) ByteVector.fromMemorySegment(B, data, at + 2 + l, LE).convertShape(VectorOperators.B2F, F, 0)).intoArray(codes, c + l);
        }
    }

    private void q4_0(MemorySegment data, long at, int c, int block)
    {
        scales[block] = BlockFormat.f16(data, at);
        nibbles(data, at + 2, (byte) 8);
        widen(0, 4, 1, c);
    }

    private void q4_1(MemorySegment data, long at, int c, int block)
    {
        scales[block] = BlockFormat.f16(data, at);
        offsets[block] = BlockFormat.f16(data, at + 2);
        nibbles(data, at + 4, (byte) 0);
        widen(0, 4, 1, c);
    }

    /** Bytes {@code small[from .. from + 8n)} times {@code scale} into {@code codes[at ..]}. */
    private void widen(int from, int n, float scale, int at)
    {
        FloatVector s = FloatVector.broadcast(F, scale);
        for (int i = 0; i < n; i++) {
            ((FloatVector) ByteVector.fromArray(B, small, from + 8 * i).convertShape(VectorOperators.B2F, F, 0)).mul(s).intoArray(codes, at + 8 * i);
        }
    }

    /** A legacy block's 16 bytes of nibbles as 32 codes less {@code zero}: low nibbles first, into {@code small[0..32)}. */
    private void nibbles(MemorySegment data, long at, byte zero)
    {
        ByteVector v = ByteVector.fromMemorySegment(B16, data, at, LE);
        v.and((byte) 15).sub(zero).intoArray(small, 0);
        // the high nibbles by a 64-bit shift (x86 has no byte shift), the low bits of the next byte masked off
        v.reinterpretAsLongs().lanewise(VectorOperators.LSHR, 4).reinterpretAsBytes().and((byte) 15).sub(zero).intoArray(small, 16);
    }

    private void q5(MemorySegment data, long at, int c, int block, boolean withOffset)
    {
        scales[block] = BlockFormat.f16(data, at);
        long high = at + 2;
        if (withOffset) {
            offsets[block] = BlockFormat.f16(data, at + 2);
            high = at + 4;
        }
        int qh = data.get(U32_LE, high);
        long q = high + 4;
        int zero = withOffset ? 0 : 16;
        for (int j = 0; j < 16; j++) {
            int b = data.get(ValueLayout.JAVA_BYTE, q + j) & 0xff;
            codes[c + j] = ((b & 0x0f) | (((qh >>> j) << 4) & 0x10)) - zero;
            codes[c + j + 16] = ((b >> 4) | ((qh >>> (j + 12)) & 0x10)) - zero;
        }
    }

    private void k4(MemorySegment data, long at, int c, int block, int m, boolean fifthBit)
    {
        scales[block] = BlockFormat.f16(data, at);
        offsets[block] = BlockFormat.f16(data, at + 2);
        long low = data.get(U64_LE, at + 4);
        int high = data.get(U32_LE, at + 12);
        long packedScales = kScales(low, high);
        long packedMins = kMins(low, high);
        for (int group = 0; group < 4; group++) {
            int sub = 2 * group;
            fourBits(data, at, group, fifthBit);
            mins[m + sub] = (int) (packedMins >>> 8 * sub) & 0xFF;
            mins[m + sub + 1] = (int) (packedMins >>> 8 * sub + 8) & 0xFF;
            widen(0, 4, (int) (packedScales >>> 8 * sub) & 0xFF, c + 64 * group);
            widen(32, 4, (int) (packedScales >>> 8 * sub + 8) & 0xFF, c + 64 * group + 32);
        }
    }

    private void q6_k(MemorySegment data, long at, int c, int block)
    {
        scales[block] = BlockFormat.f16(data, at + 208);
        for (int half = 0; half < 2; half++) {
            sixBits(data, at, half);
            long sc = at + 192 + 8L * half;
            int base = c + 128 * half;
            for (int part = 0; part < 4; part++) {
                for (int is = 0; is < 2; is++) {
                    widen(32 * part + 16 * is, 2, data.get(ValueLayout.JAVA_BYTE, sc + is + 2 * part), base + 32 * part + 16 * is);
                }
            }
        }
    }
}
