package io.handoff.demo;

import com.fasterxml.jackson.databind.ObjectMapper;

import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.OptionalDouble;
import java.util.OptionalInt;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;
import java.util.function.Function;

import static java.util.Objects.requireNonNull;

/**
 * Reads the servers' {@code /metrics} once every request has finished: polls until no server runs or
 * queues a request and every page is back (or a bounded time has passed: pages a server never gives
 * back are the leak the report shows), then reads the first prefill's {@code /bootstrap}.
 */
public final class ServerScrape
{
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final long POLL_NANOS = TimeUnit.MILLISECONDS.toNanos(100);

    private final HttpClient client;
    private final Duration settleTimeout;
    private final Consumer<String> notes;

    /** {@code notes} hears what could not be read, for the report. */
    public ServerScrape(HttpClient client, Duration settleTimeout, Consumer<String> notes)
    {
        this.client = requireNonNull(client, "client is null");
        this.settleTimeout = requireNonNull(settleTimeout, "settleTimeout is null");
        this.notes = requireNonNull(notes, "notes is null");
    }

    public ServerFigures collect(List<URI> prefills, List<URI> decodes)
            throws InterruptedException
    {
        long deadline = System.nanoTime() + settleTimeout.toNanos();
        List<Optional<NodeMetrics>> prefillMetrics;
        List<Optional<NodeMetrics>> decodeMetrics;
        while (true) {
            boolean last = System.nanoTime() - deadline >= 0;
            prefillMetrics = scrapeAll(prefills, last);
            decodeMetrics = scrapeAll(decodes, last);
            if (settled(prefillMetrics) && settled(decodeMetrics)) {
                break;
            }
            if (last) {
                describeUnsettled(prefills, prefillMetrics);
                describeUnsettled(decodes, decodeMetrics);
                break;
            }
            // Waiting for other processes to finish and free their pages: poll, bounded by the deadline.
            Thread.sleep(Duration.ofNanos(POLL_NANOS));
        }
        return new ServerFigures(
                sum(prefillMetrics, NodeMetrics::transferBytes),
                sum(prefillMetrics, NodeMetrics::transferBusySeconds),
                leaked(prefillMetrics),
                leaked(decodeMetrics),
                prefills.isEmpty() ? BootstrapInfo.UNKNOWN : bootstrap(prefills.getFirst()),
                sum(prefillMetrics, NodeMetrics::earlyBytes),
                sum(prefillMetrics, NodeMetrics::kvReadySeconds),
                sum(prefillMetrics, NodeMetrics::kvReadyRooms),
                sum(prefillMetrics, NodeMetrics::promptTokens),
                byRank(decodeMetrics));
    }

    /** Each decode rank's received KV bytes summed over the decodes; empty when a decode did not tell. */
    private static List<Double> byRank(List<Optional<NodeMetrics>> metrics)
    {
        List<Double> sum = new ArrayList<>();
        for (Optional<NodeMetrics> node : metrics) {
            List<Double> ranks = node.map(NodeMetrics::receivedBytesByRank).orElse(List.of());
            if (ranks.isEmpty()) {
                return List.of();
            }
            for (int rank = 0; rank < ranks.size(); rank++) {
                if (rank < sum.size()) {
                    sum.set(rank, sum.get(rank) + ranks.get(rank));
                }
                else {
                    sum.add(ranks.get(rank));
                }
            }
        }
        return sum;
    }

    private List<Optional<NodeMetrics>> scrapeAll(List<URI> servers, boolean noteFailures)
            throws InterruptedException
    {
        List<Optional<NodeMetrics>> metrics = new ArrayList<>();
        for (URI server : servers) {
            metrics.add(scrape(server, noteFailures));
        }
        return metrics;
    }

    private Optional<NodeMetrics> scrape(URI server, boolean noteFailures)
            throws InterruptedException
    {
        URI uri = server.resolve("/metrics");
        try {
            HttpResponse<String> response = get(uri);
            if (response.statusCode() != 200) {
                if (noteFailures) {
                    notes.accept("GET " + uri + " answered HTTP " + response.statusCode());
                }
                return Optional.empty();
            }
            return Optional.of(NodeMetrics.from(PrometheusSamples.parse(response.body())));
        }
        catch (IOException | IllegalArgumentException e) {
            if (noteFailures) {
                notes.accept("GET " + uri + " failed: " + e.getMessage());
            }
            return Optional.empty();
        }
    }

    private static boolean settled(List<Optional<NodeMetrics>> metrics)
    {
        return metrics.stream().allMatch(m -> m.isPresent() && m.get().idle() && m.get().leakedPages().orElse(0) == 0);
    }

    private void describeUnsettled(List<URI> servers, List<Optional<NodeMetrics>> metrics)
    {
        for (int i = 0; i < servers.size(); i++) {
            URI server = servers.get(i);
            metrics.get(i).filter(m -> !m.idle()).ifPresent(m -> notes.accept(
                    server + " was still busy after " + settleTimeout.toMillis() + " ms: running " + m.running().orElse(0)
                            + ", waiting " + m.waiting().orElse(0) + ", in flight " + m.inFlight().orElse(0)));
        }
    }

    private static OptionalDouble sum(List<Optional<NodeMetrics>> metrics, Function<NodeMetrics, OptionalDouble> figure)
    {
        double sum = 0;
        boolean any = false;
        for (Optional<NodeMetrics> node : metrics) {
            OptionalDouble value = node.map(figure).orElse(OptionalDouble.empty());
            if (value.isPresent()) {
                sum += value.getAsDouble();
                any = true;
            }
        }
        return any ? OptionalDouble.of(sum) : OptionalDouble.empty();
    }

    /** The sum over the servers; empty when any of them could not tell (a partial sum would hide a leak). */
    private static OptionalInt leaked(List<Optional<NodeMetrics>> metrics)
    {
        int sum = 0;
        for (Optional<NodeMetrics> node : metrics) {
            OptionalInt leaked = node.map(NodeMetrics::leakedPages).orElse(OptionalInt.empty());
            if (leaked.isEmpty()) {
                return OptionalInt.empty();
            }
            sum += leaked.getAsInt();
        }
        return metrics.isEmpty() ? OptionalInt.empty() : OptionalInt.of(sum);
    }

    private BootstrapInfo bootstrap(URI prefill)
            throws InterruptedException
    {
        URI uri = prefill.resolve("/bootstrap");
        try {
            HttpResponse<String> response = get(uri);
            if (response.statusCode() != 200) {
                notes.accept("GET " + uri + " answered HTTP " + response.statusCode() + ": transport and early send are unknown");
                return BootstrapInfo.UNKNOWN;
            }
            return BootstrapInfo.from(JSON.readTree(response.body()));
        }
        catch (IOException e) {
            notes.accept("GET " + uri + " failed (" + e.getMessage() + "): transport and early send are unknown");
            return BootstrapInfo.UNKNOWN;
        }
    }

    private HttpResponse<String> get(URI uri)
            throws IOException, InterruptedException
    {
        return client.send(HttpRequest.newBuilder(uri).timeout(Duration.ofSeconds(5)).GET().build(), HttpResponse.BodyHandlers.ofString());
    }
}
