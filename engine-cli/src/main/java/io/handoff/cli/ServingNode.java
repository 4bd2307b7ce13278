package io.handoff.cli;

import io.handoff.cluster.ClusterConfig;
import io.handoff.cluster.Registration;
import io.handoff.core.disagg.Disaggregation;
import io.handoff.core.fault.FaultSpec;
import io.handoff.core.runtime.ComputeEngine;
import io.handoff.core.runtime.Engine;
import io.handoff.http.ApiServer;
import io.handoff.http.RoleSwitcher;
import io.handoff.http.base.ServerConfig;
import org.apache.logging.log4j.LogManager;
import org.apache.logging.log4j.Logger;

import java.io.IOException;
import java.net.BindException;
import java.time.Duration;
import java.util.Optional;

import static java.util.Objects.requireNonNull;

/**
 * What {@code handoff serve} runs: the engine in one role, its HTTP API and its membership registration, and the
 * switch to another role that {@code POST /admin/role} asks for. A switch stops admitting (new requests get 503
 * {@code draining}, which a router retries on another server), tells the membership store it drains, waits for what
 * is in flight to finish and for every KV-transfer room to settle with no page held without proof, then closes the
 * engine, starts it in the new role on the same port and registers again. Nothing in flight is aborted: a switch that
 * cannot drain within {@code handoff.server.role-switch-timeout} is given up and the server serves on as before.
 */
