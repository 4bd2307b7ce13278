package io.handoff.core.model;

import io.handoff.core.model.activation.QuantizedInput;
import jdk.incubator.vector.ByteVector;
import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.IntVector;
import jdk.incubator.vector.VectorOperators;
import jdk.incubator.vector.VectorShuffle;
import jdk.incubator.vector.VectorSpecies;

/**
 * Products of block-quantized weights ({@link BlockCodes}) with quantized inputs ({@link QuantizedInput}), as llama.cpp's
 * integer kernels compute them: within each block the codes multiply exactly (integers held in F32 lanes, every partial
 * sum below 2^24), then the block's sum is scaled by weight scale times input scale and added to the row's total.
 *
 * <p>The order is fixed by the row's length alone, so a product is the same bits in a decode step (one token) and in a
 * prefill tile (many), on any thread: value {@code i} of a block goes to lane {@code i % 8} of the block's exact sum
 * {@code p}; per block {@code acc = fma(p, broadcast(scale_w * scale_x), acc)}; then {@link Kernels#dot}'s lane tree;
 * then the offset term (Q4_1, Q5_1, Q4_K, Q5_K) in block order. Since the block sums are exact, a wider machine may add
 * lanes in any grouping and still get them.
 */
final class QuantizedKernels
{
    private static final VectorSpecies<Float> F = FloatVector.SPECIES_256;
    private static final VectorSpecies<Integer> I = IntVector.SPECIES_256;
    private static final int L = F.length();
    private static final int L1_TILE_BYTES = 16 * 1024;
    private static final VectorSpecies<Float> G = FloatVector.SPECIES_512;
    // 16-lane vectors in hardware: without them (AVX2) a 512-bit species runs in Java, far slower than two 8-lane products
    private static final boolean WIDE = FloatVector.SPECIES_PREFERRED.vectorBitSize() >= 512;
    private static final VectorShuffle<Float> SWAP_1 = VectorShuffle.fromOp(G, l -> l ^ 1);
    private static final VectorShuffle<Float> SWAP_2 = VectorShuffle.fromOp(G, l -> l ^ 2);
    private static final VectorShuffle<Float> SWAP_4 = VectorShuffle.fromOp(G, l -> l ^ 4);
    // lane-wise work over tokens (any width, the same bits): the machine's widest
    private static final VectorSpecies<Float> V = WIDE ? G : F;
    private static final ThreadLocal<float[]> OFFSETS = ThreadLocal.withInitial(() -> new float[0]);
    private static final ThreadLocal<float[]> LANES = ThreadLocal.withInitial(() -> new float[0]);
    private static final ThreadLocal<float[]> MINIMA = ThreadLocal.withInitial(() -> new float[0]);
    // a prefill's tokens' codes as floats twice over, a block or a row of a few tokens at a time ({@link #expand})
    private static final ThreadLocal<float[]> EXPANDED = ThreadLocal.withInitial(() -> new float[0]);
    private static final VectorSpecies<Byte> B = ByteVector.SPECIES_64;
    // per thread and per shape, so neither a decode step's row blocks nor a prefill's allocate codes
    private static final ThreadLocal<java.util.Map<Long, BlockCodes>> CODES = ThreadLocal.withInitial(java.util.HashMap::new);

    private QuantizedKernels() {}

    /** This thread's codes buffer for {@code format} rows of {@code cols} values, with room for {@code rows} rows. */
    static BlockCodes codes(BlockFormat format, int cols, int rows)
    {
        BlockCodes codes = CODES.get().computeIfAbsent(((long) format.ordinal() << 32) | cols, key -> new BlockCodes(format, cols));
        codes.ensure(rows);
        return codes;
    }

    /** Rows {@code [rowStart, rowEnd)} of {@code w} times token 0 of {@code x}, into {@code out[outOff + r]}. */
    static void rows(WeightMatrix w, int rowStart, int rowEnd, QuantizedInput x, float[] out, int outOff)
    {
        BlockCodes codes = codes(w.codeFormat(), w.cols(), 1);
        for (int r = rowStart; r < rowEnd; r++) {
            out[outOff + r] = w.dotCodes(r, x, codes);
        }
    }

