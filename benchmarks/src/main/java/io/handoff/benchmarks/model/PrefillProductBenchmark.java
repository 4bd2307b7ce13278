package io.handoff.benchmarks.model;

import io.handoff.core.model.BlockFormat;
import io.handoff.core.model.Kernels;
import io.handoff.core.model.WeightMatrix;
import io.handoff.core.model.gguf.BlockQuantizer;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.SplittableRandom;
import java.util.concurrent.ForkJoinPool;
import java.util.concurrent.TimeUnit;

/**
 * A prefill's product with one linear layer: 512 tokens times a Llama-shaped matrix on two threads, in milliseconds, the
 * same seeded weights stored as F32 (the reference: F32 fused multiply-adds, what the quantized kernels run on their
 * codes) and in the block formats of the files people download. The quantized inputs are rounded inside the product, as
 * in the engine. Multiply-adds per nanosecond: rows x cols x 512 / the time.
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.MILLISECONDS)
@Fork(value = 1, jvmArgsAppend = {"--add-modules", "jdk.incubator.vector"})
@Warmup(iterations = 5, time = 1)
@Measurement(iterations = 5, time = 1)
public class PrefillProductBenchmark
{
    @Param({"F32", "Q8_0", "Q4_K", "Q6_K"})
    public String type;

    /** rows x cols ({@code [out, in]}): attention's output projection and an FFN's down projection of a 1,024-wide model. */
    @Param({"1024x1024", "1024x2816"})
    public String shape;

    private static final int TOKENS = 512;

    private Arena arena;
    private ForkJoinPool pool;
    private WeightMatrix matrix;
    private float[] x;
    private float[] out;
    private int rows;
    private int cols;

    @Setup
    public void setUp()
    {
        rows = Integer.parseInt(shape.substring(0, shape.indexOf('x')));
        cols = Integer.parseInt(shape.substring(shape.indexOf('x') + 1));
        SplittableRandom random = new SplittableRandom(41);
        float[] weights = new float[rows * cols];
        for (int i = 0; i < weights.length; i++) {
            weights[i] = (float) (random.nextGaussian() * 0.05);
        }
        arena = Arena.ofShared();
        if (type.equals("F32")) {
            matrix = WeightMatrix.f32(weights, rows, cols);
        }
        else {
            BlockFormat format = BlockFormat.valueOf(type);
            byte[] encoded = BlockQuantizer.encode(format, weights, 0, weights.length);
            MemorySegment data = arena.allocate(encoded.length, 64);
            data.copyFrom(MemorySegment.ofArray(encoded));
            matrix = WeightMatrix.blocks(format, data, rows, cols).withActivations(format.llamaCppActivations());
        }
        x = new float[TOKENS * cols];
        for (int i = 0; i < x.length; i++) {
            x[i] = (float) (random.nextGaussian() * 2);
        }
        out = new float[TOKENS * rows];
        pool = new ForkJoinPool(2);
    }

    @TearDown
    public void tearDown()
    {
        pool.close();
        arena.close();
    }

    @Benchmark
    public float[] prefill()
    {
        Kernels.matmul(pool, out, 0, rows, matrix, x, 0, cols, TOKENS);
        return out;
    }
}
