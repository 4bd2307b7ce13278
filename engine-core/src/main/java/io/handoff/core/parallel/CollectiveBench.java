package io.handoff.core.parallel;

import io.handoff.core.model.parallel.Collective;
import io.handoff.core.model.parallel.Pieces;
import io.handoff.core.model.parallel.TensorShard;

/**
 * The sequence {@code handoff bench collective} runs on every rank alike: for each size, {@code warmups[i]} untimed and
 * {@code rounds[i]} timed all-gathers of an array of that many bytes, each rank owning an even share of it (what a
 * tensor-parallel step moves after each split matrix). Returns the nanoseconds of each size's timed rounds, as this
 * rank saw them.
 */
public final class CollectiveBench
{
    /** What the benchmark's ranks say they serve: no model. */
    public static final String IDENTITY = "collective-bench";

    private CollectiveBench() {}

    /** The largest frame the sizes need over the links, with room for their framing. */
    public static long maxFrameBytes(long[] sizes)
    {
        long max = 0;
        for (long size : sizes) {
            max = Math.max(max, size);
        }
        return max + 4096;
    }

    public static long[] run(Collective group, long[] sizes, int[] warmups, int[] rounds)
    {
        TensorShard shard = group.shard();
        long[] nanos = new long[sizes.length];
        for (int i = 0; i < sizes.length; i++) {
            int floats = Math.toIntExact(sizes[i] / 4);
            float[] buf = new float[floats];
            int[] bounds = shard.bounds(floats, 16);
            for (int j = bounds[shard.rank()]; j < bounds[shard.rank() + 1]; j++) {
                buf[j] = shard.rank() + j;
            }
            Pieces pieces = Pieces.columns(1, floats, 0, bounds);
            for (int r = 0; r < warmups[i]; r++) {
                group.allGather(buf, pieces);
            }
            long start = System.nanoTime();
            for (int r = 0; r < rounds[i]; r++) {
                group.allGather(buf, pieces);
            }
            nanos[i] = System.nanoTime() - start;
            for (int j = 0; j < floats; j++) {
                int owner = 0;
                while (j >= bounds[owner + 1]) {
                    owner++;
                }
                if (buf[j] != (float) (owner + j)) {
                    throw new IllegalStateException("value " + j + " of a " + sizes[i] + "-byte all-gather is " + buf[j] + ", rank " + owner
                            + " wrote " + (float) (owner + j));
                }
            }
        }
        return nanos;
    }
}
