package io.handoff.status;

import io.handoff.cluster.Member;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.OptionalInt;

/**
 * The table {@code handoff cluster status} prints: a line on where membership came from, one row per member, then a
 * note for each member that is not healthy or whose answers did not add up. A value a member did not give is {@code -}.
 */
public final class StatusTable
{
    /** Incarnations are 32 hex digits; this many tell them apart in a table ({@code --json} has them whole). */
    static final int SHORT_INCARNATION = 8;
    private static final List<String> HEADER = List.of("MEMBER", "ROLE", "INCARNATION", "HTTP", "HEALTH", "LOAD", "KV PAGES", "CACHE HIT", "DRAINING");

    private StatusTable() {}

    public static String render(ClusterStatus status)
    {
        StringBuilder out = new StringBuilder();
        out.append("membership: ").append(status.discovery()).append(", ").append(status.source()).append(", ")
                .append(status.members().size()).append(status.members().size() == 1 ? " member" : " members").append('\n');
        status.stale().ifPresent(reason -> out.append("STALE: the source may be out of date: ").append(reason).append('\n'));
        if (status.members().isEmpty()) {
            return out.append("no members are listed\n").toString();
        }
        List<List<String>> rows = new ArrayList<>();
        rows.add(HEADER);
        for (MemberStatus member : status.members()) {
            rows.add(row(member));
        }
        int[] widths = new int[HEADER.size()];
        for (List<String> row : rows) {
            for (int i = 0; i < row.size(); i++) {
                widths[i] = Math.max(widths[i], row.get(i).length());
            }
        }
        for (List<String> row : rows) {
            StringBuilder line = new StringBuilder();
            for (int i = 0; i < row.size(); i++) {
                line.append(i == 0 ? "" : "  ").append(i == row.size() - 1 ? row.get(i) : pad(row.get(i), widths[i]));
            }
            out.append(line.toString().stripTrailing()).append('\n');
        }
        for (MemberStatus member : status.members()) {
            member.reason().ifPresent(reason -> out.append(member.member().id()).append(": ").append(member.health().label()).append(": ")
                    .append(reason).append('\n'));
            if (!member.suspectPeers().isEmpty()) {
                out.append(member.member().id()).append(": holds suspect ").append(String.join(", ", member.suspectPeers())).append('\n');
            }
            member.problems().forEach(problem -> out.append(member.member().id()).append(": ").append(problem).append('\n'));
        }
        return out.toString();
    }

    private static List<String> row(MemberStatus status)
    {
        Member member = status.member();
        MemberStatus.Load load = status.load();
        String incarnation = status.incarnation();
        return List.of(
                member.id(),
                member.role().label(),
                incarnation.isEmpty() ? "-" : incarnation.substring(0, Math.min(SHORT_INCARNATION, incarnation.length())),
                member.http().toString(),
                status.health().label(),
                load.running().isEmpty() && load.waiting().isEmpty() ? "-" : text(load.running()) + " run, " + text(load.waiting()) + " wait",
                load.kvPagesUsed().isEmpty() || load.kvPagesTotal().isEmpty() ? "-" : load.kvPagesUsed().getAsInt() + "/" + load.kvPagesTotal().getAsInt(),
                load.prefixCacheHitRate().isEmpty() ? "-" : String.format(Locale.ROOT, "%.1f%%", 100 * load.prefixCacheHitRate().getAsDouble()),
                member.draining() ? "yes" : "no");
    }

    private static String text(OptionalInt value)
    {
        return value.isPresent() ? Integer.toString(value.getAsInt()) : "-";
    }

    private static String pad(String text, int width)
    {
        return text + " ".repeat(width - text.length());
    }
}
