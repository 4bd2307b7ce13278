package io.handoff.benchmarks.disagg;

import io.handoff.core.disagg.room.PageChecksums;
import io.handoff.spi.transfer.MemoryRegion;
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
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;

/**
 * The KV page checksums (invariant I3): CRC32C of {@value #PAGES} scattered pages (every fourth of a pool of
 * {@value #POOL_PAGES}) across {@value #REGIONS} regions (8 layers of keys and values), as prefill and decode take
 * them for a chunk. One operation reads {@code 64 x 16 x pageStride} bytes (4 MiB at 4 KiB, 32 MiB at 32 KiB), the
 * same in every method here, so the ratio of two methods' ops/s is the ratio of their GB/s. References over the same
 * bytes in the same order: a plain read that sums them as longs, and a copy of them into one buffer (memcpy).
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.SECONDS)
@Fork(1)
@Warmup(iterations = 2, time = 1)
@Measurement(iterations = 3, time = 1)
public class PageChecksumsBenchmark
{
    private static final int REGIONS = 16;
    private static final int POOL_PAGES = 256;
    private static final int PAGES = 64;

    /** Bytes of one page in one region: 16 tokens of a 256-byte row (a tiny model), of a 2 KiB row (8 KV heads x 128 x BF16). */
    @Param({"4096", "32768"})
    public int pageStride;

    private Arena arena;
    private List<MemoryRegion> regions;
    private PageChecksums checksums;
    private int[] pages;
    private MemorySegment copy;

    @Setup
    public void setUp()
    {
        arena = Arena.ofShared();
        SplittableRandom random = new SplittableRandom(5);
        regions = new ArrayList<>();
        for (int r = 0; r < REGIONS; r++) {
            MemorySegment segment = arena.allocate((long) POOL_PAGES * pageStride, 64);
            for (long offset = 0; offset < segment.byteSize(); offset += Long.BYTES) {
                segment.set(ValueLayout.JAVA_LONG_UNALIGNED, offset, random.nextLong());
            }
            regions.add(new MemoryRegion(r, segment, pageStride, -1));
        }
        checksums = new PageChecksums(regions);
        pages = new int[PAGES];
        for (int i = 0; i < PAGES; i++) {
            pages[i] = 4 * i + 1;
        }
        copy = arena.allocate((long) PAGES * REGIONS * pageStride, 64);
    }

    @TearDown
    public void tearDown()
    {
        arena.close();
    }

    @Benchmark
    public int[] crc32c()
    {
        return checksums.checksums(pages);
    }

    @Benchmark
    public long readSumReference()
    {
        long sum = 0;
        for (int page : pages) {
            for (MemoryRegion region : regions) {
                MemorySegment segment = region.segment();
                long start = (long) page * pageStride;
                long end = start + pageStride;
                for (long offset = start; offset < end; offset += Long.BYTES) {
                    sum += segment.get(ValueLayout.JAVA_LONG_UNALIGNED, offset);
                }
            }
        }
        return sum;
    }

    @Benchmark
    public MemorySegment memcpyReference()
    {
        long at = 0;
        for (int page : pages) {
            for (MemoryRegion region : regions) {
                MemorySegment.copy(region.segment(), (long) page * pageStride, copy, at, pageStride);
                at += pageStride;
            }
        }
        return copy;
    }
}
