package io.handoff.bench.attention;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.handoff.cli.ModelOption;
import io.handoff.cli.EngineOptions;
import io.handoff.cli.Main;
import io.handoff.cli.ModelPathOption;
import io.handoff.core.kv.KvGeometry;
import io.handoff.core.model.ModelConfig;
import io.handoff.core.plugin.PluginEntry;
import io.handoff.core.plugin.PluginRegistry;
import io.handoff.core.runtime.Engine;
import io.handoff.core.runtime.ComputeEngine;
import io.handoff.core.runtime.ModelSource;
import io.handoff.spi.PluginSettings;
import io.handoff.spi.attention.AttentionBackend;
import io.handoff.spi.attention.AttentionBackendProvider;
import io.handoff.spi.attention.AttentionGeometry;
import io.handoff.spi.attention.KvDtype;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Spec;

import java.io.PrintWriter;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.Callable;
import java.util.concurrent.ForkJoinPool;

/**
 * {@code handoff bench attention}: an attention plugin's decode, as KV bytes read per second, against the machine's
 * read bandwidth measured in the same run by {@link ReadBandwidth}, rounds interleaved; and its extend in tokens per
 * second. The plugin runs through the attention SPI over a real, seeded KV pool, as the model calls it.
 */
@Command(name = "attention", mixinStandardHelpOptions = true,
        description = "Decode attention's KV bytes read per second against the machine's read bandwidth (a streaming kernel "
                + "measured in the same run, on the same threads, rounds interleaved), and extend attention tokens/s.")
