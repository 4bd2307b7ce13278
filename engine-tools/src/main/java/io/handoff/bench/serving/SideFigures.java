package io.handoff.bench.serving;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalDouble;

import static java.util.Objects.requireNonNull;

/**
 * One URL's figures: latency distributions over its completed requests (TTFT and E2E per request, TPOT per request with
 * two tokens or more, ITL over every gap of every completed request), throughputs over the seconds its requests ran,
 * goodput under the SLOs, and every failed request counted by HTTP status and reason.
 */
public record SideFigures(Optional<Distribution> ttft, Optional<Distribution> itl, Optional<Distribution> tpot, Optional<Distribution> e2e,
        double requestThroughput, double outputTokenThroughput, double inputTokenThroughput, int completed, int failed, List<Failure> failures,
        OptionalDouble goodput, double seconds)
{
    /** Failed requests with the same status (0: no response) and reason. */
    public record Failure(int status, String reason, int count) {}

    public SideFigures
    {
        requireNonNull(failures, "failures is null");
        failures = List.copyOf(failures);
    }

    public static SideFigures of(List<Sample> samples, double seconds, Slo slo)
    {
        List<Sample> done = samples.stream().filter(Sample::completed).toList();
        long outputTokens = done.stream().mapToLong(s -> s.outputIds().length).sum();
        long inputTokens = done.stream().mapToLong(Sample::inputTokens).sum();
        Map<String, Failure> failures = new LinkedHashMap<>();
        for (Sample sample : samples) {
            if (!sample.completed()) {
                String reason = sample.error().orElseThrow();
                failures.merge(sample.status() + " " + reason, new Failure(sample.status(), reason, 1),
                        (a, b) -> new Failure(a.status(), a.reason(), a.count() + 1));
            }
        }
        double per = seconds > 0 ? 1 / seconds : 0;
        OptionalDouble goodput = slo.any() ? OptionalDouble.of(done.stream().filter(slo::met).count() * per) : OptionalDouble.empty();
        return new SideFigures(
                Distribution.of(done.stream().mapToDouble(Sample::ttftMillis).toArray()),
                Distribution.of(itls(done)),
                Distribution.of(done.stream().mapToDouble(Sample::tpotMillis).toArray()),
                Distribution.of(done.stream().mapToDouble(Sample::e2eMillis).toArray()),
                done.size() * per, outputTokens * per, inputTokens * per, done.size(), samples.size() - done.size(),
                new ArrayList<>(failures.values()), goodput, seconds);
    }

    static double[] itls(List<Sample> samples)
    {
        return samples.stream().filter(Sample::completed).flatMapToDouble(s -> Arrays.stream(s.itlMillis())).toArray();
    }
}
