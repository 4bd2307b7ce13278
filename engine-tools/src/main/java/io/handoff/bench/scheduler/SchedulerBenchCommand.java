package io.handoff.bench.scheduler;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.handoff.cli.ModelOption;
import io.handoff.cli.EngineOptions;
import io.handoff.cli.Main;
import io.handoff.core.config.ConfigSource;
import io.handoff.core.fault.FaultInjector;
import io.handoff.core.runtime.ComputeEngine;
import io.handoff.core.runtime.Engine;
import io.handoff.core.runtime.ModelSource;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

import java.io.PrintWriter;
import java.math.BigDecimal;
import java.math.MathContext;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.function.ToDoubleFunction;

/**
 * {@code handoff bench scheduler}: the scheduler's own cost per step (admission, page allocation and release, radix
 * match and insert, batch building, sampling) with {@link FixedLogitsModel}, a model that does no math, as a fraction
 * of the real model's step time on the same workload at the same batch, both engines built from the same
 * configuration and measured in the same run, rounds interleaved.
 */
@Command(name = "scheduler", mixinStandardHelpOptions = true,
        description = "Scheduler + allocator + radix-cache overhead per step (a model that does no math) as a fraction of the "
                + "real model's step time at the same batch, measured in the same run.")
public final class SchedulerBenchCommand
        implements Callable<Integer>
{
    private static final long SEED = 20261201L;
    private static final long WARM_UP_STEPS = 3000;

    @Mixin
    EngineOptions options;

    @Mixin
    ModelOption model;

    @Option(names = "--batch", paramLabel = "N[,N...]", split = ",", defaultValue = "16,64,256", description = "Requests in flight (default ${DEFAULT-VALUE}).")
    List<Integer> batches;

    @Option(names = "--prompt-len", paramLabel = "N", defaultValue = "96", description = "Prompt tokens per request (default ${DEFAULT-VALUE}).")
    int promptLength;

    @Option(names = "--shared-prefix", paramLabel = "N", defaultValue = "64",
            description = "Leading prompt tokens every request shares, served by the radix cache after the first (default ${DEFAULT-VALUE}).")
    int sharedPrefix;

    @Option(names = "--decode-tokens", paramLabel = "N", defaultValue = "32", description = "Tokens each request generates (default ${DEFAULT-VALUE}).")
    int decodeTokens;

    @Option(names = "--waves", paramLabel = "N", defaultValue = "3",
            description = "Requests per run as a multiple of the batch, all submitted at once: the scheduler runs batch of them and "
                    + "admits the next as each finishes (default ${DEFAULT-VALUE}).")
    int waves;

    @Option(names = "--rounds", paramLabel = "N", defaultValue = "3", description = "Rounds, each every batch on both engines; medians are reported (default ${DEFAULT-VALUE}).")
    int rounds;

    @Option(names = "--threads", paramLabel = "N", description = "Compute threads; sets handoff.scheduler.threads (default: one per core).")
    Integer threads;

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
        checkOptions();
        model.applyTo(options.overrides);
        if (threads != null) {
            options.overrides.put("handoff.scheduler.threads", Integer.toString(threads));
        }
        ObjectNode result = measure();
        SchedulerFigures figures = new SchedulerFigures(result);
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
        for (int batch : batches) {
            if (batch < 1) {
                throw new CommandLine.ParameterException(line, "--batch values must be at least 1, was " + batch);
            }
        }
        if (sharedPrefix < 0 || promptLength <= sharedPrefix) {
            throw new CommandLine.ParameterException(line, "--prompt-len (" + promptLength + ") must exceed --shared-prefix (" + sharedPrefix
                    + "), which must not be negative: every request needs a token of its own");
        }
        if (decodeTokens < 2) {
            throw new CommandLine.ParameterException(line, "--decode-tokens must be at least 2 (so requests decode), was " + decodeTokens);
        }
        if (waves < 1 || rounds < 1) {
            throw new CommandLine.ParameterException(line, "--waves and --rounds must be at least 1, were " + waves + " and " + rounds);
        }
        if (threads != null && threads < 1) {
            throw new CommandLine.ParameterException(line, "--threads must be at least 1, was " + threads);
        }
    }

    private ObjectNode measure()
    {
        Workload.Run[][] noMathRuns = new Workload.Run[batches.size()][rounds];
        Workload.Run[][] realRuns = new Workload.Run[batches.size()][rounds];
        ObjectNode root = new ObjectMapper().createObjectNode();
        boolean userPoolPages = options.overrides.containsKey("handoff.kv.pool-pages");
        int pageSize;
        try (Engine probe = Engine.start(options.source())) {
            pageSize = probe.config().config().getInt("handoff.kv.page-size");
        }
        for (int r = 0; r < rounds; r++) {
            for (int b = 0; b < batches.size(); b++) {
                int batch = batches.get(b);
                Workload workload = new Workload(batch * waves, promptLength, sharedPrefix, decodeTokens, SEED + 1000L * r + b);
                try (Engine engine = Engine.start(sizedFor(batch, pageSize, userPoolPages));
                        ComputeEngine real = ComputeEngine.create(engine, FaultInjector.NONE);
                        ComputeEngine noMath = ComputeEngine.createWithRunner(engine, FaultInjector.NONE, runner -> new FixedLogitsModel(runner.config()))) {
                    int vocab = real.model().vocabSize();
                    // The shared prefix into each radix cache, and the JIT: a no-math step is so short that a run of a few
                    // hundred steps would otherwise time interpreted code, so it warms up for a fixed number of steps.
                    Workload warmUp = new Workload(Math.min(batch, 16), promptLength, sharedPrefix, decodeTokens, SEED - 1 - b);
                    for (long steps = 0; steps < WARM_UP_STEPS; ) {
                        steps += warmUp.run(noMath.scheduler(), "warmup-nomath", vocab).steps();
                    }
                    warmUp.run(real.scheduler(), "warmup-real", vocab);
                    noMathRuns[b][r] = workload.run(noMath.scheduler(), "nomath", vocab);
                    realRuns[b][r] = workload.run(real.scheduler(), "real", vocab);
                    real.scheduler().checkInvariants();
                    noMath.scheduler().checkInvariants();
                    if (r == 0 && b == 0) {
                        describe(root, engine, real);
                    }
                }
            }
        }
        ArrayNode rows = root.putArray("results");
        for (int b = 0; b < batches.size(); b++) {
            double schedulerMicros = median(noMathRuns[b], Workload.Run::microsPerStep);
            double modelMicros = median(realRuns[b], Workload.Run::microsPerStep);
            ObjectNode row = rows.addObject();
            row.put("batch", batches.get(b));
            row.put("scheduler_us_per_step", round(schedulerMicros));
            row.put("model_step_us", round(modelMicros));
            row.put("overhead_fraction", round(schedulerMicros / modelMicros));
            row.put("no_math_tokens_per_step", round(median(noMathRuns[b], Workload.Run::tokensPerStep)));
            row.put("model_tokens_per_step", round(median(realRuns[b], Workload.Run::tokensPerStep)));
            row.put("requests", batches.get(b) * waves);
            row.put("steps_per_run", realRuns[b][0].steps());
            row.put("cached_prompt_fraction", round(realRuns[b][0].cachedPromptFraction()));
        }
        return root;
    }

    /**
     * The configuration for one batch size: at most {@code batch} running, the rest waiting, and (unless the user set
     * {@code handoff.kv.pool-pages}) a pool that never makes admission wait: every running request's pages twice over,
     * for the radix cache's suffixes, plus the shared prefix.
     */
    private ConfigSource sizedFor(int batch, int pageSize, boolean userPoolPages)
    {
        options.overrides.put("handoff.scheduler.max-running-requests", Integer.toString(batch));
        options.overrides.put("handoff.scheduler.max-queued-requests", Integer.toString(Math.max(1024, batch * waves)));
        if (!userPoolPages) {
            int pages = 2 * batch * Math.ceilDiv(promptLength + decodeTokens, pageSize) + Math.ceilDiv(sharedPrefix, pageSize) + 64;
            options.overrides.put("handoff.kv.pool-pages", Integer.toString(Math.max(4096, pages)));
        }
        return options.source();
    }

    private void describe(ObjectNode root, Engine engine, ComputeEngine real)
    {
        var config = engine.config().config();
        root.put("model", real.model().name());
        root.put("attention", real.attentionId());
        root.put("threads", config.getInt("handoff.scheduler.threads") == 0 ? Runtime.getRuntime().availableProcessors()
                : config.getInt("handoff.scheduler.threads"));
        root.put("overlap", config.getBoolean("handoff.scheduler.overlap"));
        root.put("page_size", config.getInt("handoff.kv.page-size"));
        root.put("prompt_len", promptLength);
        root.put("shared_prefix", sharedPrefix);
        root.put("decode_tokens", decodeTokens);
        root.put("waves", waves);
        root.put("rounds", rounds);
        root.put("no_math_model", "fixed logits, no KV writes: the scheduler's work around the model is all that is timed");
    }

    private static double median(Workload.Run[] runs, ToDoubleFunction<Workload.Run> figure)
    {
        double[] values = new double[runs.length];
        for (int i = 0; i < runs.length; i++) {
            values[i] = figure.applyAsDouble(runs[i]);
        }
        Arrays.sort(values);
        int n = values.length;
        return n % 2 == 1 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
    }

    /** Four significant digits: a small fraction must not round to 0. */
    private static double round(double value)
    {
        return Double.isFinite(value) && value != 0 ? new BigDecimal(value).round(new MathContext(4)).doubleValue() : value;
    }
}
