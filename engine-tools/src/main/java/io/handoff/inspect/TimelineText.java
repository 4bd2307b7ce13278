package io.handoff.inspect;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;

import java.util.Locale;

/** How {@code handoff inspect} prints a {@link MergedTimeline}: as aligned lines and a summary, or as JSON. */
public final class TimelineText
{
    private TimelineText() {}

    /** One line per event (offset from the first event, node, event, details), then where the time went and whether the KV matched. */
    public static String text(MergedTimeline merged)
    {
        StringBuilder out = new StringBuilder();
        out.append("request ").append(merged.rid()).append(": ").append(merged.lines().size()).append(" events on ")
                .append(merged.nodes().size()).append(" node(s), ").append(ms(merged.spanMicros())).append(" from the first to the last\n");
        int labelWidth = merged.nodes().stream().mapToInt(node -> node.label().length()).max().orElse(0);
        int eventWidth = merged.lines().stream().mapToInt(line -> line.entry().event().length()).max().orElse(0);
        for (MergedTimeline.Line line : merged.lines()) {
            out.append(String.format(Locale.ROOT, "%12s  %-" + labelWidth + "s  %-" + eventWidth + "s  %s", "+" + ms(line.offsetMicros()),
                    line.node().label(), line.entry().event(), line.entry().detail()).stripTrailing()).append('\n');
        }
        for (NodeTimeline node : merged.nodes()) {
            if (node.dropped() > 0) {
                out.append("  (").append(node.label()).append(" dropped ").append(node.dropped())
                        .append(" entries past its cap of entries per request)\n");
            }
            if (!node.ended()) {
                out.append("  (").append(node.label()).append(" has not finished this request yet)\n");
            }
        }
        out.append("where the time went:\n");
        int nameWidth = merged.phases().stream().mapToInt(phase -> phase.name().length()).max().orElse(0);
        for (MergedTimeline.Phase phase : merged.phases()) {
            out.append(String.format(Locale.ROOT, "  %-" + nameWidth + "s  %12s  (%s)", phase.name(), ms(phase.micros()), phase.where())).append('\n');
        }
        MergedTimeline.Transfer transfer = merged.transfer();
        if (transfer.plansPosted() > 0) {
            out.append(String.format(Locale.ROOT, "  transfer: %d plan(s) posted (%d before their forward finished), %d landed, %d failed, %d bytes landed%n",
                    transfer.plansPosted(), transfer.earlyPlans(), transfer.plansLanded(), transfer.plansFailed(), transfer.bytesLanded()));
        }
        MergedTimeline.Kv kv = merged.kv();
        out.append("KV: ").append(kv.status().name().toLowerCase(Locale.ROOT).replace('_', ' ')).append(": ").append(kv.detail()).append('\n');
        merged.clockNote().ifPresent(note -> out.append("note: ").append(note).append('\n'));
        return out.toString();
    }

    /** The merged form: every node, every event with its offset, the phases, the transfer and the KV verdict. */
    public static ObjectNode json(MergedTimeline merged, ObjectMapper mapper)
    {
        ObjectNode root = mapper.createObjectNode();
        root.put("rid", merged.rid());
        root.put("span_us", merged.spanMicros());
        ArrayNode nodes = root.putArray("nodes");
        for (NodeTimeline node : merged.nodes()) {
            ObjectNode item = nodes.addObject();
            item.put("url", node.url());
            item.put("role", node.role());
            item.put("host", node.host());
            item.put("pid", node.pid());
            item.put("start_epoch_us", node.startEpochMicros());
            item.put("ended", node.ended());
            item.put("dropped", node.dropped());
        }
        ArrayNode events = root.putArray("events");
        for (MergedTimeline.Line line : merged.lines()) {
            ObjectNode item = events.addObject();
            item.put("offset_us", line.offsetMicros());
            item.put("role", line.node().role());
            item.put("url", line.node().url());
            item.put("event", line.entry().event());
            item.put("epoch_us", line.entry().epochMicros());
            item.put("detail", line.entry().detail());
        }
        ArrayNode phases = root.putArray("phases");
        for (MergedTimeline.Phase phase : merged.phases()) {
            ObjectNode item = phases.addObject();
            item.put("name", phase.name());
            item.put("where", phase.where());
            item.put("us", phase.micros());
        }
        MergedTimeline.Transfer transfer = merged.transfer();
        ObjectNode moved = root.putObject("transfer");
        moved.put("plans_posted", transfer.plansPosted());
        moved.put("plans_early", transfer.earlyPlans());
        moved.put("plans_landed", transfer.plansLanded());
        moved.put("plans_failed", transfer.plansFailed());
        moved.put("bytes_landed", transfer.bytesLanded());
        ObjectNode kv = root.putObject("kv");
        kv.put("status", merged.kv().status().name().toLowerCase(Locale.ROOT));
        kv.put("detail", merged.kv().detail());
        merged.clockNote().ifPresent(note -> root.put("clock_note", note));
        return root;
    }

    static String ms(long micros)
    {
        return String.format(Locale.ROOT, "%.3f ms", micros / 1000.0);
    }
}
