package io.handoff.bench.attention;

import io.handoff.spi.attention.AttentionBackend;
import io.handoff.spi.attention.DecodeMetadata;
import io.handoff.spi.attention.ExtendMetadata;

import java.util.concurrent.ForkJoinPool;

import static java.util.Objects.requireNonNull;

/**
 * Times the backend's decode and extend as the model calls them, layer after layer, inside the bench's fork-join
 * pool (so the backend's parallel loops run on exactly that many threads).
 */
final class AttentionTimer
{
    private final AttentionBackend backend;
    private final ForkJoinPool pool;
    private final int layers;

    AttentionTimer(AttentionBackend backend, ForkJoinPool pool, int layers)
    {
        this.backend = requireNonNull(backend, "backend is null");
        this.pool = requireNonNull(pool, "pool is null");
        this.layers = layers;
    }

    /** Seconds for {@code iterations} decode steps, each one call per layer. */
    double decode(DecodeMetadata metadata, float[] q, float[] out, int iterations)
    {
        return pool.submit(() -> {
            long start = System.nanoTime();
            for (int i = 0; i < iterations; i++) {
                for (int layer = 0; layer < layers; layer++) {
                    backend.decode(layer, metadata, q, out);
                }
            }
            return (System.nanoTime() - start) / 1e9;
        }).join();
    }

    /** Seconds for {@code iterations} extend steps, each one call per layer. */
    double extend(ExtendMetadata metadata, float[] q, float[] out, int iterations)
    {
        return pool.submit(() -> {
            long start = System.nanoTime();
            for (int i = 0; i < iterations; i++) {
                for (int layer = 0; layer < layers; layer++) {
                    backend.extend(layer, metadata, q, out);
                }
            }
            return (System.nanoTime() - start) / 1e9;
        }).join();
    }

    /** How many repetitions of a call that took {@code seconds} fill {@code target} seconds (at least one). */
    static int iterationsFor(double seconds, double target)
    {
        return (int) Math.clamp(Math.ceil(target / Math.max(seconds, 1e-9)), 1, 1_000_000);
    }
}
