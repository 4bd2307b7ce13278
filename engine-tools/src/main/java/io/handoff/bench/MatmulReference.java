package io.handoff.bench;

import io.handoff.core.model.Kernels;
import io.handoff.core.model.WeightMatrix;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.util.SplittableRandom;
import java.util.concurrent.ForkJoinPool;

/**
 * The machine's throughput on the model's own matmul kernel, measured in the same run as a benchmark
 * so that the benchmark can report "fraction of what this machine's kernel does" instead of a bare
 * number that means nothing on another machine.
 */
public final class MatmulReference
{
    private MatmulReference() {}

    /** GFLOP/s of {@code [rows, cols] x [cols, tokens]} products on {@code threads} threads, for at least {@code millis}. */
    public static double gflops(int threads, int rows, int cols, int tokens, long millis)
    {
        SplittableRandom random = new SplittableRandom(1);
        float[] w = new float[rows * cols];
        float[] x = new float[cols * tokens];
        for (int i = 0; i < w.length; i++) {
            w[i] = (float) random.nextDouble(-1, 1);
        }
        for (int i = 0; i < x.length; i++) {
            x[i] = (float) random.nextDouble(-1, 1);
        }
        float[] out = new float[rows * tokens];
        // off the heap, like a checkpoint's mapped weights: the engine's kernels then see one kind of memory, and C2 keeps
        // the code it compiled for it
        Arena arena = Arena.ofShared();
        MemorySegment data = arena.allocate(4L * w.length, 64);
        MemorySegment.copy(w, 0, data, ValueLayout.JAVA_FLOAT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN), 0, w.length);
        WeightMatrix matrix = WeightMatrix.f32(data, rows, cols);
        ForkJoinPool pool = threads > 1 ? new ForkJoinPool(threads) : null;
        try {
            for (int warm = 0; warm < 3; warm++) {
                Kernels.matmul(pool, out, 0, rows, matrix, x, 0, cols, tokens);
            }
            long start = System.nanoTime();
            long deadline = start + millis * 1_000_000;
            long iterations = 0;
            while (System.nanoTime() < deadline || iterations < 3) {
                Kernels.matmul(pool, out, 0, rows, matrix, x, 0, cols, tokens);
                iterations++;
            }
            double seconds = (System.nanoTime() - start) / 1e9;
            return 2.0 * rows * cols * tokens * iterations / seconds / 1e9;
        }
        finally {
            if (pool != null) {
                pool.shutdown();
            }
            arena.close();
        }
    }
}
