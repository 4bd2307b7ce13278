package io.handoff.router;

import io.handoff.router.prefix.PrefixTree;
import io.handoff.router.prefix.RouteKey;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

import static java.util.Objects.requireNonNull;

/**
 * The prefill that probably has most of the prompt cached already, from a {@link PrefixTree} per prefill of the keys
 * this router sent it (symbols are chars, or token ids, as {@link RouteKey} reads them; the router has no tokenizer).
 * In order:
 *
 * <ol>
 * <li>Loads (requests in flight) unbalanced, {@code max − min > balanceAbsThreshold} and
 * {@code max > min × balanceRelThreshold}: the least loaded, whatever it has cached.
 * <li>No prefill holds at least {@code cacheThreshold} of the prompt: a prefix new to all of them, so the least loaded,
 * then the one with the smallest tree (the most room), which spreads distinct prefixes over the prefills.
 * <li>Otherwise the least {@code cost = uncached prompt symbols + loadWeight × requests in flight} (uncached: the
 * prompt's length less the longest prefix the prefill's tree holds), then the less loaded.
 * </ol>
 *
 * Remaining ties go in turn. The chosen prefill's tree gets the key.
 */
final class CacheAwarePolicy
        implements RoutingPolicy
{
    private final RouterConfig.CacheAware settings;
    private final Load load;
    private final Map<Backend, PrefixTree> trees = new ConcurrentHashMap<>();
    private final Rotation rotation = new Rotation();

    CacheAwarePolicy(RouterConfig.CacheAware settings)
    {
        this(settings, Load.REQUESTS);
    }

    /** @param load what "loaded" means: requests in flight (prefills and decodes alike, in the router) */
    CacheAwarePolicy(RouterConfig.CacheAware settings, Load load)
    {
        this.settings = requireNonNull(settings, "settings is null");
        this.load = requireNonNull(load, "load is null");
    }

    @Override
    public Backend choose(List<Backend> candidates, RouteKey key)
    {
        Backend chosen = pick(candidates, key);
        if (key.shared().length > 0) {
            tree(chosen).insert(key.shared());
        }
        return chosen;
    }

    private Backend pick(List<Backend> candidates, RouteKey key)
    {
        // one reading of every load: requests end on other threads meanwhile, and the order below must not change under it
        Map<Backend, Long> loads = new HashMap<>();
        for (Backend candidate : candidates) {
            loads.put(candidate, load.of(candidate));
        }
        long min = loads.values().stream().mapToLong(Long::longValue).min().orElseThrow();
        long max = loads.values().stream().mapToLong(Long::longValue).max().orElseThrow();
        if (max - min > settings.balanceAbsThreshold() && max > min * settings.balanceRelThreshold()) {
            return rotation.next(candidates, candidates.stream().filter(candidate -> loads.get(candidate) == min).toList());
        }
        Map<Backend, Integer> matched = new HashMap<>();
        for (Backend candidate : candidates) {
            matched.put(candidate, matched(candidate, key));
        }
        long best = matched.values().stream().mapToLong(Integer::longValue).max().orElseThrow();
        Comparator<Backend> order;
        if (key.promptLength() == 0 || best < settings.cacheThreshold() * key.promptLength()) {
            order = Comparator.<Backend>comparingLong(loads::get).thenComparingLong(this::treeSize);
        }
        else {
            order = Comparator.<Backend>comparingDouble(candidate -> cost(loads.get(candidate), key.promptLength(), matched.get(candidate)))
                    .thenComparingLong(loads::get);
        }
        Backend chosen = candidates.stream().min(order).orElseThrow();
        return rotation.next(candidates, candidates.stream().filter(candidate -> order.compare(candidate, chosen) == 0).toList());
    }

    /** Uncached prompt symbols plus the load term, for {@code key} on {@code server}. */
    double cost(Backend server, RouteKey key)
    {
        return cost(load.of(server), key.promptLength(), matched(server, key));
    }

    private double cost(long serverLoad, long promptLength, int matched)
    {
        return Math.max(0, promptLength - matched) + settings.loadWeight() * serverLoad;
    }

    /** How many of {@code key}'s prompt symbols {@code server}'s tree holds (the kind symbol is not the prompt's). */
    int matched(Backend server, RouteKey key)
    {
        PrefixTree tree = trees.get(server);
        return tree == null ? 0 : Math.max(0, tree.match(key.shared()) - 1);
    }

    /** Symbols held for {@code server}, 0 when it has no tree. */
    long treeSize(Backend server)
    {
        PrefixTree tree = trees.get(server);
        return tree == null ? 0 : tree.size();
    }

    @Override
    public void removed(Backend server)
    {
        trees.remove(server);
    }

    private PrefixTree tree(Backend server)
    {
        return trees.computeIfAbsent(server, ignored -> new PrefixTree(settings.treeChars()));
    }
}
