package io.handoff.tools;

import io.handoff.chaos.ChaosProgress;
import io.handoff.chaos.ChaosReport;
import io.handoff.chaos.ChaosRun;
import io.handoff.chaos.ChaosSettings;
import io.handoff.cli.ModelOption;
import io.handoff.cli.DurationConverter;
import io.handoff.cli.EngineOptions;
import io.handoff.cli.Main;
import io.handoff.cli.ModelPathOption;
import io.handoff.cli.TuningOptions;
import io.handoff.core.config.ConfigSource;
import io.handoff.core.runtime.Engine;
import io.handoff.demo.DemoSettings;
import io.handoff.demo.ProcessNode;
import io.handoff.demo.StartupFailure;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Spec;

import java.io.PrintWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.Callable;

@Command(name = "chaos", mixinStandardHelpOptions = true,
        description = {"A bounded soak: start a prefill (or several) and a decode with fault rules that fail, stall or corrupt a fraction of "
                + "the KV transfers, and a router; send a stream of requests of which a fraction is aborted at random phases (before "
                + "bootstrap, during the transfer, during decode; by /abort_request or by closing the connection); optionally kill and "
                + "restart a server once; then check every output against a colocated engine in this process, bit for bit, and what "
                + "the servers still hold once idle.",
                "Exit 0 when nothing diverged, nothing hung, no page leaked or stayed held without proof, no process grew after warm-up "
                        + "and every kill recovered; 1 otherwise or when the soak could not run."})