    /** Rows {@code [rowStart, rowEnd)} of {@code w} times every token of {@code x}, token {@code t} into {@code out[outOff + t * outStride + r]}. */
    static void tile(WeightMatrix w, int rowStart, int rowEnd, QuantizedInput x, float[] out, int outOff, int outStride)
    {
        int rows = rowEnd - rowStart;
        BlockCodes codes = codes(w.codeFormat(), w.cols(), rows);
        for (int r = 0; r < rows; r++) {
            w.decodeCodes(rowStart + r, codes, r);
        }
        int tokens = x.tokens();
        float[] offsets = tokens > 1 ? offsets(codes, rows, x) : null;
        if (!WIDE) {
            // a machine without 16-lane vectors: two rows by two tokens keep their sums in registers, a tile of tokens in L1
            int tileTokens = Math.clamp((L1_TILE_BYTES / (4 * w.cols())) & ~1, 2, 64);
            for (int t0 = 0; t0 < tokens; t0 += tileTokens) {
                int tEnd = Math.min(tokens, t0 + tileTokens);
                int r = 0;
                for (; r + 1 < rows; r += 2) {
                    int o = outOff + rowStart + r;
                    int t = t0;
                    for (; t + 1 < tEnd; t += 2) {
                        dot2x2(codes, r, x, t, out, o + t * outStride, outStride, offsets, r * tokens + t, tokens);
                    }
                    if (t < tEnd) {
                        out[o + t * outStride] = dot(codes, r, x, t);
                        out[o + t * outStride + 1] = dot(codes, r + 1, x, t);
                    }
                }
                if (r < rows) {
                    for (int t = t0; t < tEnd; t++) {
                        out[outOff + rowStart + r + t * outStride] = dot(codes, r, x, t);
                    }
                }
            }
            return;
        }
        codes.pair(rows);
        int groups = rows / 8;
        // super-blocks of 256 values: six tokens a step (24 sums in registers, each row pair's codes serving six tokens per
        // load from L2); blocks of 32: four ({@link #rows4x4})
        int step = w.codeFormat().blockElements() >= 256 ? 6 : 4;
        float[] lanes = Kernels.atLeast(LANES, groups * 64 * step);
        for (int t0 = 0; t0 < tokens; ) {
            int left = tokens - t0;
            // eight or nine tokens left go as four and four (then one) rather than six and two or three: fewer for the row-by-row tail
            int n = left >= step && !(step == 6 && (left == 8 || left == 9)) ? step : Math.min(4, left);
            int r = 0;
            if (n >= 4 && groups > 0) {
                dot8xN(codes, groups, x, t0, n, lanes);
                laneTrees(lanes, groups * 64 * n);
                for (; r < groups * 8; r++) {
                    for (int j = 0; j < n; j++) {
                        out[outOff + rowStart + r + (t0 + j) * outStride] = lanes[(r / 8) * 64 * n + ((r % 8 / 2) * n + j) * 16 + 8 * (r % 2)]
                                + offset(offsets, r * tokens + t0 + j);
                    }
                }
            }
            for (; r < rows; r++) {
                for (int t = t0; t < t0 + n; t++) {
                    out[outOff + rowStart + r + t * outStride] = dot(codes, r, x, t);
                }
            }
            t0 += n;
        }
    }

    /** {@code offsets[i]}, or zero where the format has none. */
    private static float offset(float[] offsets, int i)
    {
        return offsets == null ? 0f : offsets[i];
    }

    /**
     * Each 16-lane vector of {@code lanes[0 .. n)}: lane 0 becomes {@link #dot}'s lane tree of lanes 0 to 7, lane 8 that of
     * lanes 8 to 15, by three lane swaps and adds (each step adds the same two operands as the tree, so the same bits).
     */
    private static void laneTrees(float[] lanes, int n)
    {
        for (int k = 0; k < n; k += 16) {
            FloatVector v = FloatVector.fromArray(G, lanes, k);
            v = v.add(v.rearrange(SWAP_1));
            v = v.add(v.rearrange(SWAP_2));
            v.add(v.rearrange(SWAP_4)).intoArray(lanes, k);
        }
    }

    /** Row {@code slot} of {@code w} times token {@code t} of {@code x}, in the class's order. */
    static float dot(BlockCodes w, int slot, QuantizedInput x, int t)
    {
        int cols = w.cols;
        int blocks = w.blocks;
        int block = w.format.blockElements();
        float[] wc = w.codes;
        float[] xc = x.codes();
        int w0 = slot * cols;
        int x0 = t * cols;
        FloatVector acc = FloatVector.zero(F);
        for (int b = 0; b < blocks; b++) {
            int start = b * block;
            FloatVector p = FloatVector.fromArray(F, wc, w0 + start).mul(FloatVector.fromArray(F, xc, x0 + start));
            for (int i = start + L; i < start + block; i += L) {
                p = FloatVector.fromArray(F, wc, w0 + i).fma(FloatVector.fromArray(F, xc, x0 + i), p);
            }
            acc = p.fma(FloatVector.broadcast(F, w.scales[slot * blocks + b] * x.scales()[t * blocks + b]), acc);
        }
        float sum = ((acc.lane(0) + acc.lane(1)) + (acc.lane(2) + acc.lane(3))) + ((acc.lane(4) + acc.lane(5)) + (acc.lane(6) + acc.lane(7)));
        return sum + offset(w, slot, x, t);
    }

