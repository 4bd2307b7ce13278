package io.handoff.chaos;

import io.handoff.demo.PrometheusSamples;

import java.util.List;
import java.util.Map;
import java.util.OptionalDouble;
import java.util.TreeMap;

/**
 * How long quarantines lasted, from the servers' {@code handoff_kv_quarantine_seconds} histograms added together: how
 * many ended, and the bucket bounds their median and 99th percentile fall under (an upper estimate, as buckets give).
 */
record QuarantineDurations(long count, OptionalDouble p50Seconds, OptionalDouble p99Seconds)
{
    static final String HISTOGRAM = "handoff_kv_quarantine_seconds";

    static final QuarantineDurations NONE = new QuarantineDurations(0, OptionalDouble.empty(), OptionalDouble.empty());

    /** The servers' histograms added together; empty when none exports it. */
    static java.util.Optional<QuarantineDurations> of(List<PrometheusSamples> servers)
    {
        TreeMap<Double, Double> cumulative = new TreeMap<>();
        boolean any = false;
        for (PrometheusSamples samples : servers) {
            for (PrometheusSamples.Sample sample : samples.samples()) {
                if (sample.name().equals(HISTOGRAM + "_bucket")) {
                    any = true;
                    String le = sample.labels().getOrDefault("le", "+Inf");
                    double bound = le.equals("+Inf") ? Double.POSITIVE_INFINITY : Double.parseDouble(le);
                    cumulative.merge(bound, sample.value(), Double::sum);
                }
            }
        }
        if (!any) {
            return java.util.Optional.empty();
        }
        double count = cumulative.isEmpty() ? 0 : cumulative.lastEntry().getValue();
        return java.util.Optional.of(new QuarantineDurations(Math.round(count), quantile(cumulative, count, 0.5), quantile(cumulative, count, 0.99)));
    }

    private static OptionalDouble quantile(TreeMap<Double, Double> cumulative, double count, double q)
    {
        if (count <= 0) {
            return OptionalDouble.empty();
        }
        for (Map.Entry<Double, Double> bucket : cumulative.entrySet()) {
            if (bucket.getValue() >= q * count) {
                return OptionalDouble.of(bucket.getKey());
            }
        }
        return OptionalDouble.empty();
    }
}
