package io.handoff.core.scheduler;

import io.handoff.core.fault.FaultPlan;
import io.handoff.core.fault.FaultPoint;
import io.handoff.core.kv.KvGeometry;
import io.handoff.core.kv.KvPool;
import io.handoff.core.model.ForwardBatch;
import io.handoff.core.model.ModelConfig;
import io.handoff.core.model.ModelRunner;
import io.handoff.core.model.Sampler;
import io.handoff.core.model.SamplingParams;
import io.handoff.core.model.SyntheticWeights;
import io.handoff.core.model.Transformer;
import io.handoff.core.prefix.ChunkCache;
import io.handoff.core.prefix.PrefixCache;
import io.handoff.core.prefix.RadixCache;
import io.handoff.spi.attention.AttentionBackend;
import io.handoff.spi.attention.KvCacheView;
import io.handoff.spi.attention.KvDtype;
import io.handoff.testkit.model.ReferenceAttention;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.SplittableRandom;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.stream.IntStream;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A real scheduler over a real model, KV pool and prefix cache, with {@link ReferenceAttention} and a
 * {@link FaultPlan} a test can park or fail points of. Models are built once per JVM (seeded weights) and
 * shared. Closing the fixture releases every gate it handed out, closes the scheduler and then, with the
 * scheduler thread gone, empties the prefix cache and checks that every page of the pool is free again.
 */