final class ChaosCommand
        implements Callable<Integer>
{
    private static final Duration STOP_GRACE = Duration.ofSeconds(10);

    @Mixin
    EngineOptions options;

    @Option(names = "--json", description = "Print the report as one JSON object on stdout.")
    boolean json;

    @Option(names = "--requests", defaultValue = "300", paramLabel = "N", description = "Requests to send (default ${DEFAULT-VALUE}).")
    int requests;

    @Option(names = "--concurrency", defaultValue = "8", paramLabel = "N", description = "Requests in flight at once (default ${DEFAULT-VALUE}).")
    int concurrency;

    @Option(names = "--max-new-tokens", defaultValue = "8", paramLabel = "N",
            description = "Tokens each request generates (greedy, ignore_eos; default ${DEFAULT-VALUE}).")
    int maxNewTokens;

    @Option(names = "--seed", defaultValue = "1", paramLabel = "N",
            description = "Seed of the questions, of which requests are aborted and how, and of which rooms the faults choose (default ${DEFAULT-VALUE}).")
    long seed;

    @Option(names = "--abort-rate", defaultValue = "0.2", paramLabel = "F", description = "Fraction of requests the client aborts (default ${DEFAULT-VALUE}).")
    double abortRate;

    @Option(names = "--fail-rate", defaultValue = "0.05", paramLabel = "F",
            description = "Fraction of transfers given a fault, split evenly: failed before their first page, stalled before each chunk "
                    + "(--stall), or with one bit of a landed page flipped (default ${DEFAULT-VALUE}).")
    double failRate;

    // defaults as initial values, not defaultValue: picocli applies a defaultValue after parsing, over the old spelling's
    @Option(names = "--stall", paramLabel = "DURATION", converter = DurationConverter.class,
            description = "How long a stalled transfer waits before each chunk; keep it under the room deadlines (default 200ms).")
    Duration stall = Duration.ofMillis(200);

    /** The old spelling of --stall, in milliseconds. */
    @Option(names = "--stall-ms", hidden = true, paramLabel = "MS")
    void stallMillis(long millis)
    {
        stall = Duration.ofMillis(millis);
    }

    @Option(names = "--transfer-backend", defaultValue = "mooncake", paramLabel = "ID",
            description = "KV transfer backend (mooncake, mori, nixl, ...); sets " + DemoSettings.TRANSFER_BACKEND_KEY + " (default ${DEFAULT-VALUE}).")
    String transferBackend;

    @Mixin
    ModelOption model;

    @Mixin
    ModelPathOption modelPath;

    @Mixin
    TuningOptions tuning;

    @Option(names = "--prefill", paramLabel = "N", description = "Prefill servers (default ${DEFAULT-VALUE}; the decode is one).")
    int prefills = 1;

    /** The old spelling of --prefill. */
    @Option(names = "--prefills", hidden = true, paramLabel = "N")
    void prefills(int n)
    {
        prefills = n;
    }

    @Option(names = "--kill-restart", defaultValue = "none", paramLabel = "ROLE",
            description = "Kill (SIGKILL) this server once, after a third of the requests, and start it again: none, prefill or decode "
                    + "(default ${DEFAULT-VALUE}).")
    String killRestart;

    @Option(names = "--duration", paramLabel = "DURATION", converter = DurationConverter.class,
            description = "Send requests until this much time has passed (30s, 2m, 1h), instead of --requests: a long soak. Every process is "
                    + "sampled every 5 s (resident memory, heap after collection, threads, open files, free and quarantined pages); "
                    + "growth after warm-up beyond the documented thresholds fails the soak.")
    Duration duration;

    @Option(names = "--kill-every", paramLabel = "DURATION", converter = DurationConverter.class,
            description = "During the traffic, kill (SIGKILL) a random prefill or decode this often (20s, 1m) and start it again; the "
                    + "report says how long each kill took to recover (until a request sent after it completed).")
    Duration killEvery;

    @Option(names = "--kill-router", description = "With --kill-every, the router may be picked too.")
    boolean killRouter;

    @Option(names = "--out", paramLabel = "DIR", description = "Write the report (chaos.json) and the resource chart (resources.svg) to this folder.")
    Path out;

    @Option(names = "--request-timeout", defaultValue = "60s", paramLabel = "DURATION", converter = DurationConverter.class,
            description = "A request without an outcome by then is counted hung (default ${DEFAULT-VALUE}).")
    Duration requestTimeout;

    /** The old spelling of --request-timeout, in seconds. */
    @Option(names = "--request-deadline", hidden = true, paramLabel = "SECONDS")
    void requestDeadline(int seconds)
    {
        requestTimeout = Duration.ofSeconds(seconds);
    }

    @Option(names = "--settle-timeout", defaultValue = "30s", paramLabel = "DURATION", converter = DurationConverter.class,
            description = "How long the servers may take after the last request to go idle and give every page back (default ${DEFAULT-VALUE}).")
    Duration settleTimeout;

    @Option(names = "--startup-timeout", defaultValue = "120s", paramLabel = "DURATION", converter = DurationConverter.class,
            description = "How long each group of servers may take to become healthy (default ${DEFAULT-VALUE}).")
    Duration startupTimeout;

    @Spec
    CommandSpec spec;

    @Override
    public Integer call()
            throws Exception
    {
        modelPath.applyTo(options.overrides);
        tuning.applyTo(options.overrides);
        ChaosSettings settings = settings();
        PrintWriter err = spec.commandLine().getErr();
        Path launcher = Engine.home().resolve("bin").resolve("handoff");
        if (!Files.isExecutable(launcher)) {
            throw new ParameterException(spec.commandLine(), "no launcher at " + launcher + ": run the soak from a distribution (bin/handoff chaos)");
        }
        Path logDir = Files.createTempDirectory("handoff-chaos-");
        err.println("handoff chaos: server logs: " + logDir);
        ConfigSource source = options.source();
        ConfigSource reference = new ConfigSource(source.file(), settings.demo().effectiveOverrides(), System.getenv());
        boolean terminal = ChaosProgress.stderrIsTerminal();
        ChaosRun run = new ChaosRun(settings, reference,
                ProcessNode.launcher(List.of(launcher.toString()), Map.of("JAVA_HOME", System.getProperty("java.home")), logDir),
                line -> {
                    err.println("handoff chaos: " + line);
                    err.flush();
                },
                total -> new ChaosProgress(err, terminal, total));
        ChaosReport report;
        try {
            report = run.run();
        }
        catch (StartupFailure e) {
            err.println("handoff chaos: " + e.getMessage());
            err.flush();
            return Main.FAILURE;
        }
        PrintWriter out = spec.commandLine().getOut();
        out.print(json ? report.toJson().toPrettyString() + System.lineSeparator() : report.toText());
        out.flush();
        if (settings.out().isPresent()) {
            Path folder = Files.createDirectories(settings.out().get());
            Files.writeString(folder.resolve("chaos.json"), report.toJson().toPrettyString() + System.lineSeparator());
            Files.writeString(folder.resolve("resources.svg"), report.chart());
            err.println("handoff chaos: wrote " + folder.resolve("chaos.json") + " and " + folder.resolve("resources.svg"));
        }
        if (!report.clean()) {
            err.println("handoff chaos: not clean (divergent " + report.divergent().size() + ", hung " + report.count(io.handoff.chaos.RequestOutcome.Kind.HUNG)
                    + ", pages leaked " + (report.leakKnown() ? report.leakedPages() : "unknown") + ", held without proof " + report.heldWithoutProofPages()
                    + ", unsettled rooms " + report.unsettled() + ", growth " + report.growth().size() + ", kills recovered " + report.recoveredKills()
                    + " of " + report.kills().size() + "); server logs: " + logDir);
            err.flush();
            return Main.FAILURE;
        }
        return Main.OK;
    }

    private ChaosSettings settings()
    {
        try {
            return new ChaosSettings(requests, concurrency, maxNewTokens, seed, abortRate, failRate, prefills, transferBackend, model.name(),
                    Optional.ofNullable(options.configFile), new LinkedHashMap<>(options.overrides), killRestart(), DurationConverter.positive("--request-timeout", requestTimeout),
                    stall, DurationConverter.positive("--startup-timeout", startupTimeout), DurationConverter.positive("--settle-timeout", settleTimeout),
                    STOP_GRACE, Optional.ofNullable(duration).map(d -> DurationConverter.positive("--duration", d)), Optional.ofNullable(killEvery).map(d -> DurationConverter.positive("--kill-every", d)),
                    killRouter, Optional.ofNullable(out));
        }
        catch (IllegalArgumentException e) {
            throw new ParameterException(spec.commandLine(), e.getMessage());
        }
    }

    private ChaosSettings.KillRestart killRestart()
    {
        try {
            return ChaosSettings.KillRestart.valueOf(killRestart.toUpperCase(java.util.Locale.ROOT));
        }
        catch (IllegalArgumentException e) {
            throw new IllegalArgumentException("--kill-restart must be none, prefill or decode, got '" + killRestart + "'");
        }
    }
}
