package io.handoff.benchmarks.math;

import io.handoff.math.ExactExp;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OperationsPerInvocation;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.Warmup;

import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;

/**
 * {@link ExactExp} against the scalar {@link StrictMath#exp} loop it replaces, in nanoseconds per element: softmax
 * weights {@code (float) exp(score - max)} over 4096 seeded scores (the attention plugins' use), and doubles spread
 * over fdlibm's whole finite range, about 1 in 100 of them past the vector path's limit and recomputed by StrictMath.
 * Ten warm-up seconds: the Vector API code is fast only once C2 has compiled it, and on a loaded machine that takes several.
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Fork(value = 1, jvmArgsAppend = {"--add-modules", "jdk.incubator.vector"})
@Warmup(iterations = 10, time = 1)
@Measurement(iterations = 3, time = 1)
@OperationsPerInvocation(ExactExpBenchmark.N)
public class ExactExpBenchmark
{
    static final int N = 4096;

    private final float[] scores = new float[N];
    private final float[] weights = new float[N];
    private final double[] xs = new double[N];
    private final double[] ys = new double[N];
    private float max;

    @Setup
    public void setUp()
    {
        SplittableRandom random = new SplittableRandom(13);
        max = Float.NEGATIVE_INFINITY;
        for (int i = 0; i < N; i++) {
            scores[i] = (float) random.nextDouble(-8, 8);
            max = Math.max(max, scores[i]);
            xs[i] = random.nextDouble(-714, 714);
        }
    }

    @Benchmark
    public float[] softmaxWeightsStrictMath()
    {
        for (int i = 0; i < N; i++) {
            weights[i] = (float) StrictMath.exp(scores[i] - max);
        }
        return weights;
    }

    @Benchmark
    public float[] softmaxWeightsExactExp()
    {
        ExactExp.expMinus(scores, 0, max, weights, 0, N);
        return weights;
    }

    @Benchmark
    public double[] doublesStrictMath()
    {
        for (int i = 0; i < N; i++) {
            ys[i] = StrictMath.exp(xs[i]);
        }
        return ys;
    }

    @Benchmark
    public double[] doublesExactExp()
    {
        ExactExp.exp(xs, 0, ys, 0, N);
        return ys;
    }
}
