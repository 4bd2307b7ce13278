package io.handoff.http.base;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.handoff.trace.RequestTimeline;
import io.handoff.trace.Timelines;

import java.io.IOException;
import java.net.InetAddress;
import java.net.UnknownHostException;
import java.util.Map;

import static java.util.Objects.requireNonNull;

/**
 * {@code GET /debug/requests/{rid}}: one request's timeline on this node, as {@code handoff inspect} reads it; and
 * {@code GET /debug/requests}: the rids kept. Debug routes: they exist only while {@link DebugEndpoints} allows.
 */
public final class TimelineEndpoint
{
    public static final String LIST = "/debug/requests";
    public static final String ONE = "/debug/requests/*";
    private static final String HOST = hostName();

    private final Timelines timelines;
    private final String role;

    /** @param role what this node is: colocated, prefill, decode or router */
    public TimelineEndpoint(Timelines timelines, String role)
    {
        this.timelines = requireNonNull(timelines, "timelines is null");
        this.role = requireNonNull(role, "role is null");
    }

    /** The two routes, to add to a server's route table. */
    public Map<String, HttpRoutes.Route> routes()
    {
        return Map.of(
                LIST, new HttpRoutes.Route("GET", this::list, HttpRoutes.Access.DEBUG),
                ONE, new HttpRoutes.Route("GET", this::one, HttpRoutes.Access.DEBUG));
    }

    private void list(Exchange exchange)
            throws IOException
    {
        ObjectNode body = node();
        body.put("capacity", timelines.capacity());
        ArrayNode rids = body.putArray("rids");
        timelines.rids().forEach(rids::add);
        exchange.sendJson(200, body);
    }

    private void one(Exchange exchange)
            throws IOException
    {
        String rid = exchange.path().substring(LIST.length() + 1);
        RequestTimeline timeline = timelines.find(rid).orElseThrow(() -> ApiError.notFound("unknown_rid", "rid", timelines.capacity() == 0
                ? "this " + role + " keeps no request timelines (handoff.debug.timeline-requests = 0)"
                : "this " + role + " has no timeline for rid '" + rid + "': it keeps the last " + timelines.capacity()
                        + " requests (handoff.debug.timeline-requests), and this rid is not one of them (never sent here, or evicted)"));
        exchange.sendJson(200, render(timeline.snapshot()));
    }

    private ObjectNode render(RequestTimeline.Snapshot snapshot)
    {
        ObjectNode body = node();
        body.put("rid", snapshot.rid());
        body.put("start_epoch_us", snapshot.startEpochMicros());
        body.put("ended", snapshot.ended());
        body.put("dropped", snapshot.dropped());
        ArrayNode entries = body.putArray("entries");
        for (RequestTimeline.Entry entry : snapshot.entries()) {
            ObjectNode item = entries.addObject();
            item.put("event", entry.event().label());
            item.put("epoch_us", entry.epochMicros());
            item.put("offset_us", entry.offsetNanos() / 1_000);
            item.put("detail", entry.detail());
        }
        return body;
    }

    private ObjectNode node()
    {
        ObjectNode body = JsonFields.MAPPER.createObjectNode();
        body.put("role", role);
        // handoff inspect compares it: wall clocks of different hosts are only as close as their clock sync
        body.put("host", HOST);
        body.put("pid", ProcessHandle.current().pid());
        return body;
    }

    private static String hostName()
    {
        try {
            return InetAddress.getLocalHost().getHostName();
        }
        catch (UnknownHostException e) {
            return "unknown";
        }
    }
}
