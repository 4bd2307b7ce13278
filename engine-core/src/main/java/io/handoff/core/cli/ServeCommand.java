package io.handoff.core.cli;

import io.handoff.core.disagg.Disaggregation;
import io.handoff.core.fault.FaultSpec;
import io.handoff.core.http.ApiServer;
import io.handoff.core.http.ServerConfig;
import io.handoff.core.runtime.ComputeEngine;
import io.handoff.core.runtime.Engine;
import org.apache.logging.log4j.LogManager;
import org.apache.logging.log4j.Logger;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Spec;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.BindException;
import java.util.Optional;
import java.util.concurrent.CountDownLatch;

@Command(name = "serve", mixinStandardHelpOptions = true,
        description = {"Serve the HTTP API (SGLang /generate, OpenAI /v1/completions, /metrics, ...) until SIGTERM or Ctrl-C.",
                "On SIGTERM it stops admitting, lets in-flight requests finish within handoff.server.grace-period, aborts the rest and frees every KV page."})
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

    @Option(names = "--host", paramLabel = "HOST", description = "Address to listen on; sets handoff.server.host (default 127.0.0.1).")
    String host;

    @Option(names = "--port", paramLabel = "PORT", description = "Port to listen on, 0 for any free one; sets handoff.server.port (default 30000).")
    Integer port;

    @Spec
    CommandSpec spec;

    @Override
    public Integer call()
            throws Exception
    {
        Optional<Disaggregation.Role> disaggregationRole = switch (role) {
            case "colocated" -> Optional.empty();
            case "prefill" -> Optional.of(Disaggregation.Role.PREFILL);
            case "decode" -> Optional.of(Disaggregation.Role.DECODE);
            default -> throw new ParameterException(spec.commandLine(), "unknown --role '" + role + "': expected colocated, prefill or decode");
        };
        if (port != null && (port < 0 || port > 65535)) {
            throw new ParameterException(spec.commandLine(), "--port must be in 0..65535, got " + port);
        }
        if (host != null) {
            options.overrides.put("handoff.server.host", host);
        }
        if (port != null) {
            options.overrides.put("handoff.server.port", Integer.toString(port));
        }
        Engine engine = Engine.start(options.source());
        ComputeEngine compute = null;
        ApiServer server;
        ServerConfig config;
        try {
            compute = ComputeEngine.create(engine, FaultSpec.parse(engine.config().config().getStringList("handoff.debug.faults")),
                    disaggregationRole);
            config = ServerConfig.from(engine.config().config());
            server = listen(config, compute);
        }
        catch (RuntimeException | IOException e) {
            if (compute != null) {
                compute.close();
            }
            engine.close();
            throw e;
        }
        CountDownLatch stopped = new CountDownLatch(1);
        ComputeEngine running = compute;
        // SIGTERM and Ctrl-C run shutdown hooks; the launcher execs the JVM, so the signal reaches it.
        Runtime.getRuntime().addShutdownHook(Thread.ofPlatform().name("handoff-shutdown").unstarted(() -> {
            log.info("shutting down: no new requests; in-flight ones have {} ms to finish", config.gracePeriod().toMillis());
            try {
                server.shutdown(config.gracePeriod());
            }
            catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            finally {
                running.close();
                engine.close();
                log.info("stopped");
                stopped.countDown();
            }
        }));
        log.info("serving {} (role {}) on http://{}:{}", compute.model().name(), role, server.address().getHostString(), server.address().getPort());
        stopped.await();
        return Main.OK;
    }

    private static ApiServer listen(ServerConfig config, ComputeEngine compute)
            throws IOException
    {
        try {
            return ApiServer.start(config, compute.scheduler(), compute.model(), compute.disaggregation());
        }
        catch (BindException e) {
            throw new UncheckedIOException("cannot listen on " + config.host() + ":" + config.port() + " (" + e.getMessage()
                    + "); choose another address with --host/--port or handoff.server.*", e);
        }
    }
}
