package io.handoff.http;

import io.handoff.core.disagg.Disaggregation;
import io.handoff.core.disagg.peer.TransferStats;
import io.handoff.http.base.PrometheusText;

import java.util.LinkedHashMap;
import java.util.Map;

/** The {@code /metrics} lines of a prefill or decode: what moved, how fast, and how rooms ended. */
final class DisaggregationMetrics
{
    private DisaggregationMetrics() {}

    static String render(Disaggregation disaggregation)
    {
        TransferStats stats = disaggregation.stats();
        PrometheusText out = new PrometheusText();
        out.counter("handoff_kv_transfer_bytes_total", "KV bytes this prefill transferred to decodes (plans completed).", stats.bytes());
        long[] received = disaggregation.receivedBytesByRank();
        if (received.length > 0) {
            Map<String, Long> byRank = new LinkedHashMap<>();
            long total = 0;
            for (int rank = 0; rank < received.length; rank++) {
                byRank.put(Integer.toString(rank), received[rank]);
                total += received[rank];
            }
            out.counter("handoff_kv_received_bytes_total", "KV bytes this decode received in rooms that succeeded, over all its ranks (pages "
                    + "its prefix cache held are not received).", total);
            out.labelled("handoff_kv_received_rank_bytes_total", "KV bytes this decode received in rooms that succeeded, by tensor-parallel "
                    + "(or data-parallel) rank: each rank receives the KV heads it holds.", "counter", "rank", byRank);
            out.counter("handoff_decode_prefix_hit_tokens_total", "Prompt tokens of routed requests whose KV this decode's prefix cache "
                    + "held, so that the prefill did not send them (handoff.disaggregation.decode-prefix-cache).", disaggregation.prefixHitTokens());
        }
        out.counter("handoff_kv_transfer_busy_seconds_total", "Wall time with at least one transfer plan in flight.", stats.busySeconds());
        out.counter("handoff_kv_transfer_early_bytes_total",
                "KV bytes posted before the forward that wrote them had completed (early send of the cached prefix).", stats.earlyBytes());
        out.labelled("handoff_kv_transfer_plans_total", "Transfer plans by outcome.", "counter", "outcome",
                Map.of("completed", stats.plansCompleted(), "failed", stats.plansFailed()));
        out.labelled("handoff_disagg_rooms_total", "Rooms (per-request transfer sessions) by terminal outcome.", "counter", "outcome",
                Map.of("success", stats.roomsSucceeded(), "failed", stats.roomsFailed()));
        out.counter("handoff_disagg_messages_ignored_total", "Control messages a room ignored (duplicates, late or out of order).",
                stats.messagesIgnored());
        out.counter("handoff_disagg_messages_dropped_total",
                "Control messages dropped: for a retired room generation, or a drain ack from another prefill than the room's.",
                disaggregation.droppedMessages());
        out.counter("handoff_kv_ready_after_forward_seconds_total",
                "Over rooms that succeeded: time from the last chunk's forward completing to the room's KV being in the decode's memory.",
                stats.kvReadySeconds());
        out.counter("handoff_kv_ready_rooms_total", "Rooms counted in handoff_kv_ready_after_forward_seconds_total.", stats.kvReadyRooms());
        out.counter("handoff_cluster_auth_failures_total",
                "Cluster connections refused for failing authentication (or speaking before their hello), and this node's own failed attempts.",
                disaggregation.authFailures());
        out.family("handoff_connections_refused_total", "Connections a cluster listener (control, transfer) dropped or refused before "
                + "admitting them, by listener and reason: limit (a cap on unadmitted connections), hello-timeout (no accepted hello in "
                + "time), protocol, malformed, closed-before-hello, and authentication failures.", "counter");
        disaggregation.refusals().counts().forEach((key, count) -> {
            Map<String, String> labels = new LinkedHashMap<>();
            labels.put("listener", key.listener());
            labels.put("reason", key.reason());
            out.sample("handoff_connections_refused_total", labels, count);
        });
        out.gauge("handoff_disagg_rooms_unsettled", "Rooms not final yet by the release rules: transferring, draining, owing or awaiting a "
                + "drain ack, or holding quarantined pages that wait for their proof. 0 on an idle server whose rooms all settled.",
                disaggregation.unsettledRooms());
        out.gauge("handoff_suspect_peers", "Prefills this decode holds suspect: a failed room of theirs waited longer than "
                + "handoff.disaggregation.drain-deadline for its drain ack; their pages stay quarantined until a proof.",
                disaggregation.suspectPeers().size());
        out.gauge("handoff_early_send_enabled", "1 when early send of the cached prefix is on (see /bootstrap for the reason).",
                disaggregation.earlySend().enabled() ? 1 : 0);
        return out.toString();
    }
}