    /**
     * Rows {@code 0 .. 8 * groups - 1} times tokens {@code t .. t + n - 1} ({@code n} 4, or 6 for super-blocks of 256), each
     * product's per-block lanes in {@link #dot}'s order: 16-lane vectors hold two rows' eight lanes side by side
     * ({@link BlockCodes#pair}) against a token's codes twice over ({@link #expand}), so every lane is one of {@link #dot}'s
     * and nothing is folded. Row {@code 8g + 2i + h} and token {@code t + j} are left in
     * {@code lanes[g * 64n + (i * n + j) * 16 + 8 * h ..]} (the lane tree and the offset still to add). Super-blocks go
     * block by block, so that the tokens' codes for one block stay in L1 while all the groups pass; blocks of 32 go row
     * pair by row pair ({@link #rows4x4}).
     */
    private static void dot8xN(BlockCodes w, int groups, QuantizedInput x, int t, int n, float[] lanes)
    {
        int blocks = w.blocks;
        int block = w.format.blockElements();
        int span = 2 * block;
        int stride = 2 * w.cols;
        float[] ws = w.pairedScales;
        float[] xs = x.scales();
        if (span < 512) {
            // 32-value blocks: a block's sums are too short to pay for scaling through memory; two row pairs keep theirs in registers over the row
            float[] xp = Kernels.atLeast(EXPANDED, n * stride);
            expand(x, t, n, 0, w.cols, xp, stride);
            for (int g = 0; g < groups; g++) {
                rows4x4(w.paired, 4 * g * stride, xp, 0, stride, span, blocks, ws, 4 * g * blocks * 16, blocks * 16, xs, t * blocks, lanes, g * 256);
                rows4x4(w.paired, (4 * g + 2) * stride, xp, 0, stride, span, blocks, ws, (4 * g + 2) * blocks * 16, blocks * 16, xs, t * blocks,
                        lanes, g * 256 + 128);
            }
            return;
        }
        float[] xp = Kernels.atLeast(EXPANDED, n * span);
        java.util.Arrays.fill(lanes, 0, groups * 64 * n, 0f);
        for (int b = 0; b < blocks; b++) {
            expand(x, t, n, b * block, block, xp, span);
            for (int g = 0; g < groups; g++) {
                if (n == 6) {
                    block8x6(w.paired, 4 * g * stride + b * span, xp, stride, span, span, ws, (4 * g * blocks + b) * 16, blocks * 16,
                            xs, t * blocks + b, blocks, lanes, g * 384);
                }
                else {
                    block8x4(w.paired, 4 * g * stride + b * span, xp, stride, span, span, ws, (4 * g * blocks + b) * 16, blocks * 16,
                            xs, t * blocks + b, blocks, lanes, g * 256);
                }
            }
        }
    }

    /**
     * Tokens {@code t .. t + n - 1}'s codes of values {@code from .. from + count - 1} ({@code count} a multiple of 8) from
     * {@code x}'s bytes into {@code into[j * xStride ..]} for token {@code t + j}, each eight twice, as a 16-lane load of two
     * weight rows side by side meets them: value {@code from + i} at {@code 16 * (i / 8) + 8 * h + i % 8} for {@code h} 0
     * and 1. The inputs cross memory as one byte a value and become floats (exact) only here, a block or a row of a few
     * tokens at a time that the rows then share from L1: a 512-token input twice over in floats is megabytes, which every
     * tile of rows would read again from beyond L2.
     */
    private static void expand(QuantizedInput x, int t, int n, int from, int count, float[] into, int xStride)
    {
        byte[] bytes = x.byToken().bytes();
        int cols = x.cols();
        for (int j = 0; j < n; j++) {
            int in = (t + j) * cols + from;
            int out = j * xStride;
            for (int i = 0; i < count; i += L) {
                FloatVector v = (FloatVector) ByteVector.fromArray(B, bytes, in + i).convertShape(VectorOperators.B2F, F, 0);
                v.intoArray(into, out + 2 * i);
                v.intoArray(into, out + 2 * i + L);
            }
        }
    }

    /**
     * {@link #dot8xN} for blocks of 32 values: row pairs at {@code wp[w0 + i * stride ..]} ({@code i < 2}) times tokens at
     * {@code xp[x0 + j * stride ..]} ({@code j < 4}), every block ({@code span} floats) summed in registers and scaled into
     * per-product accumulators that stay in registers too, left in {@code lanes[to + (i * 4 + j) * 16 ..]}.
     */
    private static void rows4x4(float[] wp, int w0, float[] xp, int x0, int stride, int span, int blocks, float[] ws, int sAt, int sStride,
            float[] xs, int xsAt, float[] lanes, int to)
    {
        int q1 = w0 + stride;
        int x1 = x0 + stride;
        int x2 = x1 + stride;
        int x3 = x2 + stride;
        FloatVector a00 = FloatVector.zero(G), a01 = FloatVector.zero(G), a02 = FloatVector.zero(G), a03 = FloatVector.zero(G);
        FloatVector a10 = FloatVector.zero(G), a11 = FloatVector.zero(G), a12 = FloatVector.zero(G), a13 = FloatVector.zero(G);
        for (int b = 0; b < blocks; b++) {
            int start = b * span;
            FloatVector p00 = FloatVector.zero(G), p01 = FloatVector.zero(G), p02 = FloatVector.zero(G), p03 = FloatVector.zero(G);
            FloatVector p10 = FloatVector.zero(G), p11 = FloatVector.zero(G), p12 = FloatVector.zero(G), p13 = FloatVector.zero(G);
            for (int c = start; c < start + span; c += G.length()) {
                FloatVector v0 = FloatVector.fromArray(G, wp, w0 + c);
                FloatVector v1 = FloatVector.fromArray(G, wp, q1 + c);
                FloatVector y;
                y = FloatVector.fromArray(G, xp, x0 + c);
                p00 = v0.fma(y, p00); p10 = v1.fma(y, p10);
                y = FloatVector.fromArray(G, xp, x1 + c);
                p01 = v0.fma(y, p01); p11 = v1.fma(y, p11);
                y = FloatVector.fromArray(G, xp, x2 + c);
                p02 = v0.fma(y, p02); p12 = v1.fma(y, p12);
                y = FloatVector.fromArray(G, xp, x3 + c);
                p03 = v0.fma(y, p03); p13 = v1.fma(y, p13);
            }
            FloatVector s0 = FloatVector.fromArray(G, ws, sAt + b * 16);
            FloatVector s1 = FloatVector.fromArray(G, ws, sAt + sStride + b * 16);
            float u0 = xs[xsAt + b];
            float u1 = xs[xsAt + 1 * blocks + b];
            float u2 = xs[xsAt + 2 * blocks + b];
            float u3 = xs[xsAt + 3 * blocks + b];
            a00 = p00.fma(s0.mul(u0), a00); a01 = p01.fma(s0.mul(u1), a01); a02 = p02.fma(s0.mul(u2), a02); a03 = p03.fma(s0.mul(u3), a03);
            a10 = p10.fma(s1.mul(u0), a10); a11 = p11.fma(s1.mul(u1), a11); a12 = p12.fma(s1.mul(u2), a12); a13 = p13.fma(s1.mul(u3), a13);
        }
        a00.intoArray(lanes, to + 0); a01.intoArray(lanes, to + 16); a02.intoArray(lanes, to + 32); a03.intoArray(lanes, to + 48);
        a10.intoArray(lanes, to + 64); a11.intoArray(lanes, to + 80); a12.intoArray(lanes, to + 96); a13.intoArray(lanes, to + 112);
    }

