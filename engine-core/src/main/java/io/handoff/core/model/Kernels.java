package io.handoff.core.model;

import io.handoff.core.model.activation.QuantizedInput;
import io.handoff.core.model.activation.ActivationBuffers;
import io.handoff.core.model.activation.ActivationFormat;
import io.handoff.math.ExactExp;
import jdk.incubator.vector.DoubleVector;
import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.VectorOperators;
import jdk.incubator.vector.VectorSpecies;

import java.util.concurrent.ForkJoinPool;
import java.util.function.IntConsumer;
import java.util.stream.IntStream;

/**
 * The model's numeric kernels. Every reduction (a dot product) has an order fixed by its length
 * alone: a fixed 256-bit lane layout (not the preferred species, which differs between machines), four
 * accumulators combined in a fixed order, a fixed lane tree, then a scalar tail. Work is split over
 * output rows, never inside one dot product, so results are bit-identical whatever the batch, the
 * chunking or the number of threads. Transcendentals use {@link StrictMath} so two machines agree.
 */
public final class Kernels
{
    private static final VectorSpecies<Float> F = FloatVector.SPECIES_256;
    private static final int L = F.length();
    private static final int ROW_BLOCK = 16;
    // a prefill's row blocks: each tile of tokens, loaded into L1 once, meets this many rows before the next tile
    private static final int PREFILL_ROW_BLOCK = 64;
    // per calling thread and activation format: a product's quantized input is written into the same arrays each time
    private static final ThreadLocal<ActivationBuffers[]> ACTIVATION_BUFFERS = ThreadLocal.withInitial(() -> {
        ActivationBuffers[] buffers = new ActivationBuffers[ActivationFormat.values().length];
        java.util.Arrays.setAll(buffers, i -> new ActivationBuffers());
        return buffers;
    });
    private static final int TOKEN_TILE = 64;
    // values per task of the parallel SwiGLU: a decode step's few thousand stay on the calling thread
    private static final int SWIGLU_CHUNK = 16 * 1024;
    // a token tile's share of L1 (32 KiB on Zen 4 and most Intel cores): the row pair streaming past needs the rest
    private static final int L1_TILE_BYTES = 16 * 1024;
    // per thread, so a decode step's thousands of row blocks do not each allocate (and zero) a row of scratch
    private static final ThreadLocal<float[]> SCRATCH = ThreadLocal.withInitial(() -> new float[0]);
    // below this many multiply-adds a matmul runs on the calling thread: forking costs more than it saves
    private static final long PARALLEL_MIN_WORK = 1 << 18;

    private Kernels() {}

    static float dot(float[] a, int aOff, float[] b, int bOff, int n)
    {
        FloatVector acc0 = FloatVector.zero(F);
        FloatVector acc1 = FloatVector.zero(F);
        FloatVector acc2 = FloatVector.zero(F);
        FloatVector acc3 = FloatVector.zero(F);
        int i = 0;
        for (int upper = n - n % (4 * L); i < upper; i += 4 * L) {
            acc0 = FloatVector.fromArray(F, a, aOff + i).fma(FloatVector.fromArray(F, b, bOff + i), acc0);
            acc1 = FloatVector.fromArray(F, a, aOff + i + L).fma(FloatVector.fromArray(F, b, bOff + i + L), acc1);
            acc2 = FloatVector.fromArray(F, a, aOff + i + 2 * L).fma(FloatVector.fromArray(F, b, bOff + i + 2 * L), acc2);
            acc3 = FloatVector.fromArray(F, a, aOff + i + 3 * L).fma(FloatVector.fromArray(F, b, bOff + i + 3 * L), acc3);
        }
        for (int upper = n - n % L; i < upper; i += L) {
            acc0 = FloatVector.fromArray(F, a, aOff + i).fma(FloatVector.fromArray(F, b, bOff + i), acc0);
        }
        // the accumulators combine in a fixed order: reduceLanes(ADD) leaves it unspecified (it may differ between interpreter and JIT).
        // Every product spells this out rather than calling a helper: vectors passed to a method C2 does not inline are boxed.
        FloatVector acc = acc0.add(acc1).add(acc2.add(acc3));
        float sum = ((acc.lane(0) + acc.lane(1)) + (acc.lane(2) + acc.lane(3))) + ((acc.lane(4) + acc.lane(5)) + (acc.lane(6) + acc.lane(7)));
        for (; i < n; i++) {
            sum = Math.fma(a[aOff + i], b[bOff + i], sum);
        }
        return sum;
    }

