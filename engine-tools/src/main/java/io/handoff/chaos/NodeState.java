package io.handoff.chaos;

import io.handoff.demo.NodeMetrics;
import io.handoff.demo.PrometheusSamples;

import java.util.Map;
import java.util.OptionalDouble;
import java.util.OptionalInt;

/**
 * What the soak reads from one server's {@code /metrics} once the requests are over: whether it is idle, the pages
 * neither free nor in the prefix cache (held by a request, receiving, or quarantined), the quarantined pages (once idle
 * and settled, each is held without proof), the rooms not settled yet, and the longest a page has been in quarantine (a
 * gauge not every build exports).
 */
record NodeState(String name, boolean reachable, boolean idle, OptionalInt heldPages, OptionalInt quarantined, OptionalDouble longestQuarantineSeconds,
        OptionalInt unsettledRooms)
{
    static final String QUARANTINE_LONGEST = "handoff_kv_quarantine_longest_seconds";
    static final String UNSETTLED_ROOMS = "handoff_disagg_rooms_unsettled";

    static NodeState unreachable(String name)
    {
        return new NodeState(name, false, false, OptionalInt.empty(), OptionalInt.empty(), OptionalDouble.empty(), OptionalInt.empty());
    }

    static NodeState from(String name, PrometheusSamples samples)
    {
        NodeMetrics metrics = NodeMetrics.from(samples);
        OptionalDouble quarantined = samples.value(NodeMetrics.PAGES, Map.of("state", "quarantined"));
        return new NodeState(name, true, metrics.idle(), metrics.leakedPages(),
                quarantined.isPresent() ? OptionalInt.of((int) Math.round(quarantined.getAsDouble())) : OptionalInt.empty(),
                samples.value(QUARANTINE_LONGEST), integer(samples.value(UNSETTLED_ROOMS)));
    }

    private static OptionalInt integer(OptionalDouble value)
    {
        return value.isPresent() ? OptionalInt.of((int) Math.round(value.getAsDouble())) : OptionalInt.empty();
    }

    /** Idle, every room final by the release rules, and every page back: nothing left to wait for. */
    boolean settled()
    {
        return reachable && idle && heldPages.orElse(-1) == 0 && unsettledRooms.orElse(0) == 0;
    }

    /** Pages neither free, cached, nor quarantined once idle: lost to the free list (empty when it cannot tell). */
    OptionalInt leakedPages()
    {
        if (!reachable || !idle || heldPages.isEmpty() || quarantined.isEmpty()) {
            return OptionalInt.empty();
        }
        return OptionalInt.of(heldPages.getAsInt() - quarantined.getAsInt());
    }
}
