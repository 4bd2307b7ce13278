package io.handoff.router;

import io.handoff.cluster.MemberRole;
import io.handoff.router.prefix.RouteKey;
import io.handoff.router.prefix.RouteKeys;
import org.junit.jupiter.api.Test;

import java.net.URI;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.stream.IntStream;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class RoutingPoliciesTest
{
    private static final RouterConfig.CacheAware CACHE = new RouterConfig.CacheAware(10_000, 100, 4, 2.0, 0.5);

    private final List<Backend> servers = IntStream.rangeClosed(1, 3)
            .mapToObj(i -> new Backend(ScriptedMembership.member("p" + i, MemberRole.PREFILL, "", URI.create("http://10.0.0." + i + ":30000"), false)))
            .toList();

    private static RouteKey text(String prompt)
    {
        return new RouteKeys(4096).of("/generate", RouterFixture.json("{\"text\": \"" + prompt + "\"}"));
    }

    private static void load(Backend server, int requests)
    {
        for (int i = 0; i < requests; i++) {
            server.acquire();
        }
    }

    private List<Backend> choices(RoutingPolicy policy, int count, RouteKey key)
    {
        List<Backend> chosen = new ArrayList<>();
        for (int i = 0; i < count; i++) {
            chosen.add(policy.choose(servers, key));
        }
        return chosen;
    }

    @Test
    void roundRobinTakesEachInTurn()
    {
        assertThat(choices(new RoundRobinPolicy(), 6, RouteKey.NONE)).containsExactly(servers.get(0), servers.get(1), servers.get(2),
                servers.get(0), servers.get(1), servers.get(2));
    }

    @Test
    void aLoadThatChangesWhileTheChoiceIsMadeStillGivesOneOfTheCandidates()
    {
        // requests end on other threads while a policy reads the loads: every reading here differs from the last
        long[] readings = {0};
        Load moving = server -> readings[0]++;
        assertThat(new LeastLoadPolicy(moving).choose(servers, RouteKey.NONE)).isIn(servers);
        CacheAwarePolicy cacheAware = new CacheAwarePolicy(CACHE, moving);
        for (int i = 0; i < 20; i++) {
            assertThat(cacheAware.choose(servers, text("a prompt " + i))).isIn(servers);
        }
    }

    @Test
    void leastLoadTakesTheFewestInFlightAndTiesInTurn()
    {
        load(servers.get(0), 2);
        load(servers.get(2), 1);
        LeastLoadPolicy policy = new LeastLoadPolicy(Load.REQUESTS);
        assertThat(policy.choose(servers, RouteKey.NONE)).isSameAs(servers.get(1));
        load(servers.get(1), 1);
        assertThat(choices(policy, 2, RouteKey.NONE)).containsExactly(servers.get(2), servers.get(1));
    }

    @Test
    void leastLoadForDecodesCountsTheEstimatedPagesNotTheRequests()
    {
        servers.get(0).acquire(40); // one long request
        servers.get(1).acquire(3);
        servers.get(1).acquire(3);
        servers.get(2).acquire(10);
        assertThat(new LeastLoadPolicy(Load.PAGES).choose(servers, RouteKey.NONE)).isSameAs(servers.get(1));
        servers.get(1).release(3);
        servers.get(1).release(3);
        assertThat(servers.get(1).pages()).isZero();
    }

    @Test
    void powerOfTwoTakesTheLessLoadedOfTwoDistinctDraws()
    {
        load(servers.get(0), 5);
        load(servers.get(1), 1);
        // With three servers, every draw of two distinct ones holds a less loaded one than the busiest: it is never chosen.
        PowerOfTwoPolicy policy = new PowerOfTwoPolicy(Load.REQUESTS, new SplittableRandom(11));
        List<Backend> chosen = choices(policy, 300, RouteKey.NONE);
        assertThat(chosen).doesNotContain(servers.get(0)).contains(servers.get(1), servers.get(2));
        // the idle one wins every draw it is in (two draws of three), the other only the draw without it
        long idle = chosen.stream().filter(servers.get(2)::equals).count();
        assertThat(idle).isBetween(170L, 230L);
        // the same seed, the same choices
        assertThat(choices(new PowerOfTwoPolicy(Load.REQUESTS, new SplittableRandom(11)), 300, RouteKey.NONE)).isEqualTo(chosen);
        assertThat(policy.choose(List.of(servers.get(0)), RouteKey.NONE)).isSameAs(servers.get(0));
    }

    @Test
    void cacheAwareSendsAPromptBackToThePrefillThatHasItsPrefix()
    {
        CacheAwarePolicy policy = new CacheAwarePolicy(CACHE);
        String shared = "You are a helpful assistant. Answer briefly and cite the source. ";
        Backend first = policy.choose(servers, text(shared + "What is KV?"));
        Backend other = policy.choose(servers, text("Unrelated prompt of its own, long enough to matter here"));
        assertThat(other).as("nothing cached anywhere: in turn").isNotSameAs(first);
        for (int i = 0; i < 5; i++) {
            assertThat(policy.choose(servers, text(shared + "Question " + i))).isSameAs(first);
        }
        assertThat(policy.matched(first, text(shared + "x"))).isEqualTo(shared.length());
        assertThat(policy.matched(other, text(shared + "x"))).isZero();
    }

    @Test
    void cacheAwareSpreadsPrefixesNoPrefillHoldsEnoughOfToTheSmallestTrees()
    {
        CacheAwarePolicy policy = new CacheAwarePolicy(CACHE);
        // every prompt starts with the same lead, well under half of it: only the rest tells them apart
        String lead = "System: you are an expert on ";
        List<String> topics = List.of("the KV caches of transformers and their pages", "radix trees over token ids and chars",
                "circuit breakers in front of servers that fail");
        List<Backend> first = topics.stream().map(topic -> policy.choose(servers, text(lead + topic + " Q0"))).toList();
        assertThat(first).as("one prefill per new prefix, not all on the one holding the lead").doesNotHaveDuplicates();
        for (int i = 0; i < topics.size(); i++) {
            assertThat(policy.choose(servers, text(lead + topics.get(i) + " Q1"))).isSameAs(first.get(i));
        }
    }

    @Test
    void cacheAwareWeighsTheUncachedPromptAgainstTheLoad()
    {
        CacheAwarePolicy policy = new CacheAwarePolicy(CACHE);
        String prompt = "p".repeat(150);
        Backend cached = policy.choose(servers, text(prompt));
        // 150 symbols cached; each request in flight costs 100: one in flight still wins, two do not
        load(cached, 1);
        assertThat(policy.cost(cached, text(prompt))).isEqualTo(100.0);
        assertThat(policy.choose(servers, text(prompt))).isSameAs(cached);
        load(cached, 1);
        Backend moved = policy.choose(servers, text(prompt));
        assertThat(moved).isNotSameAs(cached);
        assertThat(policy.cost(moved, text(prompt))).isEqualTo(0.0);
    }

    @Test
    void cacheAwareTakesTheLeastLoadedWhenLoadsAreUnbalanced()
    {
        CacheAwarePolicy policy = new CacheAwarePolicy(new RouterConfig.CacheAware(10_000, 0, 4, 2.0, 0.5));
        String prompt = "a shared prefix ".repeat(10);
        Backend cached = policy.choose(servers, text(prompt));
        // max - min = 4, not more than the abs threshold 4: balanced, the cache wins however loaded it is (load weight 0)
        load(cached, 4);
        assertThat(policy.choose(servers, text(prompt))).isSameAs(cached);
        // max - min = 5 > 4 and 5 > 0 × 2: unbalanced, the least loaded gets it, whatever it has cached
        load(cached, 1);
        Backend chosen = policy.choose(servers, text(prompt));
        assertThat(chosen).isNotSameAs(cached);
        assertThat(chosen.inFlight()).isZero();
        // the relative threshold: the most loaded must also have more than twice the least's
        policy.removed(chosen); // what the unbalanced choice sent there is forgotten: only one tree has the prompt
        servers.stream().filter(server -> server != cached).forEach(server -> load(server, 6));
        load(cached, 6);
        assertThat(policy.choose(servers, text(prompt))).as("11 - 6 > 4 but 11 <= 6 × 2: balanced").isSameAs(cached);
    }

    @Test
    void aRemovedPrefillsTreeGoesWithIt()
    {
        CacheAwarePolicy policy = new CacheAwarePolicy(CACHE);
        Backend chosen = policy.choose(servers, text("remember me"));
        assertThat(policy.treeSize(chosen)).isEqualTo(1 + "remember me".length());
        policy.removed(chosen);
        assertThat(policy.treeSize(chosen)).isZero();
        assertThat(policy.matched(chosen, text("remember me"))).isZero();
    }

    @Test
    void policyNamesParseAsConfiguredAndABadOneIsNamed()
    {
        assertThat(RoutingPolicyName.parse("k", "power-of-two")).isEqualTo(RoutingPolicyName.POWER_OF_TWO);
        assertThat(RoutingPolicyName.CACHE_AWARE.label()).isEqualTo("cache-aware");
        assertThatThrownBy(() -> RoutingPolicyName.parse("handoff.router.policy.prefill", "random"))
                .hasMessage("handoff.router.policy.prefill = 'random' is not a routing policy; use one of round-robin, least-load, cache-aware, power-of-two");
    }
}
