package io.handoff.demo;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.OptionalDouble;
import java.util.OptionalInt;

/**
 * What the demo reads from one server's {@code /metrics}: whether it is idle, its KV pages by state, the
 * pages its prefix cache holds, and (on a prefill) the KV it has transferred. Names are those of
 * {@code io.handoff.http.ServerMetrics}; a metric a server does not export is empty, never 0.
 *
 * @param transferBytes {@code handoff_kv_transfer_bytes_total}: KV bytes this server sent
 * @param transferBusySeconds {@code handoff_kv_transfer_busy_seconds_total}: time with at least one transfer in flight
 * @param promptTokens {@code handoff_prompt_tokens_total}: prompt tokens of the requests this server admitted
 * @param receivedBytesByRank {@code handoff_kv_received_rank_bytes_total} by its {@code rank} label, rank 0 first: the KV bytes each
 *         tensor-parallel rank of this decode received (empty on a prefill, or from a server that does not export it)
 */
public record NodeMetrics(
        OptionalInt running,
        OptionalInt waiting,
        OptionalInt inFlight,
        OptionalInt poolPages,
        OptionalInt freePages,
        OptionalInt prefixCachePages,
        OptionalDouble transferBytes,
        OptionalDouble transferBusySeconds,
        OptionalDouble earlyBytes,
        OptionalDouble kvReadySeconds,
        OptionalDouble kvReadyRooms,
        OptionalDouble promptTokens,
        List<Double> receivedBytesByRank)
{
    public static final String RUNNING = "handoff_running_requests";
    public static final String WAITING = "handoff_waiting_requests";
    public static final String IN_FLIGHT = "handoff_server_inflight_requests";
    public static final String POOL_PAGES = "handoff_kv_pool_pages";
    public static final String PAGES = "handoff_kv_pages";
    public static final String PREFIX_CACHE_PAGES = "handoff_prefix_cache_pages";
    public static final String TRANSFER_BYTES = "handoff_kv_transfer_bytes_total";
    public static final String TRANSFER_BUSY_SECONDS = "handoff_kv_transfer_busy_seconds_total";
    public static final String EARLY_BYTES = "handoff_kv_transfer_early_bytes_total";
    public static final String KV_READY_SECONDS = "handoff_kv_ready_after_forward_seconds_total";
    public static final String KV_READY_ROOMS = "handoff_kv_ready_rooms_total";
    public static final String PROMPT_TOKENS = "handoff_prompt_tokens_total";
    public static final String RECEIVED_BYTES = "handoff_kv_received_rank_bytes_total";

    public NodeMetrics
    {
        receivedBytesByRank = List.copyOf(receivedBytesByRank);
    }

    public NodeMetrics(OptionalInt running, OptionalInt waiting, OptionalInt inFlight, OptionalInt poolPages, OptionalInt freePages,
            OptionalInt prefixCachePages, OptionalDouble transferBytes, OptionalDouble transferBusySeconds)
    {
        this(running, waiting, inFlight, poolPages, freePages, prefixCachePages, transferBytes, transferBusySeconds,
                OptionalDouble.empty(), OptionalDouble.empty(), OptionalDouble.empty(), OptionalDouble.empty(), List.of());
    }

    public static NodeMetrics from(PrometheusSamples samples)
    {
        OptionalInt pool = integer(samples.value(POOL_PAGES));
        if (pool.isEmpty()) {
            // The states add up to the pool; a server without the total still tells it.
            pool = integer(samples.value(PAGES));
        }
        return new NodeMetrics(
                integer(samples.value(RUNNING)),
                integer(samples.value(WAITING)),
                integer(samples.value(IN_FLIGHT)),
                pool,
                integer(samples.value(PAGES, Map.of("state", "free"))),
                integer(samples.value(PREFIX_CACHE_PAGES)),
                samples.value(TRANSFER_BYTES),
                samples.value(TRANSFER_BUSY_SECONDS),
                samples.value(EARLY_BYTES),
                samples.value(KV_READY_SECONDS),
                samples.value(KV_READY_ROOMS),
                samples.value(PROMPT_TOKENS),
                byRank(samples));
    }

    /** The samples of {@link #RECEIVED_BYTES} in rank order; empty when a rank from 0 up to the highest one is missing. */
    private static List<Double> byRank(PrometheusSamples samples)
    {
        List<Double> bytes = new ArrayList<>();
        for (int rank = 0; ; rank++) {
            OptionalDouble value = samples.value(RECEIVED_BYTES, Map.of("rank", Integer.toString(rank)));
            if (value.isEmpty()) {
                return bytes;
            }
            bytes.add(value.getAsDouble());
        }
    }

    private static OptionalInt integer(OptionalDouble value)
    {
        return value.isPresent() ? OptionalInt.of((int) Math.round(value.getAsDouble())) : OptionalInt.empty();
    }

    /** No request running, waiting or in flight in the HTTP server (a missing gauge counts as 0). */
    public boolean idle()
    {
        return running.orElse(0) == 0 && waiting.orElse(0) == 0 && inFlight.orElse(0) == 0;
    }

    /**
     * Pages that are neither free nor held by the prefix cache: owned by a request, receiving, or
     * quarantined. Once the server is idle, every one of them is a page that was not given back.
     */
    public OptionalInt leakedPages()
    {
        if (poolPages.isEmpty() || freePages.isEmpty() || prefixCachePages.isEmpty()) {
            return OptionalInt.empty();
        }
        return OptionalInt.of(poolPages.getAsInt() - freePages.getAsInt() - prefixCachePages.getAsInt());
    }
}