public final class AttentionBenchCommand
        implements Callable<Integer>
{
    /** Above this the pool would crowd a shared machine; the error says which options shrink it. */
    private static final long MAX_POOL_BYTES = 8L << 30;
    private static final double TARGET_SECONDS = 0.2;
    private static final long SEED = 20261201L;

    @Mixin
    EngineOptions options;

    @Mixin
    ModelPathOption modelPath;

    @Option(names = "--attention", paramLabel = "ID", description = "Attention plugin (handoff plugins lists them), e.g. triton, aiter.")
    String plugin;

    /** The old spelling of --attention. */
    @Option(names = "--plugin", hidden = true, paramLabel = "ID")
    void plugin(String id)
    {
        plugin = id;
    }

    @Mixin
    ModelOption model;

    @Option(names = "--batch", paramLabel = "N", defaultValue = "8", description = "Sequences per decode step (default ${DEFAULT-VALUE}).")
    int batch;

    @Option(names = "--seq-len", paramLabel = "N[,N...]", split = ",", defaultValue = "512,1024,2048,4096",
            description = "Sequence lengths (default ${DEFAULT-VALUE}).")
    List<Integer> seqLens;

    @Option(names = "--extend-tokens", paramLabel = "N", defaultValue = "128",
            description = "Query tokens of the extend chunk, at the end of a sequence of each length (default ${DEFAULT-VALUE}); "
                    + "capped at the sequence length.")
    int extendTokens;

    @Option(names = "--kv-dtype", paramLabel = "TYPE", description = "KV element type; sets handoff.kv.dtype (auto, f32, bf16, f16).")
    String kvDtype;

    @Option(names = "--threads", paramLabel = "N", description = "Threads for attention and the streaming kernel alike (default: one per core).")
    Integer threads;

    @Option(names = "--rounds", paramLabel = "N", defaultValue = "3", description = "Measured rounds, each the streaming kernel then every length; medians are reported (default ${DEFAULT-VALUE}).")
    int rounds;

    @Option(names = "--stream-mib", paramLabel = "MIB", defaultValue = "512", description = "Streaming kernel's buffer in MiB, far above the caches (default ${DEFAULT-VALUE}).")
    int streamMib;

    @Option(names = "--json", description = "Print JSON.")
    boolean json;

    @Option(names = "--out", paramLabel = "DIR", description = "Write report.json and report.html (chart and table) into DIR.")
    Path out;

    @Spec
    CommandSpec spec;

    @Override
    public Integer call()
            throws Exception
    {
        if (plugin == null) {
            throw new ParameterException(spec.commandLine(), "missing required option --attention (an attention plugin: handoff plugins lists them)");
        }
        checkOptions();
        model.applyTo(options.overrides);
        modelPath.applyTo(options.overrides);
        if (kvDtype != null) {
            options.overrides.put("handoff.kv.dtype", kvDtype.toLowerCase(Locale.ROOT));
        }
        int threadCount = threads == null ? Runtime.getRuntime().availableProcessors() : threads;
        ObjectNode result;
        try (Engine engine = Engine.start(options.source());
                ModelSource source = ModelSource.open(engine.config().config())) {
            result = measure(engine, source, threadCount);
        }
        AttentionFigures figures = new AttentionFigures(result);
        PrintWriter stdout = spec.commandLine().getOut();
        if (json) {
            stdout.println(new ObjectMapper().enable(SerializationFeature.INDENT_OUTPUT).writeValueAsString(result));
        }
        else {
            figures.printTable(stdout);
        }
        if (out != null) {
            Path html = figures.report().write(out);
            if (!json) {
                stdout.println("report: " + html);
            }
        }
        stdout.flush();
        return Main.OK;
    }

    private void checkOptions()
    {
        CommandLine line = spec.commandLine();
        if (batch < 1) {
            throw new CommandLine.ParameterException(line, "--batch must be at least 1, was " + batch);
        }
        for (int seqLen : seqLens) {
            if (seqLen < 1) {
                throw new CommandLine.ParameterException(line, "--seq-len values must be positive, was " + seqLen);
            }
        }
        if (extendTokens < 1) {
            throw new CommandLine.ParameterException(line, "--extend-tokens must be at least 1, was " + extendTokens);
        }
        if (threads != null && threads < 1) {
            throw new CommandLine.ParameterException(line, "--threads must be at least 1, was " + threads);
        }
        if (rounds < 1) {
            throw new CommandLine.ParameterException(line, "--rounds must be at least 1, was " + rounds);
        }
        if (streamMib < 1) {
            throw new CommandLine.ParameterException(line, "--stream-mib must be at least 1, was " + streamMib);
        }
    }

    private ObjectNode measure(Engine engine, ModelSource source, int threadCount)
            throws Exception
    {
        var config = engine.config().config();
        ModelConfig modelConfig = source.config();
        String dtypeSetting = config.getString("handoff.kv.dtype");
        KvDtype dtype = dtypeSetting.equals("auto") ? source.defaultKvDtype() : KvDtype.valueOf(dtypeSetting.toUpperCase(Locale.ROOT));
        int pageSize = config.getInt("handoff.kv.page-size");
        AttentionGeometry geometry = modelConfig.attentionGeometry();
        KvGeometry kvGeometry = KvGeometry.of(geometry, modelConfig.layers(), dtype, pageSize);
        int maxSeqLen = seqLens.stream().mapToInt(Integer::intValue).max().orElseThrow();
        long poolBytes = (long) batch * Math.ceilDiv(maxSeqLen, pageSize) * kvGeometry.bytesPerPage();
        if (poolBytes > MAX_POOL_BYTES) {
            throw new IllegalArgumentException("a KV pool for --batch " + batch + " x --seq-len " + maxSeqLen + " of model '" + modelConfig.name()
                    + "' would take " + (poolBytes >> 20) + " MiB (over " + (MAX_POOL_BYTES >> 20) + "); lower --batch or the longest --seq-len");
        }

        PluginEntry entry = engine.plugins().require(plugin, "attention", "--attention");
        AttentionBackendProvider provider = (AttentionBackendProvider) entry.provider().orElseThrow();
        PluginSettings settings = engine.config().pluginSettings(plugin);
        provider.capabilities(settings).refusal(plugin, geometry.layout(), pageSize, dtype).ifPresent(reason -> {
            throw new IllegalArgumentException(reason + "; choose another --attention (" + engine.plugins().available("attention") + ") or --model");
        });
        // the arithmetic the engine would run this model and plugin with (handoff.attention.arithmetic)
        AttentionGeometry computed = geometry.withArithmetic(ComputeEngine.attentionArithmetic(config, source, provider.capabilities(settings)));

        ForkJoinPool pool = new ForkJoinPool(threadCount);
        try (SeededKv kv = new SeededKv(kvGeometry, geometry, batch, maxSeqLen, SEED);
                ReadBandwidth stream = new ReadBandwidth((long) streamMib << 20, pool, threadCount, SEED)) {
            AttentionBackend backend = PluginRegistry.inContext(engine.plugins().loaderOf(entry), () -> provider.create(computed, kv.view(), settings));
            AttentionTimer timer = new AttentionTimer(backend, pool, modelConfig.layers());
            List<SeqLenCase> cases = new ArrayList<>();
            for (int seqLen : seqLens) {
                cases.add(new SeqLenCase(kv, backend, computed, batch, seqLen, Math.min(extendTokens, seqLen)));
            }
            RoundRobin rounds = new RoundRobin(timer, stream, cases);
            rounds.warmUp(TARGET_SECONDS);
            rounds.run(this.rounds);
            for (SeqLenCase c : cases) {
                if (!c.decodeMatchesExtend()) {
                    throw new IllegalStateException("attention plugin '" + plugin + "': decode of position " + (c.seqLen - 1) + " (sequence 0, seq_len "
                            + c.seqLen + ") differs from extend of the same position, or is not finite; the plugin breaks its bit-exactness contract");
                }
            }
            return rounds.result(plugin, modelConfig.name(), computed.arithmetic(), dtype, pageSize, modelConfig.layers(), batch, threadCount,
                    kv.footprintBytes());
        }
        finally {
            pool.shutdown();
        }
    }
}
