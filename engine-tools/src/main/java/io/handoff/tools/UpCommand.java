package io.handoff.tools;

import io.handoff.cli.DurationConverter;
import io.handoff.cli.EngineOptions;
import io.handoff.cli.Main;
import io.handoff.cli.ModelOption;
import io.handoff.cli.ModelPathOption;
import io.handoff.cli.ParentWatch;
import io.handoff.cli.TransferBackendOption;
import io.handoff.cli.TuningOptions;
import io.handoff.core.runtime.Engine;
import io.handoff.core.runtime.KvSizing;
import io.handoff.core.runtime.ModelSource;
import io.handoff.demo.Cluster;
import io.handoff.demo.FreePorts;
import io.handoff.demo.HealthProbe;
import io.handoff.demo.Node;
import io.handoff.demo.NodeLauncher;
import io.handoff.demo.NodeSpec;
import io.handoff.demo.ProcessNode;
import io.handoff.demo.StartupFailure;
import io.handoff.up.HostMemory;
import io.handoff.up.HostPlan;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Spec;

import java.io.PrintWriter;
import java.net.http.HttpClient;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.Callable;
import java.util.concurrent.atomic.AtomicBoolean;

@Command(name = "up", mixinStandardHelpOptions = true,
        description = {"Run prefill and decode servers and a router for one model on this host, until SIGTERM or Ctrl-C.",
                "Splits the cores between the servers and fits each KV pool to the host's free memory (and says so), then prints the "
                        + "router's URL. SIGTERM or Ctrl-C stops the router, then the servers, each gracefully; if up itself is killed, its "
                        + "servers notice and stop on their own."})