    /**
     * {@code out[outOff + t*outStride + r] = w.row(r) · x[xOff + t*xStride ..]} for {@code t < tokens}, {@code r < w.rows()}.
     * One token (decode) reads each row once, converting in the product's lanes. More tokens (prefill) convert
     * two rows at a time to F32 and multiply them with a tile of tokens two by two ({@link #dot2x2}), so each
     * load serves two products; every product still has {@link #dot}'s order.
     */
    public static void matmul(ForkJoinPool pool, float[] out, int outOff, int outStride, WeightMatrix w, float[] x, int xOff, int xStride,
            int tokens)
    {
        matmuls(pool, x, xOff, xStride, tokens, new Product(out, outOff, outStride, w));
    }

    /**
     * One matrix of {@link #matmuls}: {@code out[outOff + t*outStride + r - rowFrom] = w.row(r) · x_t} for the rows
     * {@code rowFrom <= r < rowTo} (a tensor-parallel rank's share; every row by default).
     */
    record Product(float[] out, int outOff, int outStride, WeightMatrix w, int rowFrom, int rowTo)
    {
        Product
        {
            if (rowFrom < 0 || rowTo > w.rows() || rowFrom > rowTo) {
                throw new IllegalArgumentException("rows " + rowFrom + ".." + rowTo + " of a matrix of " + w.rows());
            }
        }

        Product(float[] out, int outOff, int outStride, WeightMatrix w)
        {
            this(out, outOff, outStride, w, 0, w.rows());
        }

        int rows()
        {
            return rowTo - rowFrom;
        }
    }

    /** {@link #matmul} of rows {@code rowFrom .. rowTo} only: {@code out[outOff + t*outStride + r - rowFrom]}. */
    static void matmulRows(ForkJoinPool pool, float[] out, int outOff, int outStride, WeightMatrix w, int rowFrom, int rowTo, float[] x,
            int xOff, int xStride, int tokens)
    {
        matmuls(pool, x, xOff, xStride, tokens, new Product(out, outOff, outStride, w, rowFrom, rowTo));
    }

    /**
     * Several matrices times the same tokens ({@code x[xOff + t*xStride ..]}, {@code t < tokens}) in one parallel loop over
     * all their row blocks: q, k and v, or gate and up, cost one fork and join instead of three or two, which is much of a
     * decode step's time on small matrices.
     */
    static void matmuls(ForkJoinPool pool, float[] x, int xOff, int xStride, int tokens, Product... products)
    {
        int[] firstBlock = new int[products.length + 1];
        int rowBlock = tokens == 1 ? ROW_BLOCK : PREFILL_ROW_BLOCK;
        long work = 0;
        for (int p = 0; p < products.length; p++) {
            WeightMatrix w = products[p].w();
            firstBlock[p + 1] = firstBlock[p] + (products[p].rows() + rowBlock - 1) / rowBlock;
            work += (long) products[p].rows() * w.cols() * tokens;
        }
        Object[] inputs = inputs(pool, x, xOff, xStride, tokens, products);
        IntConsumer block = b -> {
            int p = 0;
            while (b >= firstBlock[p + 1]) {
                p++;
            }
            Product product = products[p];
            int rowStart = product.rowFrom() + (b - firstBlock[p]) * rowBlock;
            int rowEnd = Math.min(product.rowTo(), rowStart + rowBlock);
            // the kernels write row r at outOff + r: shift the base so that the share's first row lands at outOff
            int outOff = product.outOff() - product.rowFrom();
            if (inputs[p] instanceof QuantizedInput quantized) {
                if (tokens == 1) {
                    QuantizedKernels.rows(product.w(), rowStart, rowEnd, quantized, product.out(), outOff);
                }
                else {
                    QuantizedKernels.tile(product.w(), rowStart, rowEnd, quantized, product.out(), outOff, product.outStride());
                }
            }
            else if (tokens == 1) {
                rows(product.w(), product.out(), outOff, rowStart, rowEnd, x, xOff);
            }
            else {
                tile(product.out(), outOff, product.outStride(), product.w(), rowStart, rowEnd, x, xOff, xStride, tokens);
            }
        };
        int blocks = firstBlock[products.length];
        if (work < PARALLEL_MIN_WORK) {
            for (int b = 0; b < blocks; b++) {
                block.accept(b);
            }
            return;
        }
        parallelFor(pool, blocks, block);
    }

