package io.handoff.cli;

import io.handoff.cluster.ClusterConfig;
import io.handoff.core.runtime.RankWorkerMain;
import io.handoff.core.runtime.Engine;
import io.handoff.http.RoleSwitcher;
import io.handoff.http.base.ServerConfig;
import org.apache.logging.log4j.LogManager;
import org.apache.logging.log4j.Logger;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Spec;

import java.io.IOException;

@Command(name = "serve", mixinStandardHelpOptions = true,
        description = {"Serve the HTTP API (SGLang /generate, OpenAI /v1/completions, /metrics, ...) until SIGTERM or Ctrl-C.",
                "On SIGTERM it stops admitting, lets in-flight requests finish within handoff.server.grace-period, aborts the rest and frees every KV page.",
                "POST /admin/role {\"role\": \"prefill\" | \"decode\" | \"colocated\"} switches a running server's role: it drains, restarts its engine "
                        + "in the new role on the same port and registers again."})
final class ServeCommand
        implements java.util.concurrent.Callable<Integer>
{
    private static final Logger log = LogManager.getLogger(ServeCommand.class);

    @Mixin
    EngineOptions options;

    @Option(names = "--role", defaultValue = "colocated", paramLabel = "ROLE",
            description = "colocated (prefill and decode in this process; default), prefill (runs prompts, sends their KV), or decode "
                    + "(receives KV, generates). Prefill and decode servers take requests from a router (handoff router).")
    String role;

    @Mixin
    ListenOptions listen;

    @Mixin
    ModelOption model;

    @Mixin
    ModelPathOption modelPath;

    @Mixin
    TuningOptions tuning;

    @Mixin
    TransferBackendOption transferBackend;

    @Option(names = "--rank", paramLabel = "R", description = "Join a tensor-parallel server as rank R (1..7) instead of serving: "
            + "with --leader, the address its rank 0 listens on (handoff.parallel.leader-host and leader-port there, with "
            + "handoff.parallel.spawn-ranks = false). The same model and configuration as the leader's; the cluster secret authenticates it.")
    Integer rank;

    @Option(names = "--leader", paramLabel = "HOST:PORT", description = "The tensor-parallel leader a --rank joins.")
    String leader;

    @Spec
    CommandSpec spec;

    @Override
    public Integer call()
            throws Exception
    {
        if (!RoleSwitcher.ROLES.contains(role)) {
            throw new ParameterException(spec.commandLine(), "unknown --role '" + role + "': expected colocated, prefill or decode");
        }
        listen.applyTo(options.overrides);
        model.applyTo(options.overrides);
        modelPath.applyTo(options.overrides);
        tuning.applyTo(options.overrides);
        transferBackend.applyTo(options.overrides);
        ParentWatch.fromEnvironment();
        if ((rank == null) != (leader == null)) {
            throw new ParameterException(spec.commandLine(), "--rank and --leader go together: a rank joins the leader at HOST:PORT");
        }
        if (rank != null) {
            if (rank < 1 || rank > 7) {
                throw new ParameterException(spec.commandLine(), "--rank must be in 1..7 (rank 0 is the leader, started without --rank), got " + rank);
            }
            return RankWorkerMain.run(options.source(), rank, leader);
        }
        Engine engine = Engine.start(options.source());
        ServingNode serving;
        ServerConfig config;
        try {
            // before the model is loaded: a bad key file should not cost the time a checkpoint takes to load
            // the one read of the secret file in this process: the transfer layer gets the same copy
            config = ServerSettings.of(engine);
            serving = ServingNode.start(engine, config, ClusterConfig.from(engine.config().config()), role);
        }
        catch (RuntimeException | IOException | InterruptedException e) {
            engine.close();
            throw e;
        }
        ListenOptions.serveUntilSignalled(config, serving.describe(), () -> {
            try {
                serving.stop();
            }
            finally {
                engine.close();
                log.info("stopped");
            }
        });
        return Main.OK;
    }
}