final class SchedulerFixture
        implements AutoCloseable
{
    static final Duration TIMEOUT = Duration.ofSeconds(60);
    // matmul threads of the shared models: the test machine has two cores
    private static final int MODEL_THREADS = 2;
    private static final Map<String, Transformer> MODELS = new ConcurrentHashMap<>();

    final ModelRunner model;
    final KvPool kv;
    final PrefixCache prefixCache;
    final FaultPlan faults = new FaultPlan();
    final Scheduler scheduler;
    private final List<FaultPlan.Gate> gates = new ArrayList<>();

    private SchedulerFixture(Builder builder)
    {
        Transformer transformer = model(builder.model);
        this.model = builder.favoured < 0 ? transformer : favouring(transformer, builder.favoured);
        ModelConfig config = model.config();
        this.kv = KvPool.allocate(KvGeometry.of(config.attentionGeometry(), config.layers(), builder.dtype, builder.pageSize), builder.pages);
        this.prefixCache = builder.radix ? new RadixCache(builder.pageSize, kv.pagePool()) : new ChunkCache(builder.pageSize);
        SchedulerConfig schedulerConfig = new SchedulerConfig(builder.maxRunning, builder.chunk, builder.maxQueued, builder.overlap, MODEL_THREADS,
                builder.probe);
        this.scheduler = new Scheduler(schedulerConfig, model, kv, prefixCache, new ReferenceAttention(config.attentionGeometry(), kv.view()), faults,
                builder.handoff);
    }

    static Builder builder(String model)
    {
        return new Builder(model);
    }

    static Transformer model(String name)
    {
        return MODELS.computeIfAbsent(name, n -> new Transformer(ModelConfig.byName(n), new SyntheticWeights(ModelConfig.byName(n).weightsSeed()), MODEL_THREADS));
    }

    /** {@code model}, with {@code token}'s logit raised above every other: greedy picks it at every position. */
    private static ModelRunner favouring(Transformer model, int token)
    {
        return new ModelRunner()
        {
            @Override
            public ModelConfig config()
            {
                return model.config();
            }

            @Override
            public float[][] forwardRows(ForwardBatch batch, KvCacheView kv, AttentionBackend attention, Transformer.LayerHook hook, int[] logitRows)
            {
                float[][] rows = model.forwardRows(batch, kv, attention, hook, logitRows);
                for (float[] row : rows) {
                    row[token] = row[Sampler.argmax(row)] + 10;
                }
                return rows;
            }
        };
    }

    /** {@code length} byte tokens drawn from {@code seed}. */
    static int[] prompt(int length, long seed)
    {
        SplittableRandom random = new SplittableRandom(seed);
        return IntStream.range(0, length).map(i -> random.nextInt(256)).toArray();
    }

    static int[] concat(int[] first, int[] second)
    {
        int[] joined = java.util.Arrays.copyOf(first, first.length + second.length);
        System.arraycopy(second, 0, joined, first.length, second.length);
        return joined;
    }

    /** Greedy, EOS ignored (a random model may emit it anywhere), logits returned. */
    static GenerateRequest greedy(String rid, int[] prompt, int maxNewTokens)
    {
        return new GenerateRequest(rid, prompt, maxNewTokens, SamplingParams.GREEDY, Set.of(), true, true);
    }

    /** The raw bits of every logit of every output position: what bit-exact comparison compares. */
    static int[][] logitBits(GenerateResult result)
    {
        int[][] bits = new int[result.logits().size()][];
        for (int i = 0; i < bits.length; i++) {
            float[] logits = result.logits().get(i);
            bits[i] = new int[logits.length];
            for (int j = 0; j < logits.length; j++) {
                bits[i][j] = Float.floatToRawIntBits(logits[j]);
            }
        }
        return bits;
    }

    /** Parks threads reaching {@code point} at {@code (a, b)}; the gate is released at the latest when the fixture closes. */
    FaultPlan.Gate park(FaultPoint point, long a, long b)
    {
        FaultPlan.Gate gate = faults.park(point, FaultPlan.Match.is(a), FaultPlan.Match.is(b));
        gates.add(gate);
        return gate;
    }

    /** Parks the scheduler thread before it schedules step {@code step}. */
    FaultPlan.Gate parkBeforeStep(long step)
    {
        return park(FaultPoint.SCHEDULER_BEFORE_STEP, step, 0);
    }

    /** Parks the compute thread after layer {@code layer} of step {@code step}'s forward. */
    FaultPlan.Gate parkAfterLayer(long step, int layer)
    {
        return park(FaultPoint.FORWARD_AFTER_LAYER, step, layer);
    }

    RequestHandle submit(GenerateRequest request)
    {
        return scheduler.submit(request, TokenListener.NONE);
    }

    static GenerateResult await(RequestHandle handle)
    {
        try {
            return handle.result().get(TIMEOUT.toMillis(), TimeUnit.MILLISECONDS);
        }
        catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new AssertionError(e);
        }
        catch (ExecutionException | TimeoutException e) {
            throw new AssertionError("request " + handle.rid() + " did not complete", e);
        }
    }

    GenerateResult run(GenerateRequest request)
    {
        return await(submit(request));
    }

    /** Submits every request before waiting for any. */
    List<GenerateResult> runAll(List<GenerateRequest> requests)
    {
        List<RequestHandle> handles = requests.stream().map(this::submit).toList();
        return handles.stream().map(SchedulerFixture::await).toList();
    }

    int totalPages()
    {
        return kv.pages();
    }

    int freePages()
    {
        return kv.pagePool().freePages();
    }

    /**
     * With no request admitted: every page is free or in the prefix cache, and the scheduler's ledger
     * (each page's refcount explained by its holders) holds.
     */
    void assertIdleAndAccountedFor()
    {
        SchedulerStats stats = scheduler.stats();
        assertThat(stats.running()).isZero();
        assertThat(stats.pages().free() + stats.cachedPages()).as("free + cached pages").isEqualTo(totalPages());
        assertThat(stats.pages().owned()).as("owned pages").isEqualTo(stats.cachedPages());
        scheduler.checkInvariants();
    }

    @Override
    public void close()
    {
        gates.forEach(FaultPlan.Gate::release);
        scheduler.close();
        // the scheduler thread has ended, so this thread may touch the cache now
        scheduler.checkInvariants();
        prefixCache.evict(Integer.MAX_VALUE);
        int free = freePages();
        kv.close();
        assertThat(free).as("free pages once the prefix cache is emptied").isEqualTo(totalPages());
    }

    static final class Builder
    {
        private final String model;
        private KvDtype dtype = KvDtype.F32;
        private int pageSize = 16;
        private int pages = 256;
        private int maxRunning = 8;
        private int chunk = 4096;
        private int maxQueued = 64;
        private boolean overlap;
        private boolean radix = true;
        private KvHandoff handoff = KvHandoff.NONE;
        private DecodeMetadataProbe.Mode probe = DecodeMetadataProbe.Mode.OFF;
        private int favoured = -1;

        private Builder(String model)
        {
            this.model = model;
        }

        Builder dtype(KvDtype dtype)
        {
            this.dtype = dtype;
            return this;
        }

        Builder handoff(KvHandoff handoff)
        {
            this.handoff = handoff;
            return this;
        }

        Builder probe(DecodeMetadataProbe.Mode probe)
        {
            this.probe = probe;
            return this;
        }

        Builder pageSize(int pageSize)
        {
            this.pageSize = pageSize;
            return this;
        }

        Builder pages(int pages)
        {
            this.pages = pages;
            return this;
        }

        Builder maxRunning(int maxRunning)
        {
            this.maxRunning = maxRunning;
            return this;
        }

        Builder chunk(int chunk)
        {
            this.chunk = chunk;
            return this;
        }

        Builder maxQueued(int maxQueued)
        {
            this.maxQueued = maxQueued;
            return this;
        }

        Builder overlap(boolean overlap)
        {
            this.overlap = overlap;
            return this;
        }

        /** The model with {@code token} raised above every other logit, so that greedy sampling picks it at once. */
        Builder favour(int token)
        {
            this.favoured = token;
            return this;
        }

        /** No reuse between requests: the chunk cache instead of the radix cache. */
        Builder chunkCache()
        {
            this.radix = false;
            return this;
        }

        SchedulerFixture build()
        {
            return new SchedulerFixture(this);
        }
    }
}