    /**
     * Each product's input: {@code null} for the caller's tokens as they are, or their {@link QuantizedInput} in the
     * format the matrix takes, quantized once per format (q, k and v share one).
     */
    private static Object[] inputs(ForkJoinPool pool, float[] x, int xOff, int xStride, int tokens, Product[] products)
    {
        Object[] inputs = new Object[products.length];
        QuantizedInput[] quantized = new QuantizedInput[ActivationFormat.values().length];
        for (int p = 0; p < products.length; p++) {
            WeightMatrix w = products[p].w();
            ActivationFormat format = w.activations();
            if (format == ActivationFormat.F32) {
                continue;
            }
            if (quantized[format.ordinal()] == null) {
                // this thread's buffers for the format: the input lives until this call's products return
                ActivationBuffers buffers = ACTIVATION_BUFFERS.get()[format.ordinal()];
                quantized[format.ordinal()] = format.quantize(x, xOff, xStride, tokens, w.cols(), buffers, (n, body) -> parallelFor(pool, n, body));
            }
            inputs[p] = quantized[format.ordinal()];
        }
        return inputs;
    }

    /** One token: each row once, converted in the product's lanes. */
    private static void rows(WeightMatrix w, float[] out, int outOff, int rowStart, int rowEnd, float[] x, int xOff)
    {
        float[] scratch = scratch(w.cols());
        for (int r = rowStart; r < rowEnd; r++) {
            out[outOff + r] = w.dot(r, x, xOff, scratch);
        }
    }

    /**
     * Prefill: the block's rows converted to F32 once, then the tokens a few at a time, so that a tile of tokens stays in
     * L1 while every row pair of the block streams past it from L2. A tile that spills out of L1 halves the kernel: two
     * tokens' loads per four multiply-adds are more than L2 delivers.
     */
    private static void tile(float[] out, int outOff, int outStride, WeightMatrix w, int rowStart, int rowEnd, float[] x, int xOff,
            int xStride, int tokens)
    {
        int cols = w.cols();
        int rows = rowEnd - rowStart;
        float[] block = scratch(rows * cols);
        for (int r = 0; r < rows; r++) {
            w.readRow(rowStart + r, block, r * cols);
        }
        int tileTokens = Math.clamp((L1_TILE_BYTES / (4 * cols)) & ~1, 2, TOKEN_TILE);
        for (int t0 = 0; t0 < tokens; t0 += tileTokens) {
            int tEnd = Math.min(tokens, t0 + tileTokens);
            int r = 0;
            for (; r + 1 < rows; r += 2) {
                int o = outOff + rowStart + r;
                int t = t0;
                for (; t + 1 < tEnd; t += 2) {
                    dot2x2(block, r * cols, x, xOff + t * xStride, xOff + (t + 1) * xStride, cols, out, o + t * outStride, outStride);
                }
                if (t < tEnd) {
                    out[o + t * outStride] = dot(block, r * cols, x, xOff + t * xStride, cols);
                    out[o + t * outStride + 1] = dot(block, (r + 1) * cols, x, xOff + t * xStride, cols);
                }
            }
            if (r < rows) {
                for (int t = t0; t < tEnd; t++) {
                    out[outOff + rowStart + r + t * outStride] = dot(block, r * cols, x, xOff + t * xStride, cols);
                }
            }
        }
    }

