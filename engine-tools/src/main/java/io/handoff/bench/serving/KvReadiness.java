package io.handoff.bench.serving;

import io.handoff.inspect.NodeTimeline;
import io.handoff.inspect.TimelineFetch;

import java.net.URI;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static java.util.Objects.requireNonNull;

/**
 * Through a router: how long after a request's last prefill forward its KV was ready on the decode side, read from the
 * request timelines ({@code GET /debug/requests/{rid}}): the router's {@code paired} entry names the prefill, whose timeline
 * gives its last {@code forward_done} and its last {@code plan_landed} (both on the prefill's own monotonic clock). Early
 * send shortens exactly this: the pages of earlier chunks have already gone when the last forward ends.
 */
public final class KvReadiness
{
    /** @param millis per request measured; empty with {@code note} saying why when none could be */
    public record Result(Optional<Distribution> millis, int measured, String note) {}

    private static final Pattern PREFILL = Pattern.compile("(?:^| )prefill=(\\S+)");

    private final TimelineFetch fetch;

    public KvReadiness(TimelineFetch fetch)
    {
        this.fetch = requireNonNull(fetch, "fetch is null");
    }

    public Result measure(URI url, List<Sample> samples)
            throws InterruptedException
    {
        List<Sample> completed = samples.stream().filter(Sample::completed).toList();
        if (completed.isEmpty()) {
            return new Result(Optional.empty(), 0, "no request completed");
        }
        List<Double> millis = new ArrayList<>();
        String skipped = "";
        for (Sample sample : completed) {
            NodeTimeline router;
            try {
                router = fetch.fetch(url, sample.rid());
            }
            catch (IllegalStateException e) {
                return new Result(Optional.empty(), 0, "no request timelines: " + e.getMessage());
            }
            if (!router.role().equals("router")) {
                return new Result(Optional.empty(), 0, "not a router (a " + router.role() + "): its KV never moves");
            }
            Optional<String> prefill = router.entries().stream().filter(e -> e.event().equals("paired")).reduce((a, b) -> b)
                    .map(e -> PREFILL.matcher(e.detail())).filter(Matcher::find).map(m -> m.group(1));
            try {
                OptionalLong gap = prefill.isEmpty() ? OptionalLong.empty() : readyAfterLastForward(fetch.fetch(URI.create(prefill.get()), sample.rid()));
                if (gap.isPresent()) {
                    millis.add(gap.getAsLong() / 1000.0);
                }
                else {
                    skipped = "request " + sample.rid() + " has no last forward and landed plan in its prefill's timeline";
                }
            }
            catch (IllegalStateException e) {
                skipped = e.getMessage();
            }
        }
        String note = skipped.isEmpty() ? "" : (completed.size() - millis.size()) + " request(s) not measured, e.g. " + skipped;
        return new Result(Distribution.of(millis.stream().mapToDouble(Double::doubleValue).toArray()), millis.size(), note);
    }

    /** Microseconds from the prefill's last forward to its last landed plan, the last attempt only; empty when either is missing. */
    static OptionalLong readyAfterLastForward(NodeTimeline prefill)
    {
        List<NodeTimeline.Entry> entries = prefill.entries();
        int start = 0;
        for (int i = 0; i < entries.size(); i++) {
            start = entries.get(i).event().equals("queued") ? i : start;
        }
        OptionalLong forward = OptionalLong.empty();
        OptionalLong landed = OptionalLong.empty();
        for (NodeTimeline.Entry entry : entries.subList(start, entries.size())) {
            switch (entry.event()) {
                case "forward_done" -> forward = OptionalLong.of(entry.offsetMicros());
                case "plan_landed" -> landed = OptionalLong.of(entry.offsetMicros());
                default -> { }
            }
        }
        if (forward.isEmpty() || landed.isEmpty()) {
            return OptionalLong.empty();
        }
        return OptionalLong.of(Math.max(0, landed.getAsLong() - forward.getAsLong()));
    }
}