final class UpCommand
        implements Callable<Integer>
{
    // more than a server's own grace period (handoff.server.grace-period): an idle server stops in well under a second
    private static final Duration STOP_GRACE = Duration.ofSeconds(40);
    private static final int MAX_SERVERS = 16;

    @Mixin
    EngineOptions options;

    @Mixin
    ModelOption model;

    @Mixin
    ModelPathOption modelPath;

    @Mixin
    TuningOptions tuning;

    @Mixin
    TransferBackendOption transferBackend;

    @Option(names = "--prefill", defaultValue = "1", paramLabel = "N", description = "Prefill servers (default ${DEFAULT-VALUE}).")
    int prefills;

    @Option(names = "--decode", defaultValue = "1", paramLabel = "M", description = "Decode servers (default ${DEFAULT-VALUE}).")
    int decodes;

    @Option(names = "--prefill-tp", paramLabel = "T", description = "Tensor-parallel ranks of each prefill server, 1..8 (default: "
            + "handoff.parallel.tensor-size).")
    int prefillTensorParallel;

    @Option(names = "--decode-tp", paramLabel = "T", description = "Tensor-parallel ranks of each decode server, 1..8 (default: "
            + "handoff.parallel.tensor-size); a prefill and a decode of different sizes pair head slice by head slice.")
    int decodeTensorParallel;

    @Option(names = "--port", defaultValue = "30000", paramLabel = "PORT", description = "The router's port on 127.0.0.1 (default ${DEFAULT-VALUE}); "
            + "the servers take free ports.")
    int port;

    @Option(names = "--startup-timeout", defaultValue = "300s", paramLabel = "DURATION", converter = DurationConverter.class,
            description = "How long the servers may take to load the model and become healthy (default ${DEFAULT-VALUE}).")
    Duration startupTimeout;

    @Option(names = "--log-dir", paramLabel = "DIR", description = "Where each process writes its log (default: a new folder under the temporary directory).")
    Path logDir;

    @Spec
    CommandSpec spec;

    @Override
    public Integer call()
            throws Exception
    {
        if (prefills < 1 || prefills > MAX_SERVERS || decodes < 1 || decodes > MAX_SERVERS) {
            throw new ParameterException(spec.commandLine(), "--prefill and --decode must be in 1.." + MAX_SERVERS + ", got " + prefills + " and " + decodes);
        }
        if (prefillTensorParallel < 0 || prefillTensorParallel > 8 || decodeTensorParallel < 0 || decodeTensorParallel > 8) {
            throw new ParameterException(spec.commandLine(), "--prefill-tp and --decode-tp must be in 1..8, got " + prefillTensorParallel + " and "
                    + decodeTensorParallel);
        }
        if (port < 1 || port > 65535) {
            throw new ParameterException(spec.commandLine(), "--port must be in 1..65535, got " + port);
        }
        Path launcherPath = Engine.home().resolve("bin").resolve("handoff");
        if (!Files.isExecutable(launcherPath)) {
            throw new IllegalStateException("no launcher at " + launcherPath + ": run handoff up from a distribution (bin/handoff up)");
        }
        Map<String, String> overrides = new LinkedHashMap<>(options.overrides);
        model.applyTo(overrides);
        modelPath.applyTo(overrides);
        transferBackend.applyTo(overrides);
        Integer givenThreads = tuning.threads;
        tuning.threads = null;
        tuning.applyTo(overrides);
        PrintWriter err = spec.commandLine().getErr();

        HostPlan plan = plan(overrides, givenThreads == null ? 0 : givenThreads);
        overrides.put("handoff.scheduler.threads", Integer.toString(plan.threads()));
        plan.poolBytes().ifPresent(bytes -> overrides.put("handoff.kv.pool-memory", Long.toString(bytes)));
        plan.notes().forEach(note -> say(err, note));

        Path logs = logDir != null ? Files.createDirectories(logDir) : Files.createTempDirectory("handoff-up-");
        NodeLauncher launcher = ProcessNode.launcher(List.of(launcherPath.toString()),
                Map.of("JAVA_HOME", System.getProperty("java.home"), ParentWatch.PARENT_PID, Long.toString(ProcessHandle.current().pid())), logs);
        List<String> arguments = arguments(overrides);
        AtomicBoolean stopping = new AtomicBoolean();
        Runtime.getRuntime().addShutdownHook(Thread.ofPlatform().unstarted(() -> stopping.set(true)));
        say(err, "logs in " + logs);
        Cluster cluster;
        try (HttpClient client = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).connectTimeout(Duration.ofSeconds(2)).build()) {
            try {
                cluster = FreePorts.retrying(prefills + decodes, line -> say(err, line), ports -> Cluster.start(stages(ports, arguments), launcher,
                        HealthProbe.http(client), startupTimeout, STOP_GRACE, line -> say(err, line)));
            }
            catch (StartupFailure e) {
                say(err, e.getMessage());
                return Main.FAILURE;
            }
        }
        PrintWriter out = spec.commandLine().getOut();
        out.println("handoff up: serving at http://127.0.0.1:" + port + " (OpenAI API under /v1) through a router to " + prefills + " prefill and "
                + decodes + " decode server" + (decodes == 1 ? "" : "s") + "; Ctrl-C stops them all");
        out.flush();
        return watch(cluster, stopping, err);
    }

    /** The servers' threads and pool, from the model's KV geometry and this host. */
    private HostPlan plan(Map<String, String> overrides, int givenThreads)
    {
        try (Engine engine = Engine.start(options.source().withOverrides(overrides));
                ModelSource source = ModelSource.open(engine.config().config())) {
            var config = engine.config().config();
            KvSizing kv = KvSizing.of(config, source);
            boolean poolGiven = config.getBytes("handoff.kv.pool-memory") > 0 || userSet(engine, "handoff.kv.pool-pages");
            say(spec.commandLine().getErr(), "model " + source.config().name() + ": " + kv.bytesPerToken() + " bytes of KV per token ("
                    + kv.dtype().name().toLowerCase(java.util.Locale.ROOT) + ")");
            return HostPlan.of(prefills + decodes, Runtime.getRuntime().availableProcessors(), givenThreads, poolGiven, kv.poolBytes(),
                    kv.geometry().bytesPerPage(), HostMemory.available(), HostMemory.modelBytes(config.getString(ModelSource.PATH_KEY)));
        }
    }

    private static boolean userSet(Engine engine, String key)
    {
        return engine.config().effectiveValues().stream()
                .anyMatch(value -> value.path().equals(key) && !value.origin().startsWith("reference"));
    }

    private List<String> arguments(Map<String, String> overrides)
    {
        List<String> arguments = new ArrayList<>();
        Optional.ofNullable(options.configFile).ifPresent(file -> {
            arguments.add("--config");
            arguments.add(file.toAbsolutePath().toString());
        });
        overrides.forEach((key, value) -> arguments.add("-D" + key + "=" + value));
        return arguments;
    }

    private List<List<NodeSpec>> stages(List<Integer> ports, List<String> config)
    {
        List<NodeSpec> servers = new ArrayList<>();
        List<String> router = new ArrayList<>(List.of("router", "--host", "127.0.0.1", "--port", Integer.toString(port)));
        for (int i = 0; i < prefills + decodes; i++) {
            boolean prefill = i < prefills;
            String role = prefill ? "prefill" : "decode";
            int count = prefill ? prefills : decodes;
            String name = count == 1 ? role : role + "-" + (prefill ? i : i - prefills);
            List<String> arguments = new ArrayList<>(List.of("serve", "--role", role, "--host", "127.0.0.1", "--port", Integer.toString(ports.get(i))));
            arguments.addAll(config);
            int ranks = prefill ? prefillTensorParallel : decodeTensorParallel;
            if (ranks > 0) {
                // after the shared overrides: this side's layout wins
                arguments.add("-Dhandoff.parallel.tensor-size=" + ranks);
            }
            NodeSpec node = new NodeSpec(name, prefill ? NodeSpec.Role.PREFILL : NodeSpec.Role.DECODE, ports.get(i), arguments);
            servers.add(node);
            router.addAll(List.of(prefill ? "--prefill" : "--decode", node.url().toString()));
        }
        router.addAll(config);
        return List.of(servers, List.of(new NodeSpec("router", NodeSpec.Role.ROUTER, port, router)));
    }

    /** Until SIGTERM (the cluster's own hook stops the servers) or a server that ends by itself, which stops the rest. */
    private static int watch(Cluster cluster, AtomicBoolean stopping, PrintWriter err)
            throws InterruptedException
    {
        while (true) {
            for (Node node : cluster.nodes()) {
                Optional<String> ended = node.ended();
                if (ended.isPresent() && !stopping.get()) {
                    List<String> tail = node.logTail(Cluster.LOG_LINES);
                    say(err, node.spec().name() + " " + ended.get() + "; stopping the others. The last lines of " + node.logLocation() + ":");
                    tail.forEach(line -> err.println("  | " + line));
                    err.flush();
                    cluster.close();
                    return Main.FAILURE;
                }
            }
            // watching child processes: a poll a second, not a timing assumption
            Thread.sleep(Duration.ofSeconds(1));
        }
    }

    private static void say(PrintWriter err, String line)
    {
        err.println("handoff up: " + line);
        err.flush();
    }
}
