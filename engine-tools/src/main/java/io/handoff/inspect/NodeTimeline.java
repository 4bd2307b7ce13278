package io.handoff.inspect;

import com.fasterxml.jackson.databind.JsonNode;

import java.util.ArrayList;
import java.util.List;

import static java.util.Objects.requireNonNull;

/**
 * One node's timeline of a request, as its {@code GET /debug/requests/{rid}} answered it.
 *
 * @param url where it was fetched from
 * @param role what the node said it is: router, prefill, decode or colocated
 * @param host the node's host name (wall clocks of different hosts agree only as far as their clock sync)
 * @param startEpochMicros the node's wall-clock time at its first entry
 */
public record NodeTimeline(String url, String role, String host, long pid, String rid, long startEpochMicros, boolean ended, int dropped,
        List<Entry> entries)
{
    /** @param offsetMicros monotonic time since the node's first entry */
    public record Entry(String event, long epochMicros, long offsetMicros, String detail)
    {
        public Entry
        {
            requireNonNull(event, "event is null");
            requireNonNull(detail, "detail is null");
        }
    }

    public NodeTimeline
    {
        requireNonNull(url, "url is null");
        requireNonNull(role, "role is null");
        requireNonNull(host, "host is null");
        requireNonNull(rid, "rid is null");
        entries = List.copyOf(entries);
    }

    /** Reads a {@code /debug/requests/{rid}} body; a body that is not one is an {@link IllegalArgumentException} naming the field. */
    public static NodeTimeline parse(String url, JsonNode body)
    {
        List<Entry> entries = new ArrayList<>();
        JsonNode list = field(url, body, "entries");
        if (!list.isArray()) {
            throw new IllegalArgumentException(url + " answered a timeline whose 'entries' is not a list");
        }
        for (JsonNode entry : list) {
            entries.add(new Entry(field(url, entry, "event").asText(), field(url, entry, "epoch_us").asLong(), field(url, entry, "offset_us").asLong(),
                    entry.path("detail").asText("")));
        }
        return new NodeTimeline(url, field(url, body, "role").asText(), body.path("host").asText("unknown"), body.path("pid").asLong(-1),
                field(url, body, "rid").asText(), field(url, body, "start_epoch_us").asLong(), body.path("ended").asBoolean(false),
                body.path("dropped").asInt(0), entries);
    }

    private static JsonNode field(String url, JsonNode node, String name)
    {
        JsonNode value = node.get(name);
        if (value == null || value.isNull()) {
            throw new IllegalArgumentException(url + " answered something that is not a request timeline: no '" + name + "' field");
        }
        return value;
    }

    /** The node as a line of output names it, e.g. {@code prefill http://10.0.0.5:30000}. */
    public String label()
    {
        return role + " " + url;
    }

    /** Entry {@code i}'s time on the node's wall clock, anchored once and advanced by its monotonic clock (never backwards). */
    long alignedMicros(Entry entry)
    {
        return startEpochMicros + entry.offsetMicros();
    }
}
