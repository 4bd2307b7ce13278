package io.handoff.demo;

import java.io.IOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;

import static java.util.Objects.requireNonNull;

/**
 * The servers of one demo run: started stage by stage (prefills and decodes, then the router that needs
 * them), each stage waited for until every node answers its health probe, within a bounded time. A node
 * that ends early or never becomes healthy stops the whole start: everything started so far is stopped
 * and the failure names the node and quotes the end of its log. Closing stops every node (SIGTERM, then
 * SIGKILL after the grace period), and so does a shutdown hook when this JVM is interrupted (Ctrl-C).
 */
public final class Cluster
        implements AutoCloseable
{
    public static final int LOG_LINES = 20;
    private static final Duration KILL_WAIT = Duration.ofSeconds(5);
    private static final long POLL_NANOS = TimeUnit.MILLISECONDS.toNanos(100);

    private final List<Node> nodes = new ArrayList<>();
    private final Duration stopGrace;
    private final Thread shutdownHook;
    private boolean closed;

    private Cluster(Duration stopGrace, Consumer<String> progress)
    {
        this.stopGrace = requireNonNull(stopGrace, "stopGrace is null");
        this.shutdownHook = Thread.ofPlatform().name("handoff-demo-stop").unstarted(() -> {
            if (!nodes().isEmpty()) {
                progress.accept("interrupted: stopping the servers");
            }
            stop();
        });
    }

    /**
     * Starts {@code stages} in order; returns when every node is healthy. {@code progress} hears one line
     * per step, for people.
     */
    public static Cluster start(List<List<NodeSpec>> stages, NodeLauncher launcher, HealthProbe probe, Duration startupTimeout,
            Duration stopGrace, Consumer<String> progress)
            throws StartupFailure, InterruptedException
    {
        Cluster cluster = new Cluster(stopGrace, progress);
        Runtime.getRuntime().addShutdownHook(cluster.shutdownHook);
        try {
            for (List<NodeSpec> stage : stages) {
                List<Node> started = new ArrayList<>();
                for (NodeSpec spec : stage) {
                    progress.accept("starting " + spec.name() + " on " + spec.url() + ": handoff " + String.join(" ", spec.arguments()));
                    Node node = cluster.launch(launcher, spec);
                    started.add(node);
                }
                awaitHealthy(started, probe, startupTimeout, progress);
            }
            return cluster;
        }
        catch (StartupFailure | InterruptedException | RuntimeException e) {
            cluster.close();
            throw e;
        }
    }

    private Node launch(NodeLauncher launcher, NodeSpec spec)
            throws StartupFailure
    {
        try {
            Node node = launcher.launch(spec);
            synchronized (this) {
                nodes.add(node);
            }
            return node;
        }
        catch (IOException e) {
            throw new StartupFailure(e.getMessage());
        }
    }

    private static void awaitHealthy(List<Node> stage, HealthProbe probe, Duration timeout, Consumer<String> progress)
            throws StartupFailure, InterruptedException
    {
        long start = System.nanoTime();
        long deadline = start + timeout.toNanos();
        Map<Node, String> waiting = new LinkedHashMap<>();
        stage.forEach(node -> waiting.put(node, "not probed yet"));
        while (true) {
            for (Node node : List.copyOf(waiting.keySet())) {
                Optional<String> ended = node.ended();
                if (ended.isPresent()) {
                    throw failure(node, node.spec().name() + " " + ended.get() + " before it became healthy", node.endedForTakenAddress() ? node.spec().port() : -1);
                }
                Optional<String> problem = probe.check(node);
                if (problem.isEmpty()) {
                    waiting.remove(node);
                    progress.accept(node.spec().name() + " is healthy after " + TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start) + " ms");
                }
                else {
                    waiting.put(node, problem.get());
                }
            }
            if (waiting.isEmpty()) {
                return;
            }
            if (System.nanoTime() - deadline >= 0) {
                Map.Entry<Node, String> first = waiting.entrySet().iterator().next();
                throw failure(first.getKey(), first.getKey().spec().name() + " did not become healthy within " + timeout.toMillis()
                        + " ms (last probe: " + first.getValue() + ")");
            }
            // Waiting for another process to come up: poll, bounded by the deadline above.
            Thread.sleep(Duration.ofNanos(Math.min(POLL_NANOS, Math.max(1, deadline - System.nanoTime()))));
        }
    }

    /** A failure that quotes the end of the node's log, or says where its output went. */
    static StartupFailure failure(Node node, String what)
    {
        return failure(node, what, -1);
    }

    private static StartupFailure failure(Node node, String what, int takenPort)
    {
        List<String> tail = node.logTail(LOG_LINES);
        StringBuilder message = new StringBuilder(what);
        if (tail.isEmpty()) {
            message.append("; its output: ").append(node.logLocation());
        }
        else {
            message.append("; the last lines of ").append(node.logLocation()).append(':');
            tail.forEach(line -> message.append("\n  | ").append(line));
        }
        return new StartupFailure(message.toString(), takenPort);
    }

    public synchronized List<Node> nodes()
    {
        return List.copyOf(nodes);
    }

    public List<Node> nodes(NodeSpec.Role role)
    {
        return nodes().stream().filter(node -> node.spec().role() == role).toList();
    }

    /**
     * Ends {@code node} at once (SIGKILL, as a crash would), starts {@code spec} in its place (the same port; a new name
     * keeps the old log), and returns the new node once it is healthy.
     */
    public Node restart(Node node, NodeSpec spec, NodeLauncher launcher, HealthProbe probe, Duration timeout, Consumer<String> progress)
            throws StartupFailure, InterruptedException
    {
        node.kill();
        node.awaitEnd(KILL_WAIT);
        synchronized (this) {
            nodes.remove(node);
        }
        progress.accept("killed " + node.spec().name() + "; starting " + spec.name() + " on " + spec.url());
        Node fresh = launch(launcher, spec);
        awaitHealthy(List.of(fresh), probe, timeout, progress);
        return fresh;
    }

    /** Stops every node: SIGTERM to all (last started first), a shared grace period, then SIGKILL to what is left. */
    private void stop()
    {
        List<Node> running;
        synchronized (this) {
            if (closed) {
                return;
            }
            closed = true;
            running = new ArrayList<>(nodes).reversed();
        }
        running.forEach(Node::terminate);
        long deadline = System.nanoTime() + stopGrace.toNanos();
        try {
            for (Node node : running) {
                node.awaitEnd(Duration.ofNanos(Math.max(0, deadline - System.nanoTime())));
            }
        }
        catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        finally {
            // Also reaps what a node started and left behind after it ended.
            running.forEach(Node::kill);
            awaitKilled(running);
        }
    }

    private static void awaitKilled(List<Node> killed)
    {
        try {
            for (Node node : killed) {
                node.awaitEnd(KILL_WAIT);
            }
        }
        catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    @Override
    public void close()
    {
        stop();
        try {
            Runtime.getRuntime().removeShutdownHook(shutdownHook);
        }
        catch (IllegalStateException e) {
            // the JVM is shutting down: the hook runs (or ran) and finds everything stopped
        }
    }
}
