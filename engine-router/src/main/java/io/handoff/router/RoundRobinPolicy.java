package io.handoff.router;

import io.handoff.router.prefix.RouteKey;
import java.util.List;

/** Each request to the candidate after the last one chosen, blind to load and cache. */
final class RoundRobinPolicy
        implements RoutingPolicy
{
    private final Rotation rotation = new Rotation();

    @Override
    public Backend choose(List<Backend> candidates, RouteKey key)
    {
        return rotation.next(candidates, candidates);
    }
}
