package io.handoff.router;

import io.handoff.router.prefix.RouteKey;
import java.util.List;

import static java.util.Objects.requireNonNull;

/** The candidate with the least {@link Load}; ties in turn. */
final class LeastLoadPolicy
        implements RoutingPolicy
{
    private final Load load;
    private final Rotation rotation = new Rotation();

    LeastLoadPolicy(Load load)
    {
        this.load = requireNonNull(load, "load is null");
    }

    @Override
    public Backend choose(List<Backend> candidates, RouteKey key)
    {
        long least = candidates.stream().mapToLong(load::of).min().orElseThrow();
        return rotation.next(candidates, candidates.stream().filter(candidate -> load.of(candidate) == least).toList());
    }
}
