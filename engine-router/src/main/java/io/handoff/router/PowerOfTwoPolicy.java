package io.handoff.router;

import io.handoff.router.prefix.RouteKey;
import java.util.List;
import java.util.random.RandomGenerator;

import static java.util.Objects.requireNonNull;

/**
 * Two distinct candidates drawn at random, the less loaded of them (the first drawn on a tie): near least-load's
 * balance without every request looking at every server. One candidate is chosen as it is.
 */
final class PowerOfTwoPolicy
        implements RoutingPolicy
{
    private final Load load;
    private final RandomGenerator random;

    /** @param random draws the two (seeded in tests); used under this policy's lock */
    PowerOfTwoPolicy(Load load, RandomGenerator random)
    {
        this.load = requireNonNull(load, "load is null");
        this.random = requireNonNull(random, "random is null");
    }

    @Override
    public Backend choose(List<Backend> candidates, RouteKey key)
    {
        if (candidates.size() == 1) {
            return candidates.getFirst();
        }
        int first;
        int second;
        synchronized (this) {
            first = random.nextInt(candidates.size());
            second = random.nextInt(candidates.size() - 1);
        }
        if (second >= first) {
            second++;
        }
        Backend a = candidates.get(first);
        Backend b = candidates.get(second);
        return load.of(b) < load.of(a) ? b : a;
    }
}