    /**
     * Four products at once, each in {@link #dot}'s order: rows {@code w[w0..w0+n)} and {@code w[w0+n..w0+2n)} times the tokens at
     * {@code x0} and {@code x1}, into {@code out[o]}, {@code out[o+1]} (token x0) and {@code out[o+stride]}, {@code out[o+stride+1]}.
     * Sixteen accumulators and four loads in flight fit the 32 vector registers of AVX-512 machines.
     */
    static void dot2x2(float[] w, int w0, float[] x, int x0, int x1, int n, float[] out, int o, int stride)
    {
        int w1 = w0 + n;
        FloatVector a0 = FloatVector.zero(F);
        FloatVector a1 = FloatVector.zero(F);
        FloatVector a2 = FloatVector.zero(F);
        FloatVector a3 = FloatVector.zero(F);
        FloatVector b0 = FloatVector.zero(F);
        FloatVector b1 = FloatVector.zero(F);
        FloatVector b2 = FloatVector.zero(F);
        FloatVector b3 = FloatVector.zero(F);
        FloatVector c0 = FloatVector.zero(F);
        FloatVector c1 = FloatVector.zero(F);
        FloatVector c2 = FloatVector.zero(F);
        FloatVector c3 = FloatVector.zero(F);
        FloatVector d0 = FloatVector.zero(F);
        FloatVector d1 = FloatVector.zero(F);
        FloatVector d2 = FloatVector.zero(F);
        FloatVector d3 = FloatVector.zero(F);
        int i = 0;
        for (int upper = n - n % (4 * L); i < upper; i += 4 * L) {
            FloatVector v0 = FloatVector.fromArray(F, w, w0 + i);
            FloatVector v1 = FloatVector.fromArray(F, w, w1 + i);
            FloatVector y0 = FloatVector.fromArray(F, x, x0 + i);
            FloatVector y1 = FloatVector.fromArray(F, x, x1 + i);
            a0 = v0.fma(y0, a0);
            b0 = v1.fma(y0, b0);
            c0 = v0.fma(y1, c0);
            d0 = v1.fma(y1, d0);
            v0 = FloatVector.fromArray(F, w, w0 + i + L);
            v1 = FloatVector.fromArray(F, w, w1 + i + L);
            y0 = FloatVector.fromArray(F, x, x0 + i + L);
            y1 = FloatVector.fromArray(F, x, x1 + i + L);
            a1 = v0.fma(y0, a1);
            b1 = v1.fma(y0, b1);
            c1 = v0.fma(y1, c1);
            d1 = v1.fma(y1, d1);
            v0 = FloatVector.fromArray(F, w, w0 + i + 2 * L);
            v1 = FloatVector.fromArray(F, w, w1 + i + 2 * L);
            y0 = FloatVector.fromArray(F, x, x0 + i + 2 * L);
            y1 = FloatVector.fromArray(F, x, x1 + i + 2 * L);
            a2 = v0.fma(y0, a2);
            b2 = v1.fma(y0, b2);
            c2 = v0.fma(y1, c2);
            d2 = v1.fma(y1, d2);
            v0 = FloatVector.fromArray(F, w, w0 + i + 3 * L);
            v1 = FloatVector.fromArray(F, w, w1 + i + 3 * L);
            y0 = FloatVector.fromArray(F, x, x0 + i + 3 * L);
            y1 = FloatVector.fromArray(F, x, x1 + i + 3 * L);
            a3 = v0.fma(y0, a3);
            b3 = v1.fma(y0, b3);
            c3 = v0.fma(y1, c3);
            d3 = v1.fma(y1, d3);
        }
        for (int upper = n - n % L; i < upper; i += L) {
            FloatVector v0 = FloatVector.fromArray(F, w, w0 + i);
            FloatVector v1 = FloatVector.fromArray(F, w, w1 + i);
            FloatVector y0 = FloatVector.fromArray(F, x, x0 + i);
            FloatVector y1 = FloatVector.fromArray(F, x, x1 + i);
            a0 = v0.fma(y0, a0);
            b0 = v1.fma(y0, b0);
            c0 = v0.fma(y1, c0);
            d0 = v1.fma(y1, d0);
        }
        FloatVector sa = a0.add(a1).add(a2.add(a3));
        FloatVector sb = b0.add(b1).add(b2.add(b3));
        FloatVector sc = c0.add(c1).add(c2.add(c3));
        FloatVector sd = d0.add(d1).add(d2.add(d3));
        float a = ((sa.lane(0) + sa.lane(1)) + (sa.lane(2) + sa.lane(3))) + ((sa.lane(4) + sa.lane(5)) + (sa.lane(6) + sa.lane(7)));
        float b = ((sb.lane(0) + sb.lane(1)) + (sb.lane(2) + sb.lane(3))) + ((sb.lane(4) + sb.lane(5)) + (sb.lane(6) + sb.lane(7)));
        float c = ((sc.lane(0) + sc.lane(1)) + (sc.lane(2) + sc.lane(3))) + ((sc.lane(4) + sc.lane(5)) + (sc.lane(6) + sc.lane(7)));
        float d = ((sd.lane(0) + sd.lane(1)) + (sd.lane(2) + sd.lane(3))) + ((sd.lane(4) + sd.lane(5)) + (sd.lane(6) + sd.lane(7)));
        for (; i < n; i++) {
            a = Math.fma(w[w0 + i], x[x0 + i], a);
            b = Math.fma(w[w1 + i], x[x0 + i], b);
            c = Math.fma(w[w0 + i], x[x1 + i], c);
            d = Math.fma(w[w1 + i], x[x1 + i], d);
        }
        out[o] = a;
        out[o + 1] = b;
        out[o + stride] = c;
        out[o + stride + 1] = d;
    }

