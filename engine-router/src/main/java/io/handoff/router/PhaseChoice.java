package io.handoff.router;

import io.handoff.router.prefix.RouteKey;
import java.util.List;
import java.util.Optional;
import java.util.random.RandomGenerator;

import static java.util.Objects.requireNonNull;

/**
 * One phase's choice of a server: of the servers the pool found eligible (healthy, not suspect), those whose circuit
 * breaker lets a request through, then the phase's {@link RoutingPolicy}; the chosen one gets the request in flight.
 */
final class PhaseChoice
{
    private final RoutingPolicy policy;

    PhaseChoice(RoutingPolicy policy)
    {
        this.policy = requireNonNull(policy, "policy is null");
    }

    /** The prefills' choice, as {@code routing} names it; {@code random} draws power-of-two's pairs. */
    static PhaseChoice prefill(RouterConfig.Routing routing, RandomGenerator random)
    {
        return new PhaseChoice(policy(routing.prefill(), Load.REQUESTS, routing, random));
    }

    /** The decodes' choice: loads are their estimated outstanding KV pages. */
    static PhaseChoice decode(RouterConfig.Routing routing, RandomGenerator random)
    {
        return new PhaseChoice(policy(routing.decode(), Load.PAGES, routing, random));
    }

    private static RoutingPolicy policy(RoutingPolicyName name, Load load, RouterConfig.Routing routing, RandomGenerator random)
    {
        return switch (name) {
            case ROUND_ROBIN -> new RoundRobinPolicy();
            case LEAST_LOAD -> new LeastLoadPolicy(load);
            case POWER_OF_TWO -> new PowerOfTwoPolicy(load, random);
            case CACHE_AWARE -> new CacheAwarePolicy(routing.cacheAware());
        };
    }

    RoutingPolicy policy()
    {
        return policy;
    }

    /** One of {@code eligible} for {@code key}, with the request in flight there holding {@code pages}; empty when every breaker is open. */
    Optional<Backend> acquire(List<Backend> eligible, RouteKey key, long pages)
    {
        List<Backend> candidates = eligible.stream().filter(server -> server.breaker().available()).toList();
        if (candidates.isEmpty()) {
            return Optional.empty();
        }
        Backend chosen = policy.choose(candidates, key);
        chosen.acquire(pages);
        return Optional.of(chosen);
    }

    /** {@code server} left the pool. */
    void removed(Backend server)
    {
        policy.removed(server);
    }
}
