package io.handoff.bench.serving;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.LockSupport;
import java.util.function.Consumer;

import static java.util.Objects.requireNonNull;

/**
 * Runs the same requests against one or two URLs. With two, the requests are cut into blocks of {@code blockSize} and
 * each block runs on both sides, one after the other, the side that goes first alternating from block to block
 * (A B, B A, A B, ...): each side has the machine to itself while it runs, both see the machine's background load
 * of the same minutes, and neither always runs warmer or later than the other. Within a block the load is the
 * configured one (closed or open loop); a side's time is the sum of its blocks' wall times.
 */
public final class InterleavedRun
{
    /** One side's samples in request order and the seconds its blocks took. */
    public record SideRun(List<Sample> samples, double seconds) {}

    private final List<ServingClient> sides;
    private final List<String> ridPrefixes;

    public InterleavedRun(List<ServingClient> sides, List<String> ridPrefixes)
    {
        this.sides = List.copyOf(requireNonNull(sides, "sides is null"));
        this.ridPrefixes = List.copyOf(requireNonNull(ridPrefixes, "ridPrefixes is null"));
        if (sides.isEmpty() || sides.size() > 2 || sides.size() != ridPrefixes.size()) {
            throw new IllegalArgumentException("one or two sides, each with a rid prefix; got " + sides.size() + " and " + ridPrefixes.size());
        }
    }

    /** Which side runs first in block {@code block}: 0 in even blocks, 1 in odd ones (when there are two). */
    static int[] order(int block, int sides)
    {
        return sides == 1 ? new int[] {0} : block % 2 == 0 ? new int[] {0, 1} : new int[] {1, 0};
    }

    /** The start index of each block of {@code blockSize} over {@code count} requests, then {@code count}. */
    static int[] blockStarts(int count, int blockSize)
    {
        if (blockSize < 1) {
            throw new IllegalArgumentException("--block must be at least 1, was " + blockSize);
        }
        int blocks = (count + blockSize - 1) / blockSize;
        int[] starts = new int[blocks + 1];
        for (int b = 0; b <= blocks; b++) {
            starts[b] = Math.min(count, b * blockSize);
        }
        return starts;
    }

    public List<SideRun> run(List<BenchRequest> requests, Load load, int blockSize, Consumer<Sample> ended)
            throws InterruptedException
    {
        Sample[][] samples = new Sample[sides.size()][requests.size()];
        double[] seconds = new double[sides.size()];
        double[] arrivals = load instanceof Load.Open open ? open.arrivals(requests.size()) : new double[0];
        int[] starts = blockStarts(requests.size(), blockSize);
        for (int b = 0; b + 1 < starts.length; b++) {
            List<BenchRequest> block = requests.subList(starts[b], starts[b + 1]);
            for (int side : order(b, sides.size())) {
                long start = System.nanoTime();
                List<Sample> done = switch (load) {
                    case Load.Closed closed -> closedLoop(side, block, closed.concurrency(), ended);
                    case Load.Open ignored -> openLoop(side, block, Arrays.copyOfRange(arrivals, starts[b], starts[b + 1]), ended);
                };
                seconds[side] += (System.nanoTime() - start) / 1e9;
                for (Sample sample : done) {
                    samples[side][sample.index()] = sample;
                }
            }
        }
        List<SideRun> runs = new ArrayList<>();
        for (int side = 0; side < sides.size(); side++) {
            runs.add(new SideRun(List.of(samples[side]), seconds[side]));
        }
        return runs;
    }

    private Sample send(int side, BenchRequest request)
    {
        return sides.get(side).generate(request, ridPrefixes.get(side) + "-" + request.index());
    }

    private List<Sample> closedLoop(int side, List<BenchRequest> block, int concurrency, Consumer<Sample> ended)
            throws InterruptedException
    {
        Sample[] done = new Sample[block.size()];
        AtomicInteger next = new AtomicInteger();
        List<Thread> workers = new ArrayList<>();
        for (int w = 0; w < Math.min(concurrency, block.size()); w++) {
            workers.add(Thread.ofVirtual().name("bench-serving-" + side + "-" + w).start(() -> {
                for (int i = next.getAndIncrement(); i < block.size(); i = next.getAndIncrement()) {
                    done[i] = send(side, block.get(i));
                    ended.accept(done[i]);
                }
            }));
        }
        for (Thread worker : workers) {
            worker.join();
        }
        return List.of(done);
    }

    /** Each request is sent at its arrival time (seconds, relative to the block's first), whatever is still in flight. */
    private List<Sample> openLoop(int side, List<BenchRequest> block, double[] arrivals, Consumer<Sample> ended)
            throws InterruptedException
    {
        Sample[] done = new Sample[block.size()];
        long origin = System.nanoTime();
        List<Thread> senders = new ArrayList<>();
        for (int i = 0; i < block.size(); i++) {
            int index = i;
            long at = origin + (long) ((arrivals[i] - arrivals[0]) * 1e9);
            for (long wait = at - System.nanoTime(); wait > 0; wait = at - System.nanoTime()) {
                LockSupport.parkNanos(wait); // the arrival process: the next request is due at its time
            }
            senders.add(Thread.ofVirtual().name("bench-serving-" + side + "-" + i).start(() -> {
                done[index] = send(side, block.get(index));
                ended.accept(done[index]);
            }));
        }
        for (Thread sender : senders) {
            sender.join();
        }
        return List.of(done);
    }
}
