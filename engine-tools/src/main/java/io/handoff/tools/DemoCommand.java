package io.handoff.tools;

import io.handoff.cli.ModelOption;
import io.handoff.cli.DurationConverter;
import io.handoff.cli.EngineOptions;
import io.handoff.cli.TuningOptions;
import io.handoff.cli.Main;
import io.handoff.cli.ModelPathOption;
import io.handoff.core.config.ConfigSource;
import io.handoff.core.runtime.Engine;
import io.handoff.demo.DemoReport;
import io.handoff.demo.DemoRun;
import io.handoff.demo.DemoSettings;
import io.handoff.demo.NodeLauncher;
import io.handoff.demo.ProcessNode;
import io.handoff.demo.StartupFailure;
import io.handoff.demo.ThreadNode;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Spec;

import java.io.IOException;
import java.io.PrintWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.Callable;
import java.util.stream.Stream;

@Command(name = "demo", mixinStandardHelpOptions = true,
        description = {"Check PD output against colocated: run prefill and decode servers (one each by default, --prefill/--decode) and a "
                + "router on this machine as processes of the distribution, send a few-shot workload through the router, and check every "
                + "output against a colocated engine in this process, bit for bit.",
                "Reports completed and failed requests, exact match, TTFT and inter-token latency (next to the colocated engine's), "
                        + "KV bytes transferred, GB/s and bytes per prompt token (next to the KV shape the prefill reports), KV pages leaked, and the early-send decision. "
                        + "Exit 0 when the run completed (the report says whether the outputs matched), 1 when it could not run."})
