package io.handoff.chaos;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalDouble;
import java.util.OptionalInt;
import java.util.TreeMap;

import static java.util.Objects.requireNonNull;

/**
 * What a soak found. Every request has exactly one outcome; {@code divergent} counts requests whose tokens (all of a
 * completed one's, the prefix an aborted or failed one received) differ from the colocated reference; a page leaked is
 * one a server still held once it was idle and had had {@code --settle-timeout} to drain.
 *
 * @param setup what ran, for the report's head
 * @param pagesLeaked per server: pages neither free, cached nor quarantined once it was idle and settled (lost to the free
 *         list); empty for a server that could not tell (then the run cannot be called clean)
 * @param heldWithoutProof per server: pages still quarantined at the end, waiting for a proof that never came
 * @param unsettledRooms per server: rooms not final by the release rules at the end
 * @param resources every process's resource samples over the soak
 * @param growth what grew after warm-up beyond {@link ResourceGrowth}'s thresholds
 * @param kills the kills of {@code --kill-every}, in order
 * @param maxQuarantineMillis the largest {@code handoff_kv_quarantine_longest_seconds} seen on any server during the
 *         run; empty while no server exports it
 * @param quarantines how long the quarantines that ended lasted; empty while no server exports the histogram
 * @param retried the router's {@code handoff_router_retries_total}, by cause; empty when it could not be read
 */
