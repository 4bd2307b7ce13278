package io.handoff.inspect;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static java.util.Objects.requireNonNull;

/**
 * The timelines of one request on several nodes as one: every entry on one time axis (each node's wall clock at its
 * first entry, advanced by its monotonic clock, so a node's own entries never reorder), offsets from the earliest
 * entry, where the time went on the request's path (queue, prefill compute, waiting for the decode, transfer,
 * commit, first token, decode), and whether the KV the decode committed matched what the prefill sent.
 */
public record MergedTimeline(String rid, List<NodeTimeline> nodes, List<Line> lines, List<Phase> phases, Kv kv, Transfer transfer,
        Optional<String> clockNote)
{
    /** One entry of one node, at {@code offsetMicros} from the earliest entry of all. */
    public record Line(long offsetMicros, NodeTimeline node, NodeTimeline.Entry entry) {}

    /** A stretch of the request's path: from one event to another, on the nodes named by {@code where}. */
    public record Phase(String name, String where, long micros) {}

    public enum KvStatus
    {
        /** The decode verified every page's checksum against the prefill's. */
        VERIFIED,
        MISMATCH,
        /** Committed without checksums (kv-fidelity off). */
        UNVERIFIED,
        /** Colocated: nothing was transferred. */
        NOT_TRANSFERRED,
        /** No decode timeline says. */
        UNKNOWN
    }

    public record Kv(KvStatus status, String detail) {}

    /** What the prefill's plans moved. */
    public record Transfer(int plansPosted, int plansLanded, int plansFailed, long bytesLanded, int earlyPlans) {}

    private static final Pattern BYTES = Pattern.compile("(?:^| )bytes=(\\d+)");
    private static final Pattern PAGES = Pattern.compile("(?:^| )pages=(\\d+)");

    public MergedTimeline
    {
        requireNonNull(rid, "rid is null");
        nodes = List.copyOf(nodes);
        lines = List.copyOf(lines);
        phases = List.copyOf(phases);
        requireNonNull(kv, "kv is null");
        requireNonNull(transfer, "transfer is null");
        requireNonNull(clockNote, "clockNote is null");
    }

    public static MergedTimeline merge(String rid, List<NodeTimeline> nodes)
    {
        requireNonNull(rid, "rid is null");
        if (nodes.isEmpty()) {
            throw new IllegalArgumentException("no timeline to merge for rid '" + rid + "'");
        }
        record Aligned(long micros, int node, int seq, NodeTimeline timeline, NodeTimeline.Entry entry) {}
        List<Aligned> all = new ArrayList<>();
        for (int n = 0; n < nodes.size(); n++) {
            NodeTimeline node = nodes.get(n);
            for (int i = 0; i < node.entries().size(); i++) {
                NodeTimeline.Entry entry = node.entries().get(i);
                all.add(new Aligned(node.alignedMicros(entry), n, i, node, entry));
            }
        }
        // within a node the aligned time never decreases, so ties keep each node's own order
        all.sort(Comparator.comparingLong(Aligned::micros).thenComparingInt(Aligned::node).thenComparingInt(Aligned::seq));
        long first = all.isEmpty() ? 0 : all.getFirst().micros();
        List<Line> lines = all.stream().map(a -> new Line(a.micros() - first, a.timeline(), a.entry())).toList();
        Path path = new Path(nodes);
        return new MergedTimeline(rid, nodes, lines, path.phases(), path.kv(), path.transfer(), clockNote(nodes));
    }

    /** From the first entry to the last, across nodes. */
    public long spanMicros()
    {
        return lines.isEmpty() ? 0 : lines.getLast().offsetMicros();
    }

    private static Optional<String> clockNote(List<NodeTimeline> nodes)
    {
        Set<String> hosts = new LinkedHashSet<>();
        nodes.forEach(node -> hosts.add(node.host()));
        if (hosts.size() < 2) {
            return Optional.empty();
        }
        return Optional.of("the nodes run on different hosts (" + String.join(", ", hosts) + "): their entries are aligned by wall clock,"
                + " so offsets between nodes are only as exact as the hosts' clock sync (NTP: often a millisecond or more); offsets"
                + " within one node are exact");
    }

    /** The request's path through the nodes, read off the events each recorded (for phases, its last attempt on each node). */
    private static final class Path
    {
        private final Optional<NodeTimeline> router;
        private final Optional<NodeTimeline> prefill;
        private final Optional<NodeTimeline> decode;
        private final Optional<NodeTimeline> colocated;

        private final Optional<NodeTimeline> decodeAll;

        Path(List<NodeTimeline> nodes)
        {
            this.router = role(nodes, "router").map(Path::lastAttempt);
            this.prefill = role(nodes, "prefill").map(Path::lastAttempt);
            this.decode = role(nodes, "decode").map(Path::lastAttempt);
            this.colocated = role(nodes, "colocated").map(Path::lastAttempt);
            this.decodeAll = role(nodes, "decode");
        }

        private static Optional<NodeTimeline> role(List<NodeTimeline> nodes, String role)
        {
            return nodes.stream().filter(node -> node.role().equals(role)).findFirst();
        }

        /** A retried request's node continues its timeline with a new queued (or received): the last attempt starts there. */
        private static NodeTimeline lastAttempt(NodeTimeline node)
        {
            List<NodeTimeline.Entry> entries = node.entries();
            int start = 0;
            for (int i = 0; i < entries.size(); i++) {
                if (entries.get(i).event().equals("queued") || entries.get(i).event().equals("received")) {
                    start = i;
                }
            }
            return new NodeTimeline(node.url(), node.role(), node.host(), node.pid(), node.rid(), node.startEpochMicros(), node.ended(),
                    node.dropped(), entries.subList(start, entries.size()));
        }

        List<Phase> phases()
        {
            List<Phase> phases = new ArrayList<>();
            Optional<NodeTimeline> compute = prefill.or(() -> colocated);
            String on = prefill.isPresent() ? "prefill" : "colocated";
            router.ifPresent(r -> compute.ifPresent(c -> add(phases, "router to " + on, "router, " + on, first(r, "received"), first(c, "queued"))));
            compute.ifPresent(c -> {
                add(phases, "queue", on, first(c, "queued"), first(c, "admitted"));
                add(phases, "prefill compute", on, first(c, "admitted"), last(c, "forward_done"));
            });
            prefill.ifPresent(p -> {
                OptionalLong computed = last(p, "forward_done");
                OptionalLong bootstrap = first(p, "bootstrap");
                if (computed.isPresent() && bootstrap.isPresent()) {
                    phases.add(new Phase("waiting for the decode", "prefill", Math.max(0, bootstrap.getAsLong() - computed.getAsLong())));
                    OptionalLong ready = OptionalLong.of(Math.max(computed.getAsLong(), bootstrap.getAsLong()));
                    add(phases, "transfer", "prefill", ready, last(p, "plan_landed"));
                }
                decode.ifPresent(d -> add(phases, "commit", "prefill, decode", last(p, "plan_landed"), first(d, "commit")));
            });
            decode.ifPresent(d -> {
                add(phases, "decode queue (in parallel)", "decode", first(d, "queued"), first(d, "admitted"));
                add(phases, "commit to first token", "decode", first(d, "commit"), first(d, "first_token"));
                add(phases, "decode", "decode", first(d, "first_token"), end(d));
            });
            colocated.ifPresent(c -> {
                add(phases, "first token", "colocated", last(c, "forward_done"), first(c, "first_token"));
                add(phases, "decode", "colocated", first(c, "first_token"), end(c));
            });
            return phases;
        }

        Kv kv()
        {
            if (decode.isEmpty()) {
                return colocated.isPresent() && prefill.isEmpty()
                        ? new Kv(KvStatus.NOT_TRANSFERRED, "colocated: the KV never left the node")
                        : new Kv(KvStatus.UNKNOWN, "no decode timeline: add the decode's URL to see whether the KV matched");
            }
            NodeTimeline d = decode.get();
            Optional<NodeTimeline.Entry> mismatch = entry(d, "checksum_mismatch");
            if (mismatch.isPresent()) {
                return new Kv(KvStatus.MISMATCH, mismatch.get().detail());
            }
            long earlier = decodeAll.get().entries().stream().filter(e -> e.event().equals("checksum_mismatch")).count();
            String retried = earlier == 0 ? "" : " (after " + earlier + " earlier attempt(s) with a checksum mismatch)";
            Optional<NodeTimeline.Entry> verified = entry(d, "checksums_verified");
            if (verified.isPresent()) {
                return new Kv(KvStatus.VERIFIED, "the decode verified the checksums of " + number(PAGES, verified.get().detail()).orElse(0)
                        + " page(s) against the prefill's before it committed" + retried);
            }
            if (entry(d, "commit").isPresent()) {
                return new Kv(KvStatus.UNVERIFIED, "the decode committed without checksums (handoff.debug.kv-fidelity = off)");
            }
            return new Kv(KvStatus.UNKNOWN, entry(d, "room_failed").map(e -> "the room failed before a commit: " + e.detail())
                    .orElse("the decode has not committed the KV"));
        }

        Transfer transfer()
        {
            if (prefill.isEmpty()) {
                return new Transfer(0, 0, 0, 0, 0);
            }
            int posted = 0;
            int landed = 0;
            int failed = 0;
            int early = 0;
            long bytes = 0;
            for (NodeTimeline.Entry entry : prefill.get().entries()) {
                switch (entry.event()) {
                    case "plan_posted" -> {
                        posted++;
                        early += (" " + entry.detail() + " ").contains(" early ") ? 1 : 0;
                    }
                    case "plan_landed" -> {
                        landed++;
                        bytes += number(BYTES, entry.detail()).orElse(0);
                    }
                    case "plan_failed" -> failed++;
                    default -> { }
                }
            }
            return new Transfer(posted, landed, failed, bytes, early);
        }

        private static void add(List<Phase> phases, String name, String where, OptionalLong from, OptionalLong to)
        {
            if (from.isPresent() && to.isPresent()) {
                phases.add(new Phase(name, where, to.getAsLong() - from.getAsLong()));
            }
        }

        private static OptionalLong first(NodeTimeline node, String event)
        {
            return node.entries().stream().filter(e -> e.event().equals(event)).mapToLong(node::alignedMicros).findFirst();
        }

        private static OptionalLong last(NodeTimeline node, String event)
        {
            return node.entries().stream().filter(e -> e.event().equals(event)).mapToLong(node::alignedMicros).reduce((a, b) -> b);
        }

        private static OptionalLong end(NodeTimeline node)
        {
            OptionalLong done = first(node, "done");
            return done.isPresent() ? done : first(node, "failed");
        }

        private static Optional<NodeTimeline.Entry> entry(NodeTimeline node, String event)
        {
            return node.entries().stream().filter(e -> e.event().equals(event)).findFirst();
        }
    }

    private static OptionalLong number(Pattern pattern, String detail)
    {
        Matcher matcher = pattern.matcher(detail);
        return matcher.find() ? OptionalLong.of(Long.parseLong(matcher.group(1))) : OptionalLong.empty();
    }
}