    /**
     * One block of {@link #dot8xN} for four tokens: row pairs at {@code wp[w0 + i * stride ..]} ({@code i < 4}) times tokens at
     * {@code xp[j * xStride ..]} ({@code j < 4}) over {@code span} floats, each pair's and token's exact sums (in
     * registers) then {@code lanes[at] = fma(sums, ws[s0 + i * sStride ..] * u_j, lanes[at])} at
     * {@code at = to + (i * 4 + j) * 16}, token {@code j}'s scale {@code u_j = xs[uAt + j * uStride]}, read after the sums
     * (as locals across the loop they cost registers the sums need). Kept to itself: a compilation that also holds the
     * loops around it runs out of C2's inlining budget and leaves vector operations as calls that box their vectors (a
     * quarter of the speed).
     */
    static void block8x4(float[] wp, int w0, float[] xp, int stride, int xStride, int span, float[] ws, int s0, int sStride,
            float[] xs, int uAt, int uStride, float[] lanes, int to)
    {
        int q0 = w0;
        int q1 = q0 + stride;
        int q2 = q1 + stride;
        int q3 = q2 + stride;
        int x1 = xStride;
        int x2 = x1 + xStride;
        int x3 = x2 + xStride;
        FloatVector p00 = FloatVector.zero(G), p01 = FloatVector.zero(G), p02 = FloatVector.zero(G), p03 = FloatVector.zero(G);
        FloatVector p10 = FloatVector.zero(G), p11 = FloatVector.zero(G), p12 = FloatVector.zero(G), p13 = FloatVector.zero(G);
        FloatVector p20 = FloatVector.zero(G), p21 = FloatVector.zero(G), p22 = FloatVector.zero(G), p23 = FloatVector.zero(G);
        FloatVector p30 = FloatVector.zero(G), p31 = FloatVector.zero(G), p32 = FloatVector.zero(G), p33 = FloatVector.zero(G);
        for (int c = 0; c < span; c += G.length()) {
            FloatVector v0 = FloatVector.fromArray(G, wp, q0 + c);
            FloatVector v1 = FloatVector.fromArray(G, wp, q1 + c);
            FloatVector v2 = FloatVector.fromArray(G, wp, q2 + c);
            FloatVector v3 = FloatVector.fromArray(G, wp, q3 + c);
            FloatVector y;
            y = FloatVector.fromArray(G, xp, c);
            p00 = v0.fma(y, p00); p10 = v1.fma(y, p10); p20 = v2.fma(y, p20); p30 = v3.fma(y, p30);
            y = FloatVector.fromArray(G, xp, x1 + c);
            p01 = v0.fma(y, p01); p11 = v1.fma(y, p11); p21 = v2.fma(y, p21); p31 = v3.fma(y, p31);
            y = FloatVector.fromArray(G, xp, x2 + c);
            p02 = v0.fma(y, p02); p12 = v1.fma(y, p12); p22 = v2.fma(y, p22); p32 = v3.fma(y, p32);
            y = FloatVector.fromArray(G, xp, x3 + c);
            p03 = v0.fma(y, p03); p13 = v1.fma(y, p13); p23 = v2.fma(y, p23); p33 = v3.fma(y, p33);
        }
        FloatVector s;
        s = FloatVector.fromArray(G, ws, s0 + 0 * sStride);
        p00.fma(s.mul(xs[uAt]), FloatVector.fromArray(G, lanes, to + 0)).intoArray(lanes, to + 0);
        p01.fma(s.mul(xs[uAt + uStride]), FloatVector.fromArray(G, lanes, to + 16)).intoArray(lanes, to + 16);
        p02.fma(s.mul(xs[uAt + 2 * uStride]), FloatVector.fromArray(G, lanes, to + 32)).intoArray(lanes, to + 32);
        p03.fma(s.mul(xs[uAt + 3 * uStride]), FloatVector.fromArray(G, lanes, to + 48)).intoArray(lanes, to + 48);
        s = FloatVector.fromArray(G, ws, s0 + 1 * sStride);
        p10.fma(s.mul(xs[uAt]), FloatVector.fromArray(G, lanes, to + 64)).intoArray(lanes, to + 64);
        p11.fma(s.mul(xs[uAt + uStride]), FloatVector.fromArray(G, lanes, to + 80)).intoArray(lanes, to + 80);
        p12.fma(s.mul(xs[uAt + 2 * uStride]), FloatVector.fromArray(G, lanes, to + 96)).intoArray(lanes, to + 96);
        p13.fma(s.mul(xs[uAt + 3 * uStride]), FloatVector.fromArray(G, lanes, to + 112)).intoArray(lanes, to + 112);
        s = FloatVector.fromArray(G, ws, s0 + 2 * sStride);
        p20.fma(s.mul(xs[uAt]), FloatVector.fromArray(G, lanes, to + 128)).intoArray(lanes, to + 128);
        p21.fma(s.mul(xs[uAt + uStride]), FloatVector.fromArray(G, lanes, to + 144)).intoArray(lanes, to + 144);
        p22.fma(s.mul(xs[uAt + 2 * uStride]), FloatVector.fromArray(G, lanes, to + 160)).intoArray(lanes, to + 160);
        p23.fma(s.mul(xs[uAt + 3 * uStride]), FloatVector.fromArray(G, lanes, to + 176)).intoArray(lanes, to + 176);
        s = FloatVector.fromArray(G, ws, s0 + 3 * sStride);
        p30.fma(s.mul(xs[uAt]), FloatVector.fromArray(G, lanes, to + 192)).intoArray(lanes, to + 192);
        p31.fma(s.mul(xs[uAt + uStride]), FloatVector.fromArray(G, lanes, to + 208)).intoArray(lanes, to + 208);
        p32.fma(s.mul(xs[uAt + 2 * uStride]), FloatVector.fromArray(G, lanes, to + 224)).intoArray(lanes, to + 224);
        p33.fma(s.mul(xs[uAt + 3 * uStride]), FloatVector.fromArray(G, lanes, to + 240)).intoArray(lanes, to + 240);
    }

