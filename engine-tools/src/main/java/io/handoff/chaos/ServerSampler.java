package io.handoff.chaos;

import io.handoff.demo.PrometheusSamples;

import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.OptionalDouble;
import java.util.concurrent.TimeUnit;

import static java.util.Objects.requireNonNull;

/**
 * Reads the prefills' and the decode's {@code /metrics} while the soak runs (every half second, for the longest
 * quarantine any of them reports) and after it, until every server is idle with every page back or the settle time
 * has passed.
 */
final class ServerSampler
{
    private static final Duration EVERY = Duration.ofMillis(500);

    private final HttpClient http;
    private final List<String> names;
    private final List<URI> servers;
    private final Thread thread;
    private volatile boolean stopped;
    // Guarded by this: the largest longest-quarantine gauge seen, or NaN while no server exports it.
    private double longestQuarantine = Double.NaN;
    private List<PrometheusSamples> lastSamples = List.of();

    private ServerSampler(HttpClient http, List<String> names, List<URI> servers)
    {
        this.http = requireNonNull(http, "http is null");
        this.names = List.copyOf(names);
        this.servers = List.copyOf(servers);
        this.thread = Thread.ofVirtual().name("chaos-metrics").unstarted(this::sampleUntilStopped);
    }

    static ServerSampler start(HttpClient http, List<String> names, List<URI> servers)
    {
        ServerSampler sampler = new ServerSampler(http, names, servers);
        sampler.thread.start();
        return sampler;
    }

    private void sampleUntilStopped()
    {
        try {
            while (!stopped) {
                readAll();
                Thread.sleep(EVERY);
            }
        }
        catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    /** Stops sampling, then reads every server until all are settled or {@code timeout} has passed; the last reading of each. */
    List<NodeState> settle(Duration timeout)
            throws InterruptedException
    {
        stopped = true;
        thread.join();
        long deadline = System.nanoTime() + timeout.toNanos();
        while (true) {
            List<NodeState> states = readAll();
            if (states.stream().allMatch(NodeState::settled) || System.nanoTime() - deadline >= 0) {
                return states;
            }
            // other processes are still finishing requests and draining transfers: poll, bounded by the deadline
            Thread.sleep(Duration.ofNanos(Math.min(TimeUnit.MILLISECONDS.toNanos(100), Math.max(1, deadline - System.nanoTime()))));
        }
    }

    /** How long quarantines lasted, from the last reading of every server that could be read. */
    synchronized java.util.Optional<QuarantineDurations> quarantineDurations()
    {
        return QuarantineDurations.of(lastSamples);
    }

    synchronized OptionalDouble longestQuarantineSeconds()
    {
        return Double.isNaN(longestQuarantine) ? OptionalDouble.empty() : OptionalDouble.of(longestQuarantine);
    }

    private List<NodeState> readAll()
            throws InterruptedException
    {
        List<NodeState> states = new ArrayList<>();
        List<PrometheusSamples> samples = new ArrayList<>();
        for (int i = 0; i < servers.size(); i++) {
            NodeState state = read(names.get(i), servers.get(i), samples);
            state.longestQuarantineSeconds().ifPresent(seconds -> {
                synchronized (this) {
                    longestQuarantine = Double.isNaN(longestQuarantine) ? seconds : Math.max(longestQuarantine, seconds);
                }
            });
            states.add(state);
        }
        synchronized (this) {
            lastSamples = List.copyOf(samples);
        }
        return states;
    }

    private NodeState read(String name, URI server, List<PrometheusSamples> read)
            throws InterruptedException
    {
        try {
            HttpResponse<String> response = http.send(HttpRequest.newBuilder(server.resolve("/metrics")).timeout(Duration.ofSeconds(5)).GET().build(),
                    HttpResponse.BodyHandlers.ofString());
            if (response.statusCode() != 200) {
                return NodeState.unreachable(name);
            }
            PrometheusSamples samples = PrometheusSamples.parse(response.body());
            read.add(samples);
            return NodeState.from(name, samples);
        }
        catch (IOException | IllegalArgumentException e) {
            // a server being killed and restarted is unreadable for a moment
            return NodeState.unreachable(name);
        }
    }
}
