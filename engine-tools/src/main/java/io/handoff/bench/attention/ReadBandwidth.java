package io.handoff.bench.attention;

import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.VectorOperators;
import jdk.incubator.vector.VectorSpecies;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.ForkJoinPool;
import java.util.concurrent.ForkJoinTask;

import static java.util.Objects.requireNonNull;

/**
 * The machine's read bandwidth as a streaming kernel sees it: a read-only sum over an off-heap buffer far larger
 * than the caches, split into one contiguous slice per thread. The sum is Vector API code (256-bit float lanes,
 * four independent accumulators so that loads, not the add chain, set the pace); the buffer holds seeded values,
 * so every page is really mapped and the sum is checked against a scalar one in tests.
 */
final class ReadBandwidth
        implements AutoCloseable
{
    static final String KERNEL = "read-only float sum, Vector API 256-bit lanes x 4 accumulators, one contiguous slice per thread";

    private static final VectorSpecies<Float> LANES = FloatVector.SPECIES_256;
    private static final long BLOCK = 4L * LANES.vectorByteSize();
    private static final long FILL_TILE = 1 << 20;
    // a multiple of BLOCK
    private static final long CHUNK = 64 << 10;
    private static final int WARM_UP_CALLS = 20_000;

    private final Arena arena = Arena.ofShared();
    private final MemorySegment buffer;
    private final ForkJoinPool pool;
    private final int threads;
    // the sums are published here so the JIT cannot drop the loads
    private volatile double sink;

    ReadBandwidth(long bytes, ForkJoinPool pool, int threads, long seed)
    {
        if (bytes < BLOCK * threads) {
            throw new IllegalArgumentException("a read-bandwidth buffer of " + bytes + " bytes is too small for " + threads + " threads");
        }
        this.pool = requireNonNull(pool, "pool is null");
        this.threads = threads;
        this.buffer = arena.allocate(bytes / BLOCK * BLOCK, 64);
        // a seeded tile repeated: every page is written (so really mapped), and filling stays fast
        SplittableRandom random = new SplittableRandom(seed);
        long tile = Math.min(buffer.byteSize(), FILL_TILE);
        for (long i = 0; i < tile / Float.BYTES; i++) {
            buffer.setAtIndex(ValueLayout.JAVA_FLOAT, i, (float) random.nextDouble(-1, 1));
        }
        for (long at = tile; at < buffer.byteSize(); at += tile) {
            MemorySegment.copy(buffer, 0, buffer, at, Math.min(tile, buffer.byteSize() - at));
        }
    }

    /** The buffer itself, for tests that check the kernel's sum against a plain one. */
    MemorySegment bufferForTests()
    {
        return buffer;
    }

    long bytes()
    {
        return buffer.byteSize();
    }

    /** One pass over the buffer on every thread; returns its bytes per second, in GB/s (10^9). */
    double measure()
    {
        long start = System.nanoTime();
        double total = sum();
        long elapsed = System.nanoTime() - start;
        sink = total;
        return buffer.byteSize() / (double) elapsed;
    }

    /** The sum of every float in the buffer, slice by slice; each slice's sum is in its kernel's fixed order. */
    double sum()
    {
        long blocks = buffer.byteSize() / BLOCK;
        List<ForkJoinTask<Float>> slices = new ArrayList<>(threads);
        for (int t = 0; t < threads; t++) {
            long from = blocks * t / threads * BLOCK;
            long to = blocks * (t + 1) / threads * BLOCK;
            slices.add(pool.submit(() -> sumSlice(buffer, from, to)));
        }
        double total = 0;
        for (ForkJoinTask<Float> slice : slices) {
            total += slice.join();
        }
        return total;
    }

    /** A slice, chunk by chunk: a short method called often is what C2 compiles fully (a single long loop ran interpreted). */
    private static float sumSlice(MemorySegment buffer, long from, long to)
    {
        float total = 0;
        for (long at = from; at < to; at += CHUNK) {
            total += sumChunk(buffer, at, Math.min(at + CHUNK, to));
        }
        return total;
    }

    private static float sumChunk(MemorySegment buffer, long from, long to)
    {
        FloatVector a0 = FloatVector.zero(LANES);
        FloatVector a1 = FloatVector.zero(LANES);
        FloatVector a2 = FloatVector.zero(LANES);
        FloatVector a3 = FloatVector.zero(LANES);
        long step = LANES.vectorByteSize();
        ByteOrder order = ByteOrder.nativeOrder();
        for (long at = from; at < to; at += BLOCK) {
            a0 = a0.add(FloatVector.fromMemorySegment(LANES, buffer, at, order));
            a1 = a1.add(FloatVector.fromMemorySegment(LANES, buffer, at + step, order));
            a2 = a2.add(FloatVector.fromMemorySegment(LANES, buffer, at + 2 * step, order));
            a3 = a3.add(FloatVector.fromMemorySegment(LANES, buffer, at + 3 * step, order));
        }
        return a0.add(a1).add(a2.add(a3)).reduceLanes(VectorOperators.ADD);
    }

    /** Runs the kernel over the buffer's first chunk until the JIT has compiled it, so no measured pass runs interpreted. */
    void warmUp()
    {
        float total = 0;
        for (int i = 0; i < WARM_UP_CALLS; i++) {
            total += sumChunk(buffer, 0, Math.min(CHUNK, buffer.byteSize()));
        }
        sink = total;
    }

    /** What the last pass summed, so a caller (and the JIT) sees the loads used. */
    double lastSum()
    {
        return sink;
    }

    @Override
    public void close()
    {
        arena.close();
    }
}
