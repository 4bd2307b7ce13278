package io.handoff.benchmarks.model;

import io.handoff.core.model.Sampler;
import io.handoff.core.model.SamplingContext;
import io.handoff.core.model.SamplingParams;
import io.handoff.core.scheduler.TokenLogprob;
import io.handoff.core.scheduler.TokenLogprobs;
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

import java.util.Set;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;

/**
 * One sampled token, in microseconds, over a seeded logits row of a real vocabulary's size, for the rules clients send,
 * against the same run's greedy pick ({@link Sampler#argmax}: one pass over the row, the least any rule can cost), and
 * a token's log probability with 5 alternatives ({@link TokenLogprobs}, what {@code return_logprob} adds per token).
 * The penalized case counts a 256-token output history.
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
@Fork(value = 1, jvmArgsAppend = {"--add-modules", "jdk.incubator.vector"})
@Warmup(iterations = 5, time = 1)
@Measurement(iterations = 3, time = 1)
public class SamplerBenchmark
{
    private static final SamplingParams NUCLEUS = new SamplingParams(0.8f, 0.9f, 7);
    private static final SamplingParams TOP_K = new SamplingParams(0.8f, 1f, 20, 0f, 1f, 0f, 0f, 0, 7);
    private static final SamplingParams FULL = new SamplingParams(1f, 1f, 7);
    private static final SamplingParams PENALIZED = new SamplingParams(0.8f, 0.9f, 20, 0.05f, 1.1f, 0.2f, 0.1f, 0, 7);
    private static final int HISTORY = 256;

    @Param({"32000", "128256"})
    public int vocab;

    private float[] logits;
    private SamplingContext first;
    private SamplingContext later;

    @Setup
    public void setUp()
    {
        SplittableRandom random = new SplittableRandom(29);
        logits = new float[vocab];
        for (int i = 0; i < vocab; i++) {
            // a peaked row, as a trained model's: most tokens far below the few likely ones
            logits[i] = (float) (random.nextGaussian() * 2 + (random.nextInt(200) == 0 ? 8 : 0));
        }
        int[] outputs = random.ints(HISTORY, 0, vocab).toArray();
        first = SamplingContext.first(Set.of());
        later = new SamplingContext(outputs, HISTORY, Set.of());
    }

    @Benchmark
    public int greedyReference()
    {
        return Sampler.argmax(logits);
    }

    @Benchmark
    public int topP09()
    {
        return Sampler.sample(logits, NUCLEUS, first);
    }

    @Benchmark
    public int topK20()
    {
        return Sampler.sample(logits, TOP_K, first);
    }

    @Benchmark
    public int topP1()
    {
        return Sampler.sample(logits, FULL, first);
    }

    @Benchmark
    public int everyRuleWithHistory()
    {
        return Sampler.sample(logits, PENALIZED, later);
    }

    @Benchmark
    public TokenLogprob logprobTop5()
    {
        return TokenLogprobs.of(logits, 3, 5);
    }
}
