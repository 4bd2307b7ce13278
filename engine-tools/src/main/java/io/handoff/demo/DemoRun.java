package io.handoff.demo;

import io.handoff.core.config.ConfigSource;
import io.handoff.core.fault.FaultInjector;
import io.handoff.core.runtime.ComputeEngine;
import io.handoff.core.runtime.Engine;
import io.handoff.core.runtime.ModelSource;

import java.net.URI;
import java.net.http.HttpClient;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.function.Consumer;

import static java.util.Objects.requireNonNull;

/**
 * One run of {@code handoff demo}: start the servers, send the workload through the router, read the
 * servers' figures once they are idle, stop them, run the same workload on a colocated engine in this
 * process, and compare.
 */
public final class DemoRun
{
    private static final Duration SETTLE_TIMEOUT = Duration.ofSeconds(10);
    private static final int CRASH_LOG_LINES = 5;

    private final DemoSettings settings;
    private final ConfigSource source;
    private final NodeLauncher launcher;
    private final Optional<String> logDir;
    private final Consumer<String> progress;

    /**
     * @param source the configuration of the colocated reference: the demo's, with {@link DemoSettings#effectiveOverrides()}
     * @param logDir where the launcher writes the servers' logs, if it does
     * @param progress hears one line per step, for people (stderr)
     */
    public DemoRun(DemoSettings settings, ConfigSource source, NodeLauncher launcher, Optional<String> logDir, Consumer<String> progress)
    {
        this.settings = requireNonNull(settings, "settings is null");
        this.source = requireNonNull(source, "source is null");
        this.launcher = requireNonNull(launcher, "launcher is null");
        this.logDir = requireNonNull(logDir, "logDir is null");
        this.progress = requireNonNull(progress, "progress is null");
    }

    /** Throws {@link StartupFailure} when the servers could not be brought up; everything started is stopped by then. */
    public DemoReport run()
            throws StartupFailure, InterruptedException
    {
        // Validates the configuration once, before any server starts, and fixes the model and attention the report names.
        try (Engine engine = Engine.start(source);
                HttpClient client = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).connectTimeout(Duration.ofSeconds(2)).build()) {
            String modelPath = engine.config().config().getString(ModelSource.PATH_KEY);
            String model = modelPath.isBlank() ? engine.config().config().getString(DemoSettings.MODEL_KEY)
                    : String.valueOf(java.nio.file.Path.of(modelPath).getFileName());
            String attention = engine.config().config().getString(DemoSettings.ATTENTION_KEY);
            Workload workload = Workload.fewShot(settings.requests(), settings.seed());
            List<String> prompts = workload.prompts();
            List<String> notes = new ArrayList<>();
            logDir.ifPresent(dir -> progress.accept("server logs: " + dir));

            List<RequestResult> disaggregated;
            ServerFigures figures;
            Started started = FreePorts.retrying(settings.servers(), progress, ports -> {
                DemoSettings.Plan laidOut = settings.plan(ports);
                return new Started(laidOut, Cluster.start(laidOut.stages(), launcher, HealthProbe.http(client), settings.startupTimeout(),
                        settings.stopGrace(), progress));
            });
            DemoSettings.Plan plan = started.plan();
            try (Cluster cluster = started.cluster()) {
                progress.accept("sending a warm-up request, then " + prompts.size() + " requests to " + plan.entry() + " ("
                        + settings.concurrency() + " at a time, " + settings.maxNewTokens() + " new tokens each, shared prefix "
                        + workload.sharedPrefix().length() + " bytes)");
                try (StreamingClient streaming = new StreamingClient(plan.entry(), settings.requestTimeout())) {
                    RequestResult warmUp = streaming.generate(-1, workload.warmUpPrompt(), settings.maxNewTokens());
                    warmUp.error().ifPresent(error -> notes.add("the warm-up request failed: " + error));
                    disaggregated = streaming.run(prompts, settings.maxNewTokens(), settings.concurrency());
                }
                noteCrashes(cluster, notes);
                figures = new ServerScrape(client, SETTLE_TIMEOUT, notes::add).collect(urls(plan, NodeSpec.Role.PREFILL), urls(plan, NodeSpec.Role.DECODE));
                progress.accept(settings.inProcess() ? "the servers in this process stop when it exits" : "stopping the servers");
            }

            progress.accept("running the same requests on a colocated " + model + " engine in this process");
            List<RequestResult> colocated;
            try (ComputeEngine compute = ComputeEngine.create(engine, FaultInjector.NONE)) {
                ColocatedReference reference = new ColocatedReference(compute.scheduler(), compute.tokenizer());
                reference.run(List.of(workload.warmUpPrompt()), settings.maxNewTokens(), 1);
                colocated = reference.run(prompts, settings.maxNewTokens(), settings.concurrency());
            }
            DemoReport.Setup setup = new DemoReport.Setup(settings.inProcess(), settings.colocatedStandIns(), settings.prefills(), settings.decodes(), settings.concurrency(),
                    settings.maxNewTokens(), model, attention, settings.transferBackend(), settings.prefillDataParallel(), settings.decodeDataParallel());
            colocated.stream().filter(result -> !result.completed()).findFirst().ifPresent(result ->
                    notes.add("the colocated reference failed too (request " + result.index() + "): " + result.error().orElseThrow()));
            return DemoReport.of(setup, disaggregated, colocated, figures, notes, logDir);
        }
    }

    private record Started(DemoSettings.Plan plan, Cluster cluster) {}

    private static List<URI> urls(DemoSettings.Plan plan, NodeSpec.Role role)
    {
        return plan.nodes(role).stream().map(NodeSpec::url).toList();
    }

    /** A server that ended during the run explains failed requests: say so, with the end of its log. */
    private static void noteCrashes(Cluster cluster, List<String> notes)
    {
        for (Node node : cluster.nodes()) {
            node.ended().ifPresent(how -> notes.add(node.spec().name() + " " + how + " during the run"
                    + node.logTail(CRASH_LOG_LINES).stream().map(line -> "\n    | " + line).reduce("", String::concat)));
        }
    }
}
