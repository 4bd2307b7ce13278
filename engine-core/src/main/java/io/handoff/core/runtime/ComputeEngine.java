package io.handoff.core.runtime;

import com.typesafe.config.Config;
import io.handoff.core.disagg.Disaggregation;
import io.handoff.core.disagg.control.Compatibility;
import io.handoff.core.fault.FaultInjector;
import io.handoff.core.kv.KvGeometry;
import io.handoff.core.kv.KvPool;
import io.handoff.core.kv.PageAccounting;
import io.handoff.core.model.ModelConfig;
import io.handoff.core.model.ModelRunner;
import io.handoff.core.model.Transformer;
import io.handoff.core.model.parallel.Collective;
import io.handoff.core.model.parallel.TensorShard;
import io.handoff.core.parallel.RankGroup;
import io.handoff.core.parallel.TensorParallelRunner;
import io.handoff.core.model.tokenizer.Tokenizer;
import io.handoff.core.plugin.PluginEntry;
import io.handoff.core.plugin.PluginRegistry;
import io.handoff.core.prefix.ChunkCache;
import io.handoff.core.prefix.PrefixCache;
import io.handoff.core.prefix.RadixCache;
import io.handoff.core.scheduler.DecodeMetadataProbe;
import io.handoff.core.scheduler.KvHandoff;
import io.handoff.core.scheduler.Scheduler;
import io.handoff.core.scheduler.SchedulerConfig;
import io.handoff.math.ExactExp;
import io.handoff.spi.PluginSettings;
import io.handoff.spi.attention.AttentionArithmetic;
import io.handoff.spi.attention.AttentionBackend;
import io.handoff.spi.attention.AttentionBackendProvider;
import io.handoff.spi.attention.AttentionCapabilities;
import io.handoff.spi.attention.AttentionGeometry;
import io.handoff.spi.attention.KvDtype;
import io.handoff.trace.Timelines;
import org.apache.logging.log4j.LogManager;
import org.apache.logging.log4j.Logger;

import java.util.Optional;
import java.util.function.UnaryOperator;

import static java.util.Objects.requireNonNull;

/**
 * One process's compute path, built from the configuration: the model, the KV pool, the prefix cache,
 * the attention backend chosen among the plugins (checked against the model's layout, the page size and
 * the dtype before anything runs), and the scheduler that drives them.
 */
