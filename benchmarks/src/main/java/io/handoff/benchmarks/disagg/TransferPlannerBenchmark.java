package io.handoff.benchmarks.disagg;

import io.handoff.core.disagg.room.TransferPlanner;
import io.handoff.spi.transfer.ProducerFence;
import io.handoff.spi.transfer.RoomKey;
import io.handoff.spi.transfer.TransferPlan;
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
import org.openjdk.jmh.annotations.Warmup;
import org.openjdk.jmh.infra.Blackhole;

import java.util.Arrays;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;

/**
 * How the prefill turns one chunk's page mapping into transfer plans (the planner's public entry point, as the
 * sender room calls it): runs of pages contiguous on both sides merged, plans bounded at
 * {@value #MAX_PAGES_PER_PLAN} pages (the default {@code max-pages-per-plan}). The destination pages are one run, runs
 * of 8, or scattered one by one (a decode pool whose free list is fragmented). The reference reads the mapping once: a
 * copy of the two page lists.
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.SECONDS)
@Fork(1)
@Warmup(iterations = 2, time = 1)
@Measurement(iterations = 3, time = 1)
public class TransferPlannerBenchmark
{
    private static final int MAX_PAGES_PER_PLAN = 256;
    private static final RoomKey ROOM = new RoomKey(1, 0);

    /** Pages in the chunk. */
    @Param({"16", "256", "4096"})
    public int pages;

    @Param({"contiguous", "runs8", "scattered"})
    public String destinations;

    private int[] sourcePages;
    private int[] destinationPages;

    @Setup
    public void setUp()
    {
        sourcePages = new int[pages];
        for (int i = 0; i < pages; i++) {
            sourcePages[i] = 100 + i;
        }
        int runLength = switch (destinations) {
            case "contiguous" -> pages;
            case "runs8" -> 8;
            case "scattered" -> 1;
            default -> throw new IllegalArgumentException("destinations is contiguous, runs8 or scattered, not " + destinations);
        };
        // runs of runLength pages at shuffled places of a pool four times the chunk, never adjacent to each other
        int runs = (pages + runLength - 1) / runLength;
        int[] slots = shuffled(4 * runs, new SplittableRandom(7));
        destinationPages = new int[pages];
        for (int i = 0; i < pages; i++) {
            destinationPages[i] = slots[i / runLength] * (runLength + 1) + i % runLength;
        }
    }

    @Benchmark
    public List<TransferPlan> plan()
    {
        return TransferPlanner.plan(ROOM, 0, 0, sourcePages, destinationPages, MAX_PAGES_PER_PLAN, ProducerFence.DONE);
    }

    @Benchmark
    public void copyMappingReference(Blackhole blackhole)
    {
        blackhole.consume(Arrays.copyOf(sourcePages, pages));
        blackhole.consume(Arrays.copyOf(destinationPages, pages));
    }

    private static int[] shuffled(int count, SplittableRandom random)
    {
        int[] values = new int[count];
        for (int i = 0; i < count; i++) {
            values[i] = i;
        }
        for (int i = count - 1; i > 0; i--) {
            int j = random.nextInt(i + 1);
            int t = values[i];
            values[i] = values[j];
            values[j] = t;
        }
        return values;
    }
}
