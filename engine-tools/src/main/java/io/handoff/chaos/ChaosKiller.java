package io.handoff.chaos;

import com.fasterxml.jackson.databind.node.ArrayNode;
import io.handoff.demo.Cluster;
import io.handoff.demo.HealthProbe;
import io.handoff.demo.Node;
import io.handoff.demo.NodeLauncher;
import io.handoff.demo.NodeSpec;
import io.handoff.demo.StartupFailure;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.function.Consumer;

import static java.util.Objects.requireNonNull;

/**
 * {@code handoff chaos --kill-every}: during the traffic, every interval, kills (SIGKILL) a server drawn at random with
 * the soak's seed (a prefill or the decode, and the router when asked) and starts it again on its port. A kill is
 * recovered once a request sent after it completed; the time from the kill to that completion is its recovery time.
 */
final class ChaosKiller
{
    /** One kill: whom, when (seconds since the traffic began), and how long until service came back (-1: not yet, or never). */
    static final class Kill
    {
        final String victim;
        final double atSeconds;
        final long atNanos;
        volatile double restartedSeconds = -1;
        volatile double recoveredSeconds = -1;
        volatile String failure;

        Kill(String victim, double atSeconds, long atNanos)
        {
            this.victim = victim;
            this.atSeconds = atSeconds;
            this.atNanos = atNanos;
        }
    }

    private final Cluster cluster;
    private final NodeLauncher launcher;
    private final HealthProbe probe;
    private final Duration every;
    private final Duration startupTimeout;
    private final boolean router;
    private final SplittableRandom random;
    private final Consumer<String> progress;
    private final long startNanos;
    private final List<Kill> kills = new ArrayList<>();
    private final Object lock = new Object();
    private final Thread thread;
    private boolean stopped;

    ChaosKiller(Cluster cluster, NodeLauncher launcher, HealthProbe probe, Duration every, Duration startupTimeout, boolean router, long seed,
            Consumer<String> progress, long startNanos)
    {
        this.cluster = requireNonNull(cluster, "cluster is null");
        this.launcher = requireNonNull(launcher, "launcher is null");
        this.probe = requireNonNull(probe, "probe is null");
        this.every = requireNonNull(every, "every is null");
        this.startupTimeout = requireNonNull(startupTimeout, "startupTimeout is null");
        this.router = router;
        this.random = new SplittableRandom(seed ^ 0x6b696c6cL);
        this.progress = requireNonNull(progress, "progress is null");
        this.startNanos = startNanos;
        this.thread = Thread.ofVirtual().name("chaos-killer").unstarted(this::run);
    }

    void start()
    {
        thread.start();
    }

    /** A request that began at {@code startedNanos} completed at {@code endedNanos}: the kills before it recovered. */
    void completed(long startedNanos, long endedNanos)
    {
        synchronized (lock) {
            for (Kill kill : kills) {
                if (kill.recoveredSeconds < 0 && kill.atNanos - startedNanos < 0) {
                    kill.recoveredSeconds = (endedNanos - kill.atNanos) / 1e9;
                }
            }
        }
    }

    /** Stops killing (a restart under way finishes first) and returns every kill. */
    List<Kill> stop()
            throws InterruptedException
    {
        synchronized (lock) {
            stopped = true;
            lock.notifyAll();
        }
        thread.join();
        synchronized (lock) {
            return List.copyOf(kills);
        }
    }

    private void run()
    {
        try {
            long next = startNanos + every.toNanos();
            while (true) {
                synchronized (lock) {
                    long wait = next - System.nanoTime();
                    while (!stopped && wait > 0) {
                        lock.wait(Math.max(1, wait / 1_000_000));
                        wait = next - System.nanoTime();
                    }
                    if (stopped) {
                        return;
                    }
                }
                killOne();
                // the next kill an interval after this one came back: a server is never killed while another restarts
                next = Math.max(next + every.toNanos(), System.nanoTime() + every.toNanos() / 2);
            }
        }
        catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    private void killOne()
            throws InterruptedException
    {
        List<Node> candidates = new ArrayList<>();
        for (Node node : cluster.nodes()) {
            if (node.spec().role() != NodeSpec.Role.ROUTER || router) {
                candidates.add(node);
            }
        }
        if (candidates.isEmpty()) {
            return;
        }
        Node victim = candidates.get(random.nextInt(candidates.size()));
        NodeSpec spec = victim.spec();
        String base = spec.name().replaceFirst("-k\\d+$", "");
        long now = System.nanoTime();
        Kill kill = new Kill(base, (now - startNanos) / 1e9, now);
        synchronized (lock) {
            kills.add(kill);
        }
        NodeSpec again = new NodeSpec(base + "-k" + kills.size(), spec.role(), spec.port(), spec.arguments());
        try {
            cluster.restart(victim, again, launcher, probe, startupTimeout, progress);
            kill.restartedSeconds = (System.nanoTime() - startNanos) / 1e9;
        }
        catch (StartupFailure e) {
            kill.failure = "the restarted " + base + " did not come back: " + e.getMessage();
            progress.accept(kill.failure);
        }
    }

    static void writeTo(List<Kill> kills, ArrayNode json)
    {
        for (Kill kill : kills) {
            var node = json.addObject();
            node.put("victim", kill.victim);
            node.put("at_s", Math.round(kill.atSeconds * 10) / 10.0);
            if (kill.restartedSeconds >= 0) {
                node.put("restarted_at_s", Math.round(kill.restartedSeconds * 10) / 10.0);
            }
            if (kill.recoveredSeconds >= 0) {
                node.put("recovered_s", Math.round(kill.recoveredSeconds * 1000) / 1000.0);
            }
            if (kill.failure != null) {
                node.put("failure", kill.failure);
            }
        }
    }
}