final class ServingNode
        implements RoleSwitcher
{
    private static final Logger log = LogManager.getLogger(ServingNode.class);

    /** One role's running parts. */
    private record Node(String role, ComputeEngine compute, ApiServer server, Registration registration) {}

    private final Engine engine;
    private final ServerConfig config;
    private final ClusterConfig cluster;
    private final Duration switchTimeout;
    // guards node and switchingTo; a switch runs on its own thread, at most one at a time
    private final Object lock = new Object();
    private Node node;
    private String switchingTo;
    private boolean closed;

    private ServingNode(Engine engine, ServerConfig config, ClusterConfig cluster, Duration switchTimeout)
    {
        this.engine = requireNonNull(engine, "engine is null");
        this.config = requireNonNull(config, "config is null");
        this.cluster = requireNonNull(cluster, "cluster is null");
        this.switchTimeout = requireNonNull(switchTimeout, "switchTimeout is null");
    }

    /** Starts {@code role}'s engine, its HTTP API on {@code config}'s address, and its registration. */
    static ServingNode start(Engine engine, ServerConfig config, ClusterConfig cluster, String role)
            throws IOException, InterruptedException
    {
        ServingNode serving = new ServingNode(engine, config, cluster, engine.config().config().getDuration("handoff.server.role-switch-timeout"));
        serving.node = serving.open(role, config);
        return serving;
    }

    /** The role it serves in now. */
    String role()
    {
        synchronized (lock) {
            return node.role();
        }
    }

    /** What the startup line says. */
    String describe()
    {
        synchronized (lock) {
            return "serving " + node.compute().model().name() + " (role " + node.role() + ") on http://" + node.server().address().getHostString() + ":"
                    + node.server().address().getPort() + (node.registration() == Registration.NONE ? "" : "; registered in " + node.registration());
        }
    }

    @Override
    public Answer switchTo(String role)
    {
        synchronized (lock) {
            if (closed) {
                return new Answer(409, "busy", "the server is shutting down");
            }
            if (switchingTo != null) {
                return new Answer(409, "busy", "a switch to " + switchingTo + " is under way; ask again once /health says its role");
            }
            if (node.role().equals(role)) {
                return new Answer(200, "unchanged", "the server is a " + role + " already");
            }
            switchingTo = role;
        }
        Thread.ofPlatform().name("handoff-role-switch").daemon().start(() -> run(role));
        return new Answer(202, "switching", "stopping admission, draining, then restarting as " + role + "; /health shows the role once done");
    }

    private void run(String role)
    {
        Node old;
        synchronized (lock) {
            old = node;
        }
        try {
            log.info("switching role {} -> {}: no new requests; waiting up to {} for those in flight and their rooms", old.role(), role, switchTimeout);
            old.registration().draining();
            if (!old.server().pauseForSwitch(role, System.nanoTime() + switchTimeout.toNanos())) {
                log.warn("role switch {} -> {} given up: requests or KV-transfer rooms still in flight after {} "
                        + "(handoff.server.role-switch-timeout); serving on as a {}", old.role(), role, switchTimeout, old.role());
                // registered again, not draining any more
                old.registration().close();
                Registration again = ClusterAnnouncement.register(cluster, old.compute(), config.host(), old.server().address());
                old.server().resumeAfterSwitch();
                synchronized (lock) {
                    node = new Node(old.role(), old.compute(), old.server(), again);
                }
                return;
            }
            ServerConfig samePort = config.withPort(old.server().address().getPort());
            old.server().shutdown(Duration.ZERO);
            old.registration().close();
            old.compute().close();
            Node fresh;
            try {
                fresh = open(role, samePort);
            }
            catch (IOException | RuntimeException e) {
                log.error("cannot start as {}: {}; starting as {} again", role, e.getMessage(), old.role(), e);
                fresh = open(old.role(), samePort);
            }
            synchronized (lock) {
                node = fresh;
            }
            log.info("role switch done: {}", describe());
        }
        catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        catch (IOException | RuntimeException e) {
            // neither role could start again: a server that serves nothing must not look alive
            log.fatal("role switch to {} failed and the old role could not start again; exiting", role, e);
            System.exit(Main.FAILURE);
        }
        finally {
            synchronized (lock) {
                switchingTo = null;
            }
        }
    }

    /** Starts {@code role}'s engine, HTTP API and registration; nothing of them stays when it fails. */
    private Node open(String role, ServerConfig serverConfig)
            throws IOException, InterruptedException
    {
        ComputeEngine compute = null;
        ApiServer server = null;
        try {
            compute = ComputeEngine.create(engine, FaultSpec.parse(engine.config().config().getStringList("handoff.debug.faults")), disaggregationRole(role));
            server = listen(serverConfig, compute);
            server.roleSwitcher(this);
            // announced once it answers: a router that finds it in the store finds it serving
            Registration registration = ClusterAnnouncement.register(cluster, compute, serverConfig.host(), server.address());
            return new Node(role, compute, server, registration);
        }
        catch (IOException | InterruptedException | RuntimeException e) {
            if (server != null) {
                server.shutdown(Duration.ZERO);
            }
            if (compute != null) {
                compute.close();
            }
            throw e;
        }
    }

    static Optional<Disaggregation.Role> disaggregationRole(String role)
    {
        return switch (role) {
            case "colocated" -> Optional.empty();
            case "prefill" -> Optional.of(Disaggregation.Role.PREFILL);
            case "decode" -> Optional.of(Disaggregation.Role.DECODE);
            default -> throw new IllegalArgumentException("unknown role '" + role + "': expected colocated, prefill or decode");
        };
    }

    private static ApiServer listen(ServerConfig config, ComputeEngine compute)
            throws IOException
    {
        try {
            return ApiServer.start(config, compute.scheduler(), compute.model(), compute.tokenizer(), compute.chatTemplate(), compute.disaggregation(), compute.ranks());
        }
        catch (BindException e) {
            throw ListenOptions.cannotListen(config, e);
        }
    }

    /** SIGTERM: routers stop sending, in-flight requests finish within the grace period, then everything closes. */
    void stop()
            throws InterruptedException
    {
        Node last;
        synchronized (lock) {
            closed = true;
            last = node;
        }
        try {
            last.registration().draining();
            last.server().shutdown(config.gracePeriod());
        }
        finally {
            last.registration().close();
            last.compute().close();
        }
    }
}