    /** This thread's scratch of at least {@code floats} floats; its contents are whatever the last user left. */
    private static float[] scratch(int floats)
    {
        return atLeast(SCRATCH, floats);
    }

    /** {@code buffer}'s array for this thread, replaced by a larger one if it holds fewer than {@code floats}; contents as left. */
    static float[] atLeast(ThreadLocal<float[]> buffer, int floats)
    {
        float[] array = buffer.get();
        if (array.length < floats) {
            array = new float[floats];
            buffer.set(array);
        }
        return array;
    }

    /** Runs {@code body} for every index in {@code [0, n)}, each whole on one thread; sequentially without a pool. */
    static void parallelFor(ForkJoinPool pool, int n, IntConsumer body)
    {
        if (pool == null || n == 1) {
            for (int i = 0; i < n; i++) {
                body.accept(i);
            }
            return;
        }
        // a parallel stream started inside a pool's task runs on that pool, not the common one
        pool.submit(() -> IntStream.range(0, n).parallel().forEach(body)).join();
    }

    /** RMSNorm of {@code n} values at {@code x[xOff..]} into {@code out[outOff..]}, scaled by {@code weight}. */
    static void rmsnorm(float[] out, int outOff, float[] x, int xOff, float[] weight, int n, float eps)
    {
        float meanSquare = dot(x, xOff, x, xOff, n) / n;
        float inv = (float) (1.0 / Math.sqrt(meanSquare + eps));
        for (int i = 0; i < n; i++) {
            out[outOff + i] = x[xOff + i] * inv * weight[i];
        }
    }

    /**
     * Rotates {@code dim} values at {@code x[off..]} in place for position {@code pos}. {@code cos} and
     * {@code sin} are {@code [position][dim/2]}. Pairs are {@code (i, i + dim/2)} (Llama's rotate_half) or,
     * when {@code interleaved}, {@code (2i, 2i+1)} (DeepSeek's layout).
     */
    static void rope(float[] x, int off, int dim, int pos, float[] cos, float[] sin, boolean interleaved)
    {
        int half = dim / 2;
        int table = pos * half;
        for (int i = 0; i < half; i++) {
            int a = interleaved ? off + 2 * i : off + i;
            int b = interleaved ? a + 1 : a + half;
            float c = cos[table + i];
            float s = sin[table + i];
            float x0 = x[a];
            float x1 = x[b];
            x[a] = x0 * c - x1 * s;
            x[b] = x0 * s + x1 * c;
        }
    }