    /**
     * {@link #block8x4} for six tokens: 24 sums in registers, so each row
     * pair's codes, read from L2 once per block, serve six tokens. Left at {@code lanes[to + (i * 6 + j) * 16]}.
     */
    static void block8x6(float[] wp, int w0, float[] xp, int stride, int xStride, int span, float[] ws, int s0, int sStride,
            float[] xs, int uAt, int uStride, float[] lanes, int to)
    {
        int q1 = w0 + stride;
        int q2 = q1 + stride;
        int q3 = q2 + stride;
        int x1 = xStride;
        int x2 = x1 + xStride;
        int x3 = x2 + xStride;
        int x4 = x3 + xStride;
        int x5 = x4 + xStride;
        FloatVector p00 = FloatVector.zero(G), p01 = FloatVector.zero(G), p02 = FloatVector.zero(G);
        FloatVector p03 = FloatVector.zero(G), p04 = FloatVector.zero(G), p05 = FloatVector.zero(G);
        FloatVector p10 = FloatVector.zero(G), p11 = FloatVector.zero(G), p12 = FloatVector.zero(G);
        FloatVector p13 = FloatVector.zero(G), p14 = FloatVector.zero(G), p15 = FloatVector.zero(G);
        FloatVector p20 = FloatVector.zero(G), p21 = FloatVector.zero(G), p22 = FloatVector.zero(G);
        FloatVector p23 = FloatVector.zero(G), p24 = FloatVector.zero(G), p25 = FloatVector.zero(G);
        FloatVector p30 = FloatVector.zero(G), p31 = FloatVector.zero(G), p32 = FloatVector.zero(G);
        FloatVector p33 = FloatVector.zero(G), p34 = FloatVector.zero(G), p35 = FloatVector.zero(G);
        for (int c = 0; c < span; c += G.length()) {
            FloatVector v0 = FloatVector.fromArray(G, wp, w0 + c);
            FloatVector v1 = FloatVector.fromArray(G, wp, q1 + c);
            FloatVector v2 = FloatVector.fromArray(G, wp, q2 + c);
            FloatVector v3 = FloatVector.fromArray(G, wp, q3 + c);
            FloatVector y;
            y = FloatVector.fromArray(G, xp, c);
            p00 = v0.fma(y, p00); p10 = v1.fma(y, p10); p20 = v2.fma(y, p20); p30 = v3.fma(y, p30);
            y = FloatVector.fromArray(G, xp, x1 + c);
            p01 = v0.fma(y, p01); p11 = v1.fma(y, p11); p21 = v2.fma(y, p21); p31 = v3.fma(y, p31);
            y = FloatVector.fromArray(G, xp, x2 + c);
            p02 = v0.fma(y, p02); p12 = v1.fma(y, p12); p22 = v2.fma(y, p22); p32 = v3.fma(y, p32);
            y = FloatVector.fromArray(G, xp, x3 + c);
            p03 = v0.fma(y, p03); p13 = v1.fma(y, p13); p23 = v2.fma(y, p23); p33 = v3.fma(y, p33);
            y = FloatVector.fromArray(G, xp, x4 + c);
            p04 = v0.fma(y, p04); p14 = v1.fma(y, p14); p24 = v2.fma(y, p24); p34 = v3.fma(y, p34);
            y = FloatVector.fromArray(G, xp, x5 + c);
            p05 = v0.fma(y, p05); p15 = v1.fma(y, p15); p25 = v2.fma(y, p25); p35 = v3.fma(y, p35);
        }
        FloatVector s;
        s = FloatVector.fromArray(G, ws, s0 + 0 * sStride);
        p00.fma(s.mul(xs[uAt]), FloatVector.fromArray(G, lanes, to + 0)).intoArray(lanes, to + 0);
        p01.fma(s.mul(xs[uAt + uStride]), FloatVector.fromArray(G, lanes, to + 16)).intoArray(lanes, to + 16);
        p02.fma(s.mul(xs[uAt + 2 * uStride]), FloatVector.fromArray(G, lanes, to + 32)).intoArray(lanes, to + 32);
        p03.fma(s.mul(xs[uAt + 3 * uStride]), FloatVector.fromArray(G, lanes, to + 48)).intoArray(lanes, to + 48);
        p04.fma(s.mul(xs[uAt + 4 * uStride]), FloatVector.fromArray(G, lanes, to + 64)).intoArray(lanes, to + 64);
        p05.fma(s.mul(xs[uAt + 5 * uStride]), FloatVector.fromArray(G, lanes, to + 80)).intoArray(lanes, to + 80);
        s = FloatVector.fromArray(G, ws, s0 + 1 * sStride);
        p10.fma(s.mul(xs[uAt]), FloatVector.fromArray(G, lanes, to + 96)).intoArray(lanes, to + 96);
        p11.fma(s.mul(xs[uAt + uStride]), FloatVector.fromArray(G, lanes, to + 112)).intoArray(lanes, to + 112);
        p12.fma(s.mul(xs[uAt + 2 * uStride]), FloatVector.fromArray(G, lanes, to + 128)).intoArray(lanes, to + 128);
        p13.fma(s.mul(xs[uAt + 3 * uStride]), FloatVector.fromArray(G, lanes, to + 144)).intoArray(lanes, to + 144);
        p14.fma(s.mul(xs[uAt + 4 * uStride]), FloatVector.fromArray(G, lanes, to + 160)).intoArray(lanes, to + 160);
        p15.fma(s.mul(xs[uAt + 5 * uStride]), FloatVector.fromArray(G, lanes, to + 176)).intoArray(lanes, to + 176);
        s = FloatVector.fromArray(G, ws, s0 + 2 * sStride);
        p20.fma(s.mul(xs[uAt]), FloatVector.fromArray(G, lanes, to + 192)).intoArray(lanes, to + 192);
        p21.fma(s.mul(xs[uAt + uStride]), FloatVector.fromArray(G, lanes, to + 208)).intoArray(lanes, to + 208);
        p22.fma(s.mul(xs[uAt + 2 * uStride]), FloatVector.fromArray(G, lanes, to + 224)).intoArray(lanes, to + 224);
        p23.fma(s.mul(xs[uAt + 3 * uStride]), FloatVector.fromArray(G, lanes, to + 240)).intoArray(lanes, to + 240);
        p24.fma(s.mul(xs[uAt + 4 * uStride]), FloatVector.fromArray(G, lanes, to + 256)).intoArray(lanes, to + 256);
        p25.fma(s.mul(xs[uAt + 5 * uStride]), FloatVector.fromArray(G, lanes, to + 272)).intoArray(lanes, to + 272);
        s = FloatVector.fromArray(G, ws, s0 + 3 * sStride);
        p30.fma(s.mul(xs[uAt]), FloatVector.fromArray(G, lanes, to + 288)).intoArray(lanes, to + 288);
        p31.fma(s.mul(xs[uAt + uStride]), FloatVector.fromArray(G, lanes, to + 304)).intoArray(lanes, to + 304);
        p32.fma(s.mul(xs[uAt + 2 * uStride]), FloatVector.fromArray(G, lanes, to + 320)).intoArray(lanes, to + 320);
        p33.fma(s.mul(xs[uAt + 3 * uStride]), FloatVector.fromArray(G, lanes, to + 336)).intoArray(lanes, to + 336);
        p34.fma(s.mul(xs[uAt + 4 * uStride]), FloatVector.fromArray(G, lanes, to + 352)).intoArray(lanes, to + 352);
        p35.fma(s.mul(xs[uAt + 5 * uStride]), FloatVector.fromArray(G, lanes, to + 368)).intoArray(lanes, to + 368);
    }

