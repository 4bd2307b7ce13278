package io.handoff.bench.serving;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalDouble;
import java.util.function.Function;

/**
 * The same requests on two URLs: ratios of their figures (url / compare-url; below 1 is lower on url) and how many
 * requests produced the same output tokens on both. Greedy decoding is deterministic and Handoff's kernels are batch-
 * and chunk-invariant, so a disaggregated deployment must equal a colocated one token for token: a mismatch is a bug.
 *
 * @param ratios by name; empty where a side has no such figure or the reference is 0
 * @param compared requests that completed on both sides
 * @param outputsEqual of those, how many have equal output ids
 * @param mismatches request indices whose outputs differ
 */
public record Comparison(Map<String, OptionalDouble> ratios, int compared, int outputsEqual, List<Integer> mismatches)
{
    public static Comparison of(SideFigures url, SideFigures reference, List<Sample> urlSamples, List<Sample> referenceSamples)
    {
        Map<String, OptionalDouble> ratios = new LinkedHashMap<>();
        ratios.put("ttft_p50", ratio(url.ttft(), reference.ttft(), Distribution::p50));
        ratios.put("ttft_p99", ratio(url.ttft(), reference.ttft(), Distribution::p99));
        ratios.put("itl_p50", ratio(url.itl(), reference.itl(), Distribution::p50));
        ratios.put("itl_p99", ratio(url.itl(), reference.itl(), Distribution::p99));
        ratios.put("e2e_p50", ratio(url.e2e(), reference.e2e(), Distribution::p50));
        ratios.put("request_throughput", ratio(url.requestThroughput(), reference.requestThroughput()));
        ratios.put("output_token_throughput", ratio(url.outputTokenThroughput(), reference.outputTokenThroughput()));
        int compared = 0;
        int equal = 0;
        List<Integer> mismatches = new ArrayList<>();
        for (int i = 0; i < Math.min(urlSamples.size(), referenceSamples.size()); i++) {
            Sample a = urlSamples.get(i);
            Sample b = referenceSamples.get(i);
            if (a.completed() && b.completed()) {
                compared++;
                if (Arrays.equals(a.outputIds(), b.outputIds())) {
                    equal++;
                }
                else {
                    mismatches.add(a.index());
                }
            }
        }
        return new Comparison(ratios, compared, equal, mismatches);
    }

    static OptionalDouble ratio(Optional<Distribution> a, Optional<Distribution> b, Function<Distribution, Double> figure)
    {
        return a.isPresent() && b.isPresent() ? ratio(figure.apply(a.get()), figure.apply(b.get())) : OptionalDouble.empty();
    }

    static OptionalDouble ratio(double a, double b)
    {
        return b > 0 && !Double.isNaN(a) ? OptionalDouble.of(a / b) : OptionalDouble.empty();
    }
}