public record ChaosReport(
        Map<String, Object> setup,
        List<RequestOutcome> outcomes,
        List<Integer> divergent,
        Map<String, OptionalInt> pagesLeaked,
        Map<String, OptionalInt> heldWithoutProof,
        Map<String, OptionalInt> unsettledRooms,
        OptionalInt quarantinedNow,
        OptionalDouble maxQuarantineMillis,
        Optional<QuarantineDurations> quarantines,
        Map<String, Long> retried,
        boolean retriedKnown,
        double soakSeconds,
        double wallSeconds,
        Map<String, List<ResourceSample>> resources,
        List<String> growth,
        List<ChaosKiller.Kill> kills,
        List<String> notes)
{
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final int EXAMPLES = 5;

    public ChaosReport
    {
        setup = new LinkedHashMap<>(requireNonNull(setup, "setup is null"));
        outcomes = List.copyOf(outcomes);
        divergent = List.copyOf(divergent);
        pagesLeaked = new LinkedHashMap<>(pagesLeaked);
        heldWithoutProof = new LinkedHashMap<>(heldWithoutProof);
        unsettledRooms = new LinkedHashMap<>(unsettledRooms);
        resources = new LinkedHashMap<>(resources);
        growth = List.copyOf(growth);
        kills = List.copyOf(kills);
        retried = new TreeMap<>(retried);
        notes = List.copyOf(notes);
    }

    public long count(RequestOutcome.Kind kind)
    {
        return outcomes.stream().filter(outcome -> outcome.kind() == kind).count();
    }

    /** Failed requests by cause. */
    public Map<String, Long> failedByCause()
    {
        Map<String, Long> byCause = new TreeMap<>();
        outcomes.stream().filter(outcome -> outcome.kind() == RequestOutcome.Kind.FAILED).forEach(outcome -> byCause.merge(outcome.cause(), 1L, Long::sum));
        return byCause;
    }

    public boolean leakKnown()
    {
        return !pagesLeaked.isEmpty() && pagesLeaked.values().stream().allMatch(OptionalInt::isPresent);
    }

    public long leakedPages()
    {
        return pagesLeaked.values().stream().mapToLong(leak -> leak.orElse(0)).sum();
    }

    public long heldWithoutProofPages()
    {
        return heldWithoutProof.values().stream().mapToLong(held -> held.orElse(0)).sum();
    }

    public long unsettled()
    {
        return unsettledRooms.values().stream().mapToLong(rooms -> rooms.orElse(0)).sum();
    }

    /** Kills whose service came back (a request sent after the kill completed). */
    public long recoveredKills()
    {
        return kills.stream().filter(kill -> kill.recoveredSeconds >= 0).count();
    }

    /**
     * Clean: nothing divergent, nothing hung, every room settled and every page back (and every server could say so), no
     * process grown after warm-up, every kill recovered.
     */
    public boolean clean()
    {
        return divergent.isEmpty() && count(RequestOutcome.Kind.HUNG) == 0 && leakKnown() && leakedPages() == 0 && heldWithoutProofPages() == 0
                && unsettled() == 0 && growth.isEmpty() && recoveredKills() == kills.size();
    }

    /** The resource samples as an SVG chart. */
    public String chart()
    {
        return ResourceChart.svg(resources);
    }

    public long outputTokens()
    {
        return outcomes.stream().filter(outcome -> outcome.kind() == RequestOutcome.Kind.COMPLETED).mapToLong(outcome -> outcome.outputIds().length).sum();
    }

    public ObjectNode toJson()
    {
        ObjectNode json = JSON.createObjectNode();
        json.put("requests", outcomes.size());
        json.put("completed", count(RequestOutcome.Kind.COMPLETED));
        json.put("aborted", count(RequestOutcome.Kind.ABORTED));
        ObjectNode failed = json.putObject("failed");
        failedByCause().forEach(failed::put);
        if (retriedKnown) {
            ObjectNode retries = json.putObject("retried");
            retried.forEach(retries::put);
        }
        else {
            json.putNull("retried");
        }
        json.put("divergent", divergent.size());
        json.put("hung", count(RequestOutcome.Kind.HUNG));
        ObjectNode leaked = json.putObject("pages_leaked");
        pagesLeaked.forEach((node, pages) -> {
            if (pages.isPresent()) {
                leaked.put(node, pages.getAsInt());
            }
            else {
                leaked.putNull(node);
            }
        });
        putPerNode(json.putObject("held_without_proof"), heldWithoutProof);
        putPerNode(json.putObject("unsettled_rooms"), unsettledRooms);
        if (quarantinedNow.isPresent()) {
            json.put("quarantined_now", quarantinedNow.getAsInt());
        }
        else {
            json.putNull("quarantined_now");
        }
        if (maxQuarantineMillis.isPresent()) {
            json.put("max_quarantine_ms", round(maxQuarantineMillis.getAsDouble()));
        }
        else {
            json.putNull("max_quarantine_ms");
        }
        if (quarantines.isPresent()) {
            ObjectNode durations = json.putObject("quarantine_ms");
            durations.put("count", quarantines.get().count());
            putMillis(durations, "p50", quarantines.get().p50Seconds());
            putMillis(durations, "p99", quarantines.get().p99Seconds());
        }
        else {
            json.putNull("quarantine_ms");
        }
        ObjectNode aborts = json.putObject("aborted_by_phase");
        abortedByPhase().forEach(aborts::put);
        ObjectNode throughput = json.putObject("throughput");
        throughput.put("requests_per_s", round(outcomes.size() / soakSeconds));
        throughput.put("tokens_per_s", round(outputTokens() / soakSeconds));
        json.put("soak_s", round(soakSeconds));
        json.put("wall_s", round(wallSeconds));
        json.put("kills", kills.size());
        ArrayNode recovered = json.putArray("recovered");
        kills.stream().filter(kill -> kill.recoveredSeconds >= 0).forEach(kill -> recovered.add(round(kill.recoveredSeconds)));
        ChaosKiller.writeTo(kills, json.putArray("kill_log"));
        ObjectNode resourcesJson = json.putObject("resources");
        resources.forEach((process, samples) -> {
            ArrayNode list = resourcesJson.putArray(process);
            samples.forEach(sample -> sample.writeTo(list.addObject()));
        });
        json.set("growth", JSON.valueToTree(growth));
        json.put("clean", clean());
        ObjectNode setupJson = json.putObject("setup");
        setup.forEach((key, value) -> setupJson.set(key, JSON.valueToTree(value)));
        json.set("divergent_requests", JSON.valueToTree(divergent.subList(0, Math.min(divergent.size(), 20))));
        json.set("failure_examples", JSON.valueToTree(failureExamples()));
        json.set("notes", JSON.valueToTree(notes));
        return json;
    }

    private static void putPerNode(ObjectNode json, Map<String, OptionalInt> values)
    {
        values.forEach((node, value) -> {
            if (value.isPresent()) {
                json.put(node, value.getAsInt());
            }
            else {
                json.putNull(node);
            }
        });
    }

    // a bucket bound in milliseconds; null for none, or for +Inf (no finite bound holds it)
    private static void putMillis(ObjectNode json, String field, OptionalDouble seconds)
    {
        if (seconds.isPresent() && Double.isFinite(seconds.getAsDouble())) {
            json.put(field, round(seconds.getAsDouble() * 1000));
        }
        else {
            json.putNull(field);
        }
    }

    private Map<String, Long> abortedByPhase()
    {
        Map<String, Long> byPhase = new LinkedHashMap<>();
        for (AbortPlan.Phase phase : AbortPlan.Phase.values()) {
            if (phase != AbortPlan.Phase.NONE) {
                byPhase.put(phase.label(), outcomes.stream().filter(o -> o.kind() == RequestOutcome.Kind.ABORTED && o.plan().phase() == phase).count());
            }
        }
        return byPhase;
    }

    private List<String> failureExamples()
    {
        List<String> examples = new ArrayList<>();
        for (RequestOutcome outcome : outcomes) {
            if ((outcome.kind() == RequestOutcome.Kind.FAILED || outcome.kind() == RequestOutcome.Kind.HUNG) && examples.size() < EXAMPLES) {
                examples.add("request " + outcome.index() + " " + outcome.kind().name().toLowerCase(Locale.ROOT)
                        + (outcome.cause().isEmpty() ? "" : " (" + outcome.cause() + ")") + ": " + outcome.detail());
            }
        }
        return examples;
    }

    public String toText()
    {
        StringBuilder text = new StringBuilder();
        text.append("handoff chaos: ").append(setup.get("transfer_backend")).append(", ").append(setup.get("prefills")).append("P1D, ")
                .append(outcomes.size()).append(" requests, abort rate ").append(setup.get("abort_rate")).append(", fail rate ")
                .append(setup.get("fail_rate")).append(", seed ").append(setup.get("seed")).append('\n');
        line(text, "completed", count(RequestOutcome.Kind.COMPLETED) + " (" + percent(count(RequestOutcome.Kind.COMPLETED)) + ")");
        line(text, "aborted", count(RequestOutcome.Kind.ABORTED) + " " + abortedByPhase());
        line(text, "failed", count(RequestOutcome.Kind.FAILED) + (failedByCause().isEmpty() ? "" : " " + failedByCause()));
        line(text, "retried", retriedKnown ? retried.values().stream().mapToLong(Long::longValue).sum() + " " + retried : "unknown (router metrics unreadable)");
        line(text, "divergent", divergent.size() + (divergent.isEmpty() ? "" : " (requests " + divergent.subList(0, Math.min(10, divergent.size())) + ")"));
        line(text, "hung", Long.toString(count(RequestOutcome.Kind.HUNG)));
        line(text, "pages leaked", pagesLeaked.toString().replace("OptionalInt.empty", "unknown").replace("OptionalInt", ""));
        line(text, "held w/o proof", heldWithoutProof.toString().replace("OptionalInt.empty", "unknown").replace("OptionalInt", ""));
        line(text, "unsettled rooms", unsettledRooms.toString().replace("OptionalInt.empty", "unknown").replace("OptionalInt", ""));
        if (!kills.isEmpty()) {
            line(text, "kills", kills.size() + ", recovered " + recoveredKills() + kills.stream().filter(kill -> kill.recoveredSeconds >= 0)
                    .map(kill -> String.format(Locale.ROOT, "%s %.1f s", kill.victim, kill.recoveredSeconds)).toList());
        }
        resources.forEach((process, samples) -> {
            if (!samples.isEmpty()) {
                ResourceSample first = samples.getFirst();
                ResourceSample last = samples.getLast();
                line(text, "resources", String.format(Locale.ROOT, "%s: %d samples; threads %d -> %d, fds %d -> %d, rss %d -> %d MiB, heap %d -> %d MiB",
                        process, samples.size(), first.threads(), last.threads(), first.fds(), last.fds(), first.rssBytes() >> 20, last.rssBytes() >> 20,
                        first.heapUsedBytes() >> 20, last.heapUsedBytes() >> 20));
            }
        });
        growth.forEach(finding -> line(text, "GROWTH", finding));
        line(text, "quarantined now", quarantinedNow.isPresent() ? Integer.toString(quarantinedNow.getAsInt()) : "unknown");
        line(text, "max quarantine", maxQuarantineMillis.isPresent() ? round(maxQuarantineMillis.getAsDouble()) + " ms" : "not exported by the servers");
        quarantines.ifPresent(q -> line(text, "quarantines", q.count() + " ended; p50 <= " + q.p50Seconds().orElse(0) * 1000 + " ms, p99 <= "
                + q.p99Seconds().orElse(0) * 1000 + " ms"));
        line(text, "throughput", String.format(Locale.ROOT, "%.1f requests/s, %.1f tokens/s", outcomes.size() / soakSeconds, outputTokens() / soakSeconds));
        line(text, "time", String.format(Locale.ROOT, "soak %.1f s, wall %.1f s", soakSeconds, wallSeconds));
        failureExamples().forEach(example -> line(text, "example", example));
        notes.forEach(note -> line(text, "note", note));
        text.append(clean() ? "clean: nothing divergent, nothing hung, every room settled and every page back\n" : "NOT CLEAN\n");
        return text.toString();
    }

    private String percent(long count)
    {
        return String.format(Locale.ROOT, "%.0f%%", 100.0 * count / Math.max(1, outcomes.size()));
    }

    private static void line(StringBuilder text, String name, String value)
    {
        text.append(String.format(Locale.ROOT, "  %-16s %s%n", name, value));
    }

    private static double round(double value)
    {
        return Double.isFinite(value) ? Math.round(value * 1000) / 1000.0 : 0;
    }

    /** The tokens of {@code outcome} against the reference's: all must match for a completed request, a prefix for the rest. */
    static boolean matches(RequestOutcome outcome, int[] reference)
    {
        int[] ids = outcome.outputIds();
        if (outcome.kind() == RequestOutcome.Kind.COMPLETED) {
            return Arrays.equals(ids, reference);
        }
        return ids.length <= reference.length && Arrays.equals(ids, Arrays.copyOf(reference, ids.length));
    }
}