    /**
     * Rows {@code r} and {@code r + 1} times tokens {@code t} and {@code t + 1}, each product in {@link #dot}'s order:
     * {@code out[o]}, {@code out[o + 1]} for token {@code t}, {@code out[o + stride]}, {@code out[o + stride + 1]} for {@code t + 1}.
     */
    private static void dot2x2(BlockCodes w, int r, QuantizedInput x, int t, float[] out, int o, int stride, float[] offsets, int at, int nt)
    {
        int cols = w.cols;
        int blocks = w.blocks;
        int block = w.format.blockElements();
        float[] wc = w.codes;
        float[] xc = x.codes();
        float[] xs = x.scales();
        int w0 = r * cols;
        int w1 = w0 + cols;
        int x0 = t * cols;
        int x1 = x0 + cols;
        FloatVector a = FloatVector.zero(F);
        FloatVector b = FloatVector.zero(F);
        FloatVector c = FloatVector.zero(F);
        FloatVector d = FloatVector.zero(F);
        for (int k = 0; k < blocks; k++) {
            int start = k * block;
            FloatVector v0 = FloatVector.fromArray(F, wc, w0 + start);
            FloatVector v1 = FloatVector.fromArray(F, wc, w1 + start);
            FloatVector y0 = FloatVector.fromArray(F, xc, x0 + start);
            FloatVector y1 = FloatVector.fromArray(F, xc, x1 + start);
            FloatVector pa = v0.mul(y0);
            FloatVector pb = v1.mul(y0);
            FloatVector pc = v0.mul(y1);
            FloatVector pd = v1.mul(y1);
            FloatVector qa = FloatVector.zero(F);
            FloatVector qb = FloatVector.zero(F);
            FloatVector qc = FloatVector.zero(F);
            FloatVector qd = FloatVector.zero(F);
            int i = start + L;
            // two chains per product keep eight multiply-adds in flight; their sums are exact, so splitting them changes no bit
            for (; i + L < start + block; i += 2 * L) {
                v0 = FloatVector.fromArray(F, wc, w0 + i);
                v1 = FloatVector.fromArray(F, wc, w1 + i);
                y0 = FloatVector.fromArray(F, xc, x0 + i);
                y1 = FloatVector.fromArray(F, xc, x1 + i);
                qa = v0.fma(y0, qa);
                qb = v1.fma(y0, qb);
                qc = v0.fma(y1, qc);
                qd = v1.fma(y1, qd);
                v0 = FloatVector.fromArray(F, wc, w0 + i + L);
                v1 = FloatVector.fromArray(F, wc, w1 + i + L);
                y0 = FloatVector.fromArray(F, xc, x0 + i + L);
                y1 = FloatVector.fromArray(F, xc, x1 + i + L);
                pa = v0.fma(y0, pa);
                pb = v1.fma(y0, pb);
                pc = v0.fma(y1, pc);
                pd = v1.fma(y1, pd);
            }
            if (i < start + block) {
                v0 = FloatVector.fromArray(F, wc, w0 + i);
                v1 = FloatVector.fromArray(F, wc, w1 + i);
                y0 = FloatVector.fromArray(F, xc, x0 + i);
                y1 = FloatVector.fromArray(F, xc, x1 + i);
                qa = v0.fma(y0, qa);
                qb = v1.fma(y0, qb);
                qc = v0.fma(y1, qc);
                qd = v1.fma(y1, qd);
            }
            pa = pa.add(qa);
            pb = pb.add(qb);
            pc = pc.add(qc);
            pd = pd.add(qd);
            float s0 = w.scales[r * blocks + k];
            float s1 = w.scales[(r + 1) * blocks + k];
            float u0 = xs[t * blocks + k];
            float u1 = xs[(t + 1) * blocks + k];
            a = pa.fma(FloatVector.broadcast(F, s0 * u0), a);
            b = pb.fma(FloatVector.broadcast(F, s1 * u0), b);
            c = pc.fma(FloatVector.broadcast(F, s0 * u1), c);
            d = pd.fma(FloatVector.broadcast(F, s1 * u1), d);
        }
        out[o] = ((a.lane(0) + a.lane(1)) + (a.lane(2) + a.lane(3))) + ((a.lane(4) + a.lane(5)) + (a.lane(6) + a.lane(7))) + offset(offsets, at);
        out[o + 1] = ((b.lane(0) + b.lane(1)) + (b.lane(2) + b.lane(3))) + ((b.lane(4) + b.lane(5)) + (b.lane(6) + b.lane(7))) + offset(offsets, at + nt);
        out[o + stride] = ((c.lane(0) + c.lane(1)) + (c.lane(2) + c.lane(3))) + ((c.lane(4) + c.lane(5)) + (c.lane(6) + c.lane(7))) + offset(offsets, at + 1);
        out[o + stride + 1] = ((d.lane(0) + d.lane(1)) + (d.lane(2) + d.lane(3))) + ((d.lane(4) + d.lane(5)) + (d.lane(6) + d.lane(7)))
                + offset(offsets, at + nt + 1);
    }

