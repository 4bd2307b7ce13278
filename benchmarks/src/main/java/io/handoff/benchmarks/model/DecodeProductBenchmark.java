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
 * A decode step's product with a large quantized matrix: one token times 131,072 rows of 1,024 values (a Llama 3
 * vocabulary's output layer is 128,256 of them) on two threads, in milliseconds. The matrix (108 MiB in Q6_K, 72 MiB in
 * Q4_K) streams from memory as every layer of a decode step does, so bytes per second is what counts: the matrix's size
 * divided by the time, against the machine's read bandwidth ({@code bench attention} measures it).
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.MILLISECONDS)
@Fork(value = 1, jvmArgsAppend = {"--add-modules", "jdk.incubator.vector"})
@Warmup(iterations = 5, time = 1)
@Measurement(iterations = 5, time = 1)
public class DecodeProductBenchmark
{
    @Param({"Q4_K", "Q6_K"})
    public String type;

    /** 131,072 rows stream from memory; 2,048 (1.1 to 1.6 MiB) stay in the cores' caches, so only the arithmetic counts. */
    @Param({"131072", "2048"})
    public int rows;

    private static final int COLS = 1024;

    private Arena arena;
    private ForkJoinPool pool;
    private WeightMatrix matrix;
    private float[] x;
    private float[] out;

    @Setup
    public void setUp()
    {
        SplittableRandom random = new SplittableRandom(43);
        BlockFormat format = BlockFormat.valueOf(type);
        arena = Arena.ofShared();
        // quantized a slab of rows at a time: the whole matrix in F32 would be 512 MiB
        int slab = Math.min(rows, 4096);
        long slabBytes = (long) slab * COLS / format.blockElements() * format.blockBytes();
        MemorySegment data = arena.allocate(slabBytes * (rows / slab), 64);
        float[] weights = new float[slab * COLS];
        for (int s = 0; s < rows / slab; s++) {
            for (int i = 0; i < weights.length; i++) {
                weights[i] = (float) (random.nextGaussian() * 0.05);
            }
            byte[] encoded = BlockQuantizer.encode(format, weights, 0, weights.length);
            MemorySegment.copy(MemorySegment.ofArray(encoded), 0, data, s * slabBytes, encoded.length);
        }
        matrix = WeightMatrix.blocks(format, data, rows, COLS).withActivations(format.llamaCppActivations());
        x = new float[COLS];
        for (int i = 0; i < x.length; i++) {
            x[i] = (float) (random.nextGaussian() * 2);
        }
        out = new float[rows];
        pool = new ForkJoinPool(2);
    }

    @TearDown
    public void tearDown()
    {
        pool.close();
        arena.close();
    }

    @Benchmark
    public float[] decode()
    {
        Kernels.matmul(pool, out, 0, rows, matrix, x, 0, COLS, 1);
        return out;
    }
}
