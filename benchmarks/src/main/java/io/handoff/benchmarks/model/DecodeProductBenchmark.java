package io.handoff.benchmarks.model;

import io.handoff.core.model.BlockFormat;
import io.handoff.core.model.Kernels;
import io.handoff.core.model.WeightMatrix;
import io.handoff.core.model.gguf.BlockQuantizer;
import jdk.incubator.vector.LongVector;
import jdk.incubator.vector.VectorOperators;
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
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.util.SplittableRandom;
import java.util.concurrent.ForkJoinPool;
import java.util.concurrent.ForkJoinTask;
import java.util.concurrent.TimeUnit;

/**
 * A decode step's product with a large quantized matrix: one token times 131,072 rows of 1,024 values (a Llama 3
 * vocabulary's output layer is 128,256 of them) on two threads, in milliseconds. The matrix (108 MiB in Q6_K, 72 MiB in
 * Q4_K) streams from memory as every layer of a decode step does, so bytes per second is what counts. The reference,
 * {@link #read}, sums the same bytes on the same two threads (a half each, in the machine's widest lanes): the product's time over the
 * read's is how far the kernel is from the memory's speed. 2,048 rows (1.1 to 1.6 MiB) stay in the cores' caches, where
 * the arithmetic alone counts.
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

    @Param({"131072", "2048"})
    public int rows;

    private static final int COLS = 1024;

    private Arena arena;
    private MemorySegment data;
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
        data = arena.allocate(slabBytes * (rows / slab), 64);
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

    @Benchmark
    public long read()
    {
        long half = data.byteSize() / 2 / 64 * 64;
        ForkJoinTask<Long> second = pool.submit(() -> sum(half, data.byteSize()));
        return sum(0, half) + second.join();
    }

    private long sum(long from, long to)
    {
        LongVector acc = LongVector.zero(LongVector.SPECIES_PREFERRED);
        long at = from;
        for (; at + 64 <= to; at += 64) {
            acc = acc.add(LongVector.fromMemorySegment(LongVector.SPECIES_PREFERRED, data, at, ByteOrder.LITTLE_ENDIAN));
        }
        long sum = acc.reduceLanes(VectorOperators.ADD);
        for (; at < to; at++) {
            sum += data.get(ValueLayout.JAVA_BYTE, at);
        }
        return sum;
    }
}