    /**
     * {@link #offset} of every row of {@code w} times every token of {@code x}, row {@code r}'s for token {@code t} at
     * {@code [r * tokens + t]}: the same arithmetic, eight tokens a lane vector (each lane the scalar's steps); {@code null}
     * for a format without offsets (add zero, as {@link #dot} does).
     */
    private static float[] offsets(BlockCodes w, int rows, QuantizedInput x)
    {
        int nt = x.tokens();
        boolean mins = w.format == BlockFormat.Q4_K || w.format == BlockFormat.Q5_K;
        if (!mins && w.format != BlockFormat.Q4_1 && w.format != BlockFormat.Q5_1) {
            return null;
        }
        // every entry is written below: this thread's buffer, not a fresh (zeroed) one per tile
        float[] offsets = Kernels.atLeast(OFFSETS, rows * nt);
        int blocks = w.blocks;
        int subs = w.cols / 32;
        QuantizedInput.TokenMinor byToken = x.byToken();
        float[] scales = byToken.scales();
        float[] blockSums = byToken.blockSums();
        float[] sums = byToken.sums();
        int bound = V.loopBound(nt);
        if (mins) {
            // token vector by token vector, the input's sums for one super-block held in registers while every row passes
            float[] minima = Kernels.atLeast(MINIMA, rows * subs);
            for (int i = 0; i < rows * subs; i++) {
                minima[i] = w.mins[i];
            }
            java.util.Arrays.fill(offsets, 0, rows * nt, 0f);
            for (int b = 0; b < blocks; b++) {
                for (int t = 0; t < bound; t += V.length()) {
                    minsTerms(minima, subs, w.offsets, blocks, rows, scales, sums, b, nt, t, offsets);
                }
                for (int r = 0; r < rows; r++) {
                    minsTail(w.mins, r * subs + b * 8, w.offsets[r * blocks + b], scales, sums, b, nt, bound, offsets, r * nt);
                }
            }
            for (int i = 0; i < rows * nt; i++) {
                offsets[i] = -offsets[i];
            }
            return offsets;
        }
        // Q4_1 and Q5_1: each row's block weights times the input's F16 block sums
        float[] o = new float[nt];
        for (int r = 0; r < rows; r++) {
            java.util.Arrays.fill(o, 0);
            for (int b = 0; b < blocks; b++) {
                float weight = w.offsets[r * blocks + b];
                FloatVector wv = FloatVector.broadcast(V, weight);
                for (int t = 0; t < bound; t += V.length()) {
                    FloatVector.fromArray(V, o, t).add(wv.mul(FloatVector.fromArray(V, blockSums, b * nt + t))).intoArray(o, t);
                }
                for (int t = bound; t < nt; t++) {
                    o[t] += weight * blockSums[b * nt + t];
                }
            }
            System.arraycopy(o, 0, offsets, r * nt, nt);
        }
        return offsets;
    }

