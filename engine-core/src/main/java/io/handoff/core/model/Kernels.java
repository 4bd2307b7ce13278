package io.handoff.core.model;

import jdk.incubator.vector.FloatVector;
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
final class Kernels
{
    private static final VectorSpecies<Float> F = FloatVector.SPECIES_256;
    private static final int L = F.length();
    private static final int ROW_BLOCK = 16;
    private static final int TOKEN_TILE = 64;
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
        FloatVector acc = acc0.add(acc1).add(acc2.add(acc3));
        // reduceLanes(ADD) leaves the order unspecified (it may differ between interpreter and JIT)
        float sum = ((acc.lane(0) + acc.lane(1)) + (acc.lane(2) + acc.lane(3)))
                + ((acc.lane(4) + acc.lane(5)) + (acc.lane(6) + acc.lane(7)));
        for (; i < n; i++) {
            sum = Math.fma(a[aOff + i], b[bOff + i], sum);
        }
        return sum;
    }

    /**
     * {@code out[outOff + t*outStride + r] = w[wOff + r*cols ..] · x[xOff + t*xStride ..]} for {@code t < tokens},
     * {@code r < rows}: {@code w} is a row-major {@code [rows, cols]} matrix (a linear layer's {@code [out, in]}).
     */
    static void matmul(ForkJoinPool pool, float[] out, int outOff, int outStride, float[] w, int wOff, int rows, int cols,
            float[] x, int xOff, int xStride, int tokens)
    {
        int blocks = (rows + ROW_BLOCK - 1) / ROW_BLOCK;
        IntConsumer block = b -> {
            int rowEnd = Math.min(rows, (b + 1) * ROW_BLOCK);
            for (int t0 = 0; t0 < tokens; t0 += TOKEN_TILE) {
                int tEnd = Math.min(tokens, t0 + TOKEN_TILE);
                for (int r = b * ROW_BLOCK; r < rowEnd; r++) {
                    for (int t = t0; t < tEnd; t++) {
                        out[outOff + t * outStride + r] = dot(w, wOff + r * cols, x, xOff + t * xStride, cols);
                    }
                }
            }
        };
        if ((long) rows * cols * tokens < PARALLEL_MIN_WORK) {
            for (int b = 0; b < blocks; b++) {
                block.accept(b);
            }
            return;
        }
        parallelFor(pool, blocks, block);
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
        for (int i = 0; i < half; i++) {
            double inverseFrequency = scaling.remap(i, 1.0 / StrictMath.pow(theta, (2.0 * i) / dim));
            for (int pos = 0; pos < maxPositions; pos++) {
                double angle = pos * inverseFrequency;
                cos[pos * half + i] = (float) StrictMath.cos(angle);
                sin[pos * half + i] = (float) StrictMath.sin(angle);
            }
        }
        return new float[][] {cos, sin};
    }

    /** {@code x[off + i] += bias[i]} for {@code i < n}. */
    static void addBias(float[] x, int off, float[] bias, int n)
    {
        for (int i = 0; i < n; i++) {
            x[off + i] += bias[i];
        }
    }

    /** {@code gate[i] = silu(gate[i]) * up[i]} for {@code n} values: the SwiGLU activation, in place. */
    static void swiglu(float[] gate, float[] up, int n)
    {
        for (int i = 0; i < n; i++) {
            float g = gate[i];
            gate[i] = (float) (g / (1.0 + StrictMath.exp(-g))) * up[i];
        }
    }
}