public final class ComputeEngine
        implements AutoCloseable
{
    private static final Logger log = LogManager.getLogger(ComputeEngine.class);
    public static final String ARITHMETIC_KEY = "handoff.attention.arithmetic";
    // the largest handoff.kv.pool-pages allows

    private final ModelConfig model;
    private final Tokenizer tokenizer;
    private final Optional<ChatTemplateText> chatTemplate;
    private final String attentionId;
    private final KvPool kv;
    private final Transformer transformer;
    private final PrefixCache prefixCache;
    private final Scheduler scheduler;
    private final Optional<Disaggregation> disaggregation;
    private final ModelSource source;
    private final Optional<RankGroup> ranks;

    private ComputeEngine(ModelSource source, ModelConfig model, Tokenizer tokenizer, Optional<ChatTemplateText> chatTemplate, String attentionId, KvPool kv, Transformer transformer, PrefixCache prefixCache, Scheduler scheduler,
            Optional<Disaggregation> disaggregation, Optional<RankGroup> ranks)
    {
        this.source = source;
        this.ranks = ranks;
        this.disaggregation = disaggregation;
        this.model = model;
        this.tokenizer = tokenizer;
        this.chatTemplate = chatTemplate;
        this.attentionId = attentionId;
        this.kv = kv;
        this.transformer = transformer;
        this.prefixCache = prefixCache;
        this.scheduler = scheduler;
    }

    public static ComputeEngine create(Engine engine, FaultInjector faults)
    {
        return create(engine, faults, Optional.empty());
    }

    /**
     * A compute engine for one role: colocated when {@code role} is empty, else the prefill or decode half
     * of a disaggregated deployment, with its transfer backend opened and its handoff wired to the scheduler.
     */
    public static ComputeEngine create(Engine engine, FaultInjector faults, Optional<Disaggregation.Role> role)
    {
        return create(engine, faults, role, Disaggregation.Options.DEFAULT);
    }

    public static ComputeEngine create(Engine engine, FaultInjector faults, Optional<Disaggregation.Role> role, Disaggregation.Options options)
    {
        return create(engine, faults, role, options, UnaryOperator.identity());
    }

    /**
     * A colocated engine built as {@link #create(Engine, FaultInjector)} builds one, whose scheduler runs
     * {@code runner.apply(transformer)} instead of the transformer: for a benchmark that times the scheduler with a
     * model that does no arithmetic. Serving never calls it.
     */
    public static ComputeEngine createWithRunner(Engine engine, FaultInjector faults, UnaryOperator<ModelRunner> runner)
    {
        return create(engine, faults, Optional.empty(), Disaggregation.Options.DEFAULT, requireNonNull(runner, "runner is null"));
    }

    private static ComputeEngine create(Engine engine, FaultInjector faults, Optional<Disaggregation.Role> role, Disaggregation.Options options,
            UnaryOperator<ModelRunner> runner)
    {
        requireNonNull(engine, "engine is null");
        // ExactExp compiles its vector lanes on a thread of its own: start it while the model loads, not at the first forward
        ExactExp.isWarm();
        // the transformer reads a checkpoint's weights from its mappings: the engine owns them until close(), or until building fails
        ModelSource source = ModelSource.open(engine.config().config());
        try {
            return create(engine, faults, role, options, source, runner);
        }
        catch (RuntimeException | Error e) {
            try {
                source.close();
            }
            catch (RuntimeException suppressed) {
                e.addSuppressed(suppressed);
            }
            throw e;
        }
    }

    private static ComputeEngine create(Engine engine, FaultInjector faults, Optional<Disaggregation.Role> role, Disaggregation.Options options,
            ModelSource source, UnaryOperator<ModelRunner> runner)
    {
        Config config = engine.config().config();
        ModelConfig model = source.config();
        int tensorSize = RankSetup.size(config);
        int dataParallel = RankSetup.dataParallel(config);
        if (dataParallel == 1) {
            TensorShard.check(tensorSize, model.name(), model.heads(), model.kvHeads(), model.attentionGeometry().layout());
        }
        // data-parallel attention: every head on every rank, each for its own requests
        TensorShard shard = dataParallel > 1 ? TensorShard.WHOLE : new TensorShard(0, tensorSize);
        KvSizing sizing = KvSizing.of(config, source, shard);
        int pageSize = sizing.pageSize();
        KvDtype dtype = sizing.dtype();
        AttentionChoice choice = AttentionChoice.of(engine, source, shard, pageSize, dtype);
        String attentionId = choice.id();
        AttentionBackendProvider provider = choice.provider();
        PluginSettings settings = choice.settings();
        AttentionGeometry geometry = choice.geometry();

        int threads = tensorSize > 1 ? RankSetup.threads(config, tensorSize) : config.getInt("handoff.scheduler.threads");
        SchedulerConfig schedulerConfig = new SchedulerConfig(
                config.getInt("handoff.scheduler.max-running-requests"),
                config.getInt("handoff.scheduler.chunked-prefill-size"),
                config.getInt("handoff.scheduler.max-queued-requests"),
                config.getBoolean("handoff.scheduler.overlap"),
                threads == 0 ? Runtime.getRuntime().availableProcessors() : threads,
                DecodeMetadataProbe.Mode.parse(config.getString("handoff.debug.decode-metadata-probe")),
                config.getDuration("handoff.scheduler.shutdown-wait"));

        KvGeometry kvGeometry = sizing.geometry();
        Optional<Disaggregation> disaggregation = role.map(r -> Disaggregation.open(r, engine.config(), engine.security(), engine.plugins(), faults, options));
        KvPool kv;
        try {
            int pages = sizing.pages();
            kv = disaggregation.map(d -> d.allocatePool(kvGeometry, pages, dataParallel > 1 ? 1 : tensorSize, dataParallel))
                    .orElseGet(() -> dataParallel > 1 ? KvPool.allocateDataParallel(kvGeometry, pages, dataParallel) : KvPool.allocate(kvGeometry, pages));
        }
        catch (RuntimeException e) {
            disaggregation.ifPresent(Disaggregation::close);
            throw e;
        }
        Transformer transformer = null;
        RankGroup ranks = null;
        try {
            PluginEntry entry = engine.plugins().find(attentionId).orElseThrow();
            AttentionBackend attention = PluginRegistry.inContext(engine.plugins().loaderOf(entry),
                    () -> provider.create(geometry, kv.view(), settings));
            if (tensorSize > 1) {
                ranks = RankGroup.start(RankSetup.settings(config, engine.security(), model, RankSetup.identity(model, kvGeometry, geometry.arithmetic()),
                        kv.pages() / kv.pagePool().partitions(), kv.ranks() > 1 || dataParallel > 1 ? kv.sharedFile() : Optional.empty()),
                        RankSetup.launcher(config, engine.config().source()));
            }
            transformer = new Transformer(model, source.weights(), schedulerConfig.threads(), ranks == null ? Collective.NONE : ranks, dataParallel > 1);
            ModelRunner model0 = ranks == null ? transformer : new TensorParallelRunner(transformer, ranks);
            if (dataParallel > 1 && config.getBoolean("handoff.scheduler.prefix-cache")) {
                // a cached prefix is in one rank's part of the pool: a request reusing it would have to be that rank's, and a
                // part full of cached pages could starve its requests; the chunk cache keeps only a request's own chunks
                log.info("data-parallel attention: the prefix cache keeps each request's own chunks only (no prefix shared between requests)");
            }
            PrefixCache prefixCache = dataParallel == 1 && config.getBoolean("handoff.scheduler.prefix-cache")
                    ? new RadixCache(pageSize, kv.pagePool())
                    : new ChunkCache(pageSize);
            // the whole model's KV rows (a rank's pool holds its heads only): servers of any layouts of the model pair
            KvGeometry wholeKv = KvSizing.of(config, source, TensorShard.WHOLE).geometry();
            KvHandoff handoff = disaggregation
                    .map(d -> d.handoff(kv, Compatibility.of(model.name(), model.compatibilityHash(), geometry.layout(), wholeKv, geometry.arithmetic(),
                            kv.ranks()), model.attentionGeometry()))
                    .orElse(KvHandoff.NONE);
            Scheduler scheduler = new Scheduler(schedulerConfig, requireNonNull(runner.apply(model0), "runner gave null"), kv, prefixCache, attention, faults, handoff,
                    source.tokenizer().eosTokenIds(), new Timelines(config.getInt("handoff.debug.timeline-requests")));
            disaggregation.ifPresent(d -> d.attach(scheduler));
            if (ranks != null) {
                ranks.onLost(lost -> scheduler.failAll(io.handoff.trace.FailureCause.RANK_LOST, "tensor-parallel " + lost.getMessage()));
            }
            log.info("model {} ({}, {}, weights {}, max context {}), attention {} ({} arithmetic), KV pool {} pages x {} tokens ({} MiB, {}), {} compute threads, overlap {}{}",
                    model.name(), model.architecture(), source.weights().description(), transformer.weightsDescription(), model.maxContext(), attentionId,
                    geometry.arithmetic(), kv.pages(), pageSize, kv.footprintBytes() >> 20,
                    dtype, schedulerConfig.threads(), schedulerConfig.overlap(), tensorSize > 1 ? (dataParallel > 1 ? ", data-parallel attention over " : ", tensor-parallel ") + tensorSize + " ranks (this is rank 0)" : "");
            return new ComputeEngine(source, model, source.tokenizer(), source.chatTemplate(), attentionId, kv, transformer, prefixCache, scheduler, disaggregation,
                    Optional.ofNullable(ranks));
        }
        catch (Exception e) {
            if (transformer != null) {
                transformer.close();
            }
            if (ranks != null) {
                ranks.close();
            }
            disaggregation.ifPresent(Disaggregation::close);
            kv.close();
            if (e instanceof RuntimeException runtime) {
                throw runtime;
            }
            throw new IllegalStateException("attention backend '" + attentionId + "' failed to start: " + e, e);
        }
    }

    /**
     * {@value #ARITHMETIC_KEY}: {@code f32}, {@code llama-cpp} ({@link AttentionArithmetic#LLAMA_CPP_F16}), or {@code auto}, which
     * is llama.cpp's when the weights round their inputs as llama.cpp does (a quantized GGUF file under quantized-activations
     * auto) and the attention backend computes it, so that such a file computes as llama.cpp computes it all through; F32
     * otherwise.
     */
    public static AttentionArithmetic attentionArithmetic(Config config, ModelSource source, AttentionCapabilities backend)
    {
        String setting = config.getString(ARITHMETIC_KEY);
        return switch (setting) {
            case "auto" -> source.weights().roundsActivations() && backend.arithmetics().contains(AttentionArithmetic.LLAMA_CPP_F16)
                    ? AttentionArithmetic.LLAMA_CPP_F16
                    : AttentionArithmetic.F32;
            case "f32" -> AttentionArithmetic.F32;
            case "llama-cpp" -> AttentionArithmetic.LLAMA_CPP_F16;
            default -> throw new IllegalArgumentException(ARITHMETIC_KEY + " = '" + setting + "' is not one of auto | f32 | llama-cpp");
        };
    }

    public ModelConfig model()
    {
        return model;
    }

    /** The model's tokenizer: prompts are encoded and outputs decoded with it. */
    public Tokenizer tokenizer()
    {
        return tokenizer;
    }

    /** The model's own chat template, when its files carry one. */
    public Optional<ChatTemplateText> chatTemplate()
    {
        return chatTemplate;
    }

    public String attentionId()
    {
        return attentionId;
    }

    /** Weight-matmul FLOPs per token of the model (attention excluded), for benchmarks. */
    public long matmulFlopsPerToken()
    {
        return transformer.matmulFlopsPerToken();
    }

    public Scheduler scheduler()
    {
        return scheduler;
    }

    public KvPool kv()
    {
        return kv;
    }

    /** The tensor-parallel group this process leads; empty with one rank. */
    public Optional<RankGroup> ranks()
    {
        return ranks;
    }

    /** The prefill or decode part of a disaggregated deployment; empty when colocated. */
    public Optional<Disaggregation> disaggregation()
    {
        return disaggregation;
    }

    @Override
    public void close()
    {
        scheduler.close();
        transformer.close();
        // no step runs any more: the other ranks can stop
        ranks.ifPresent(RankGroup::close);
        // no forward runs any more: the weights' mappings can go
        source.close();
        disaggregation.ifPresent(Disaggregation::close);
        // The scheduler thread has ended, so the prefix cache is ours now: drop it and account for every page.
        prefixCache.evict(prefixCache.cachedPages());
        PageAccounting pages = kv.pagePool().accounting();
        if (pages.free() == pages.total()) {
            log.info("freed every KV page ({} of {} free)", pages.free(), pages.total());
        }
        else if (pages.owned() + pages.receiving() == 0) {
            // not a leak: each waits for a proof (a drain ack, a peer's exit) that did not come before the grace period ended
            log.warn("{} of {} KV pages are held without proof at shutdown: quarantined for rooms whose peer did not prove, before this "
                    + "process stopped, that no write of it can land (invariant I2)", pages.quarantined(), pages.total());
        }
        else {
            log.warn("{} of {} KV pages are not free at shutdown: owned {}, receiving {} (leaked), quarantined {} (held without proof)",
                    pages.used(), pages.total(), pages.owned(), pages.receiving(), pages.quarantined());
        }
        kv.close();
    }
}