    /**
     * {@code o[oAt + t] += (weight * scales[b * nt + t]) * sum_j mins[m + j] * sums[(8b + j) * nt + t]} for the tokens from
     * {@code bound} to {@code nt}, one at a time, the integer sum in integers.
     */
    private static void minsTail(int[] mins, int m, float weight, float[] scales, float[] sums, int b, int nt, int bound, float[] o, int oAt)
    {
        for (int t = bound; t < nt; t++) {
            int sum = 0;
            for (int j = 0; j < 8; j++) {
                sum += mins[m + j] * (int) sums[(b * 8 + j) * nt + t];
            }
            o[oAt + t] += (weight * scales[b * nt + t]) * sum;
        }
    }

    /**
     * {@link #minsTail}'s term of every row for the tokens {@code t .. t + V.length() - 1}, a lane vector of tokens at a
     * time (the integer sum run in floats: every partial sum is below 2^24, so it is exact): row {@code r}'s mins at
     * {@code minima[r * subs + 8b ..]} (as floats), its weight at {@code weights[r * blocks + b]}, its terms at
     * {@code o[r * nt + t ..]}; the input's eight sums are loaded once for all the rows.
     */
    private static void minsTerms(float[] minima, int subs, float[] weights, int blocks, int rows, float[] scales, float[] sums, int b, int nt,
            int t, float[] o)
    {
        int s = 8 * b * nt + t;
        FloatVector x0 = FloatVector.fromArray(V, sums, s);
        FloatVector x1 = FloatVector.fromArray(V, sums, s + nt);
        FloatVector x2 = FloatVector.fromArray(V, sums, s + 2 * nt);
        FloatVector x3 = FloatVector.fromArray(V, sums, s + 3 * nt);
        FloatVector x4 = FloatVector.fromArray(V, sums, s + 4 * nt);
        FloatVector x5 = FloatVector.fromArray(V, sums, s + 5 * nt);
        FloatVector x6 = FloatVector.fromArray(V, sums, s + 6 * nt);
        FloatVector x7 = FloatVector.fromArray(V, sums, s + 7 * nt);
        FloatVector scale = FloatVector.fromArray(V, scales, b * nt + t);
        for (int r = 0; r < rows; r++) {
            int m = r * subs + 8 * b;
            FloatVector sum = x0.mul(minima[m]);
            sum = x1.fma(FloatVector.broadcast(V, minima[m + 1]), sum);
            sum = x2.fma(FloatVector.broadcast(V, minima[m + 2]), sum);
            sum = x3.fma(FloatVector.broadcast(V, minima[m + 3]), sum);
            sum = x4.fma(FloatVector.broadcast(V, minima[m + 4]), sum);
            sum = x5.fma(FloatVector.broadcast(V, minima[m + 5]), sum);
            sum = x6.fma(FloatVector.broadcast(V, minima[m + 6]), sum);
            sum = x7.fma(FloatVector.broadcast(V, minima[m + 7]), sum);
            FloatVector.fromArray(V, o, r * nt + t).add(scale.mul(weights[r * blocks + b]).mul(sum)).intoArray(o, r * nt + t);
        }
    }

    /**
     * The offset term of row {@code slot} times token {@code t}: for Q4_1 and Q5_1 the sum over blocks of {@code m} times the
     * input's F16 block sum (llama.cpp's Q8_1 {@code s}); for Q4_K and Q5_K minus the sum over super-blocks of
     * {@code (dmin * d_x) * sum_j m_j * sum_j(codes)}, the inner sum exact; zero for the rest.
     */
    private static float offset(BlockCodes w, int slot, QuantizedInput x, int t)
    {
        return switch (w.format) {
            case Q4_1, Q5_1 -> {
                float o = 0;
                int blocks = w.blocks;
                for (int b = 0; b < blocks; b++) {
                    o += w.offsets[slot * blocks + b] * x.blockSums()[t * blocks + b];
                }
                yield o;
            }
            case Q4_K, Q5_K -> {
                float o = 0;
                int blocks = w.blocks;
                int subs = w.cols / 32;
                for (int b = 0; b < blocks; b++) {
                    // the eight sub-blocks' mins times their input sums, in integers (exact in any order)
                    int m = IntVector.fromArray(I, w.mins, slot * subs + b * 8).mul(IntVector.fromArray(I, x.sums(), t * subs + b * 8))
                            .reduceLanes(VectorOperators.ADD);
                    o += (w.offsets[slot * blocks + b] * x.scales()[t * blocks + b]) * m;
                }
                yield -o;
            }
            default -> 0;
        };
    }
}
