package io.handoff.chaos;

import io.handoff.demo.PrometheusSamples;

import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import static java.util.Objects.requireNonNull;

/**
 * Samples what every process of the soak holds ({@link ResourceSample}), every {@link #EVERY}, from the traffic's start
 * until {@link #stop}: the evidence that a long run does not grow. A process that cannot be read at a sample (killed,
 * restarting) has no sample then.
 */
final class ResourceSampler
{
    static final Duration EVERY = Duration.ofSeconds(5);

    private final HttpClient http;
    private final Map<String, URI> processes;
    private final long startNanos = System.nanoTime();
    private final Thread thread;
    private final Object lock = new Object();
    // Guarded by lock.
    private final Map<String, List<ResourceSample>> samples = new LinkedHashMap<>();
    private boolean stopped;

    private ResourceSampler(HttpClient http, Map<String, URI> processes)
    {
        this.http = requireNonNull(http, "http is null");
        this.processes = new LinkedHashMap<>(processes);
        this.processes.keySet().forEach(name -> samples.put(name, new ArrayList<>()));
        this.thread = Thread.ofVirtual().name("chaos-resources").unstarted(this::run);
    }

    /** @param processes each process's name and base URL, in the report's order */
    static ResourceSampler start(HttpClient http, Map<String, URI> processes)
    {
        ResourceSampler sampler = new ResourceSampler(http, processes);
        sampler.thread.start();
        return sampler;
    }

    private void run()
    {
        try {
            long next = startNanos;
            while (true) {
                sampleAll();
                next += EVERY.toNanos();
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
            }
        }
        catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    /** Takes one last sample of every process, stops, and returns every sample by process. */
    Map<String, List<ResourceSample>> stop()
            throws InterruptedException
    {
        synchronized (lock) {
            stopped = true;
            lock.notifyAll();
        }
        thread.join();
        sampleAll();
        synchronized (lock) {
            Map<String, List<ResourceSample>> copy = new LinkedHashMap<>();
            samples.forEach((name, list) -> copy.put(name, List.copyOf(list)));
            return copy;
        }
    }

    private void sampleAll()
            throws InterruptedException
    {
        for (Map.Entry<String, URI> process : processes.entrySet()) {
            double seconds = (System.nanoTime() - startNanos) / 1e9;
            try {
                HttpResponse<String> response = http.send(HttpRequest.newBuilder(process.getValue().resolve("/metrics"))
                        .timeout(Duration.ofSeconds(5)).GET().build(), HttpResponse.BodyHandlers.ofString());
                if (response.statusCode() == 200) {
                    ResourceSample sample = ResourceSample.of(seconds, PrometheusSamples.parse(response.body()));
                    synchronized (lock) {
                        samples.get(process.getKey()).add(sample);
                    }
                }
            }
            catch (IOException | IllegalArgumentException e) {
                // killed or restarting: no sample this time
            }
        }
    }
}