final class DemoCommand
        implements Callable<Integer>
{
    // Idle servers stop at once on SIGTERM; this bounds an interrupted run, whose servers still have requests in flight.
    private static final Duration STOP_GRACE = Duration.ofSeconds(10);

    @Mixin
    EngineOptions options;

    @Option(names = "--json", description = "Print the report as one JSON object on stdout.")
    boolean json;

    @Option(names = "--requests", defaultValue = "64", paramLabel = "N", description = "Requests to send (default ${DEFAULT-VALUE}).")
    int requests;

    @Option(names = "--concurrency", defaultValue = "16", paramLabel = "N", description = "Requests in flight at once (default ${DEFAULT-VALUE}).")
    int concurrency;

    @Option(names = "--max-new-tokens", defaultValue = "32", paramLabel = "N",
            description = "Tokens each request generates (greedy, ignore_eos; default ${DEFAULT-VALUE}).")
    int maxNewTokens;

    @Option(names = "--seed", defaultValue = "0", paramLabel = "N", description = "Seed of the generated questions (default ${DEFAULT-VALUE}).")
    long seed;

    @Option(names = "--transfer-backend", defaultValue = "mooncake", paramLabel = "ID",
            description = "KV transfer backend (mooncake, mori, nixl, ...); sets " + DemoSettings.TRANSFER_BACKEND_KEY + " (default ${DEFAULT-VALUE}).")
    String transferBackend;

    @Mixin
    TuningOptions tuning;

    @Mixin
    ModelOption model;

    @Mixin
    ModelPathOption modelPath;

    // defaults as initial values, not defaultValue: picocli applies a defaultValue after parsing, over the old spelling's
    @Option(names = "--prefill", paramLabel = "N", description = "Prefill servers (default ${DEFAULT-VALUE}).")
    int prefills = 1;

    @Option(names = "--decode", paramLabel = "N", description = "Decode servers (default ${DEFAULT-VALUE}).")
    int decodes = 1;

    /** The old spelling of --prefill. */
    @Option(names = "--prefills", hidden = true, paramLabel = "N")
    void prefills(int n)
    {
        prefills = n;
    }

    /** The old spelling of --decode. */
    @Option(names = "--decodes", hidden = true, paramLabel = "N")
    void decodes(int n)
    {
        decodes = n;
    }

    @Option(names = "--prefill-tp", paramLabel = "T", description = "Tensor-parallel ranks of each prefill server, 1..8 (default: "
            + "handoff.parallel.tensor-size); the colocated reference keeps the configured size, so the output also checks the layouts.")
    int prefillTensorParallel;

    @Option(names = "--decode-tp", paramLabel = "T", description = "Tensor-parallel ranks of each decode server, 1..8 (default: "
            + "handoff.parallel.tensor-size).")
    int decodeTensorParallel;

    @Option(names = "--prefill-dp", paramLabel = "D", description = "Data-parallel attention ranks of each prefill server, 1..8 (MLA models).")
    int prefillDataParallel;

    @Option(names = "--decode-dp", paramLabel = "D", description = "Data-parallel attention ranks of each decode server, 1..8 (MLA models): "
            + "each decode rank holds its own requests' latents and receives only those.")
    int decodeDataParallel;

    @Option(names = "--in-process", description = "Run the servers as threads of this JVM instead of processes of the distribution.")
    boolean inProcess;

    @Option(names = "--startup-timeout", defaultValue = "120s", paramLabel = "DURATION", converter = DurationConverter.class,
            description = "How long each group of servers may take to become healthy (default ${DEFAULT-VALUE}).")
    Duration startupTimeout;

    @Option(names = "--request-timeout", defaultValue = "300s", paramLabel = "DURATION", converter = DurationConverter.class,
            description = "How long one request may take (default ${DEFAULT-VALUE}).")
    Duration requestTimeout;

    @Option(names = "--colocated-stand-ins", hidden = true,
            description = "Run serve --role colocated in place of each prefill and decode, without a router (tests the demo itself).")
    boolean colocatedStandIns;

    @Spec
    CommandSpec spec;

    @Override
    public Integer call()
            throws Exception
    {
        modelPath.applyTo(options.overrides);
        String attention = tuning.attention;
        tuning.attention = null;
        tuning.applyTo(options.overrides);
        DemoSettings settings = settings(attention);
        PrintWriter err = spec.commandLine().getErr();
        Optional<Path> logDir = settings.inProcess() ? Optional.empty() : Optional.of(Files.createTempDirectory("handoff-demo-"));
        NodeLauncher launcher = logDir.isPresent() ? processLauncher(logDir.get()) : ThreadNode.launcher(Main::run);
        ConfigSource source = options.source();
        ConfigSource reference = new ConfigSource(source.file(), settings.effectiveOverrides(), System.getenv());
        DemoRun run = new DemoRun(settings, reference, launcher, logDir.map(Path::toString), line -> {
            err.println("handoff demo: " + line);
            err.flush();
        });
        DemoReport report;
        try {
            report = run.run();
        }
        catch (StartupFailure e) {
            err.println("handoff demo: " + e.getMessage());
            err.flush();
            return Main.FAILURE;
        }
        finally {
            // A run that failed before any server started leaves nothing to read there.
            if (logDir.isPresent()) {
                try (Stream<Path> files = Files.list(logDir.get())) {
                    if (files.findAny().isEmpty()) {
                        Files.delete(logDir.get());
                    }
                }
            }
        }
        PrintWriter out = spec.commandLine().getOut();
        out.print(json ? report.toJson().toPrettyString() + System.lineSeparator() : report.toTable());
        out.flush();
        return report.completed() == 0 ? Main.FAILURE : Main.OK;
    }

    private DemoSettings settings(String attention)
    {
        try {
            return new DemoSettings(requests, seed, maxNewTokens, concurrency, prefills, decodes, transferBackend, model.name(),
                    Optional.ofNullable(attention), Optional.ofNullable(options.configFile), new LinkedHashMap<>(options.overrides), inProcess,
                    colocatedStandIns, DurationConverter.positive("--startup-timeout", startupTimeout), DurationConverter.positive("--request-timeout", requestTimeout),
                    STOP_GRACE, prefillTensorParallel, decodeTensorParallel, prefillDataParallel, decodeDataParallel);
        }
        catch (IllegalArgumentException e) {
            throw new ParameterException(spec.commandLine(), e.getMessage());
        }
    }


    /** The distribution's own launcher, with the JDK running this demo. */
    private NodeLauncher processLauncher(Path logDir)
            throws IOException
    {
        Path launcher = Engine.home().resolve("bin").resolve("handoff");
        if (!Files.isExecutable(launcher)) {
            Files.deleteIfExists(logDir);
            throw new ParameterException(spec.commandLine(), "no launcher at " + launcher + ": run the demo from a distribution (bin/handoff demo), "
                    + "or pass --in-process");
        }
        return ProcessNode.launcher(List.of(launcher.toString()), Map.of("JAVA_HOME", System.getProperty("java.home")), logDir);
    }
}
