package io.handoff.status;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.handoff.cluster.Member;

import java.util.List;
import java.util.Optional;
import java.util.OptionalDouble;
import java.util.OptionalInt;

import static java.util.Objects.requireNonNull;

/**
 * What {@code handoff cluster status} found: where membership was read, whether that list may be out of date, and
 * every member with what it answered.
 *
 * @param discovery {@code static}, {@code etcd} or {@code kubernetes}
 * @param source the membership source's {@code describe()}
 * @param stale why the membership source says its list may be out of date
 */
public record ClusterStatus(String discovery, String source, Optional<String> stale, List<MemberStatus> members)
{
    public ClusterStatus
    {
        requireNonNull(discovery, "discovery is null");
        requireNonNull(source, "source is null");
        requireNonNull(stale, "stale is null");
        members = List.copyOf(members);
    }

    /** The {@code --json} form: every field, absent values as null. */
    public ObjectNode json()
    {
        ObjectNode root = JsonNodeFactory.instance.objectNode();
        root.put("discovery", discovery);
        root.put("source", source);
        root.put("stale", stale.isPresent());
        root.put("stale_reason", stale.orElse(null));
        ArrayNode list = root.putArray("members");
        for (MemberStatus status : members) {
            member(list.addObject(), status);
        }
        return root;
    }

    private static void member(ObjectNode node, MemberStatus status)
    {
        Member member = status.member();
        node.put("id", member.id());
        node.put("role", member.role().label());
        node.put("incarnation", status.incarnation().isEmpty() ? null : status.incarnation());
        node.put("listed_incarnation", member.incarnation().isEmpty() ? null : member.incarnation());
        node.put("http", member.http().toString());
        node.put("health", status.health().label());
        node.put("reason", status.reason().orElse(null));
        node.put("draining", member.draining());
        node.put("answered_role", status.answeredRole().orElse(null));
        node.put("control", status.control().orElse(null));
        node.put("transfer_backend", status.transferBackend().orElse(null));
        node.put("compatibility", member.compatibility().isEmpty() ? null : member.compatibility());
        node.put("capacity", member.capacity());
        status.suspectPeers().forEach(node.putArray("suspect_peers")::add);
        MemberStatus.Load load = status.load();
        put(node, "requests_running", load.running());
        put(node, "requests_waiting", load.waiting());
        put(node, "kv_pages_used", load.kvPagesUsed());
        put(node, "kv_pages_total", load.kvPagesTotal());
        put(node, "prefix_cache_hit_rate", load.prefixCacheHitRate());
        status.problems().forEach(node.putArray("problems")::add);
    }

    private static void put(ObjectNode node, String field, OptionalInt value)
    {
        if (value.isPresent()) {
            node.put(field, value.getAsInt());
        }
        else {
            node.putNull(field);
        }
    }

    private static void put(ObjectNode node, String field, OptionalDouble value)
    {
        if (value.isPresent()) {
            node.put(field, value.getAsDouble());
        }
        else {
            node.putNull(field);
        }
    }
}
