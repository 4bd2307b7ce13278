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
        // one reading of every load: requests end on other threads meanwhile
        long[] loads = candidates.stream().mapToLong(load::of).toArray();
        long least = java.util.Arrays.stream(loads).min().orElseThrow();
        List<Backend> tied = new java.util.ArrayList<>();
        for (int i = 0; i < loads.length; i++) {
            if (loads[i] == least) {
                tied.add(candidates.get(i));
            }
        }
        return rotation.next(candidates, tied);
    }
}