    /** {@code cos} and {@code sin} tables {@code [maxPositions][dim/2]} for frequencies {@code theta^(-2i/dim)}. */
    static float[][] ropeTables(int maxPositions, int dim, double theta)
    {
        return ropeTables(maxPositions, dim, theta, RopeScaling.NONE);
    }

    /** The same, each inverse frequency remapped by {@code scaling}. */
    static float[][] ropeTables(int maxPositions, int dim, double theta, RopeScaling scaling)
    {
        int half = dim / 2;
        float[] cos = new float[maxPositions * half];
        float[] sin = new float[maxPositions * half];
        double attention = scaling.attentionFactor();
        for (int i = 0; i < half; i++) {
            double inverseFrequency = scaling.remap(i, dim, theta, 1.0 / StrictMath.pow(theta, (2.0 * i) / dim));
            for (int pos = 0; pos < maxPositions; pos++) {
                double angle = pos * inverseFrequency;
                // times 1 is exact, so the variants without an attention factor keep their tables' bits
                cos[pos * half + i] = (float) (StrictMath.cos(angle) * attention);
                sin[pos * half + i] = (float) (StrictMath.sin(angle) * attention);
            }
        }
        return new float[][] {cos, sin};
    }

    /** {@code x[off + i] += bias[biasOff + i]} for {@code i < n}: a tensor-parallel rank adds its heads' part of the bias. */
    static void addBias(float[] x, int off, float[] bias, int biasOff, int n)
    {
        for (int i = 0; i < n; i++) {
            x[off + i] += bias[biasOff + i];
        }
    }

    /**
     * {@code gate[i] = silu(gate[i]) * up[i]} for {@code n} values: the SwiGLU activation, in place, over the pool in chunks.
     * Each value is its own computation, so the split cannot change one; a prefill's exponentials (a million and
     * a half per layer for 512 tokens of a 1024-wide model) are otherwise a serial tenth of the step.
     */
    static void swiglu(ForkJoinPool pool, float[] gate, float[] up, int n)
    {
        int chunks = (n + SWIGLU_CHUNK - 1) / SWIGLU_CHUNK;
        if (pool == null || chunks < 2) {
            swiglu(gate, up, 0, n);
            return;
        }
        parallelFor(pool, chunks, c -> swiglu(gate, up, c * SWIGLU_CHUNK, Math.min(n, (c + 1) * SWIGLU_CHUNK)));
    }

    /**
     * Lane-wise the same operations as the scalar tail: the float widened, {@code exp(-g)} with StrictMath.exp's bits
     * ({@link ExactExp}), a double divide rounded to float, a float multiply.
     */
    private static void swiglu(float[] gate, float[] up, int from, int to)
    {
        VectorSpecies<Float> floats = ExactExp.FLOATS;
        int i = from;
        // until the lanes are compiled the scalar loop below does it all (the same bits, faster while cold)
        int bound = ExactExp.isWarm() ? from + floats.loopBound(to - from) : from;
        for (; i < bound; i += floats.length()) {
            DoubleVector g = (DoubleVector) FloatVector.fromArray(floats, gate, i).convertShape(VectorOperators.F2D, ExactExp.DOUBLES, 0);
            DoubleVector silu = g.div(ExactExp.exp(g.neg()).add(1.0));
            FloatVector rounded = (FloatVector) silu.convertShape(VectorOperators.D2F, floats, 0);
            rounded.mul(FloatVector.fromArray(floats, up, i)).intoArray(gate, i);
        }
        for (; i < to; i++) {
            float g = gate[i];
            gate[i] = (float) (g / (1.0 + StrictMath.exp(-g))) * up[i];
        }
    }
}
