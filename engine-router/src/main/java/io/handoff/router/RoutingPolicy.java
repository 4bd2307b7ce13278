package io.handoff.router;

import io.handoff.router.prefix.RouteKey;
import java.util.List;

/**
 * How the router picks one server of a phase for a request, among the candidates that may take it (healthy, not
 * suspect, breaker not open). Called under the pool's lock; an implementation may keep state of its own (a cursor,
 * a prefix tree per server) and must be thread-safe all the same.
 */
interface RoutingPolicy
{
    /** One of {@code candidates} (never empty) for the request {@code key}. */
    Backend choose(List<Backend> candidates, RouteKey key);

    /** {@code server} left the pool: whatever is kept for it goes. */
    default void removed(Backend server) {}
}
