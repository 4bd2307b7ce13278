package io.handoff.router;

import io.handoff.cluster.Member;
import io.handoff.cluster.MemberRole;
import io.handoff.router.prefix.RouteKey;
import io.handoff.router.prefix.RouteKeys;
import org.junit.jupiter.api.Test;

import java.net.URI;
import java.time.Duration;
import java.util.Map;
import java.util.SplittableRandom;

import static io.handoff.router.ScriptedMembership.member;
import static io.handoff.router.ScriptedMembership.view;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** The pool's choice through its policies as membership changes: a removed prefill's tree goes with it, an open breaker is skipped. */
class BackendPoolRoutingTest
{
    private static final Member P1 = member("p1", MemberRole.PREFILL, "", URI.create("http://10.0.0.1:30000"), false);
    private static final Member P2 = member("p2", MemberRole.PREFILL, "", URI.create("http://10.0.0.2:30000"), false);
    private static final Member D1 = member("d1", MemberRole.DECODE, "", URI.create("http://10.0.0.3:30000"), false);

    private final BackendPool pool = new BackendPool("a test's list", Duration.ofSeconds(1),
            RouterFixture.config(Duration.ofSeconds(1), Map.of("handoff.router.circuit-breaker.failure-threshold", "1")), new SplittableRandom(1));

    private void upAll()
    {
        for (Backend backend : pool.all()) {
            backend.up(RouterFixture.json("{\"control\": \"" + backend.url().getHost() + ":7001\"}"));
        }
    }

    private static RouteKey key(String text)
    {
        return new RouteKeys(100).of("/generate", RouterFixture.json("{\"text\": \"" + text + "\"}"));
    }

    @Test
    void aPrefillThatLeavesTheMembershipTakesItsPrefixTreeWithIt()
    {
        pool.reconcile(view(P1, P2, D1));
        upAll();
        CacheAwarePolicy policy = (CacheAwarePolicy) pool.prefillPolicy();
        Backend chosen = pool.acquirePrefill(key("a prompt worth caching"));
        chosen.release();
        assertThat(policy.treeSize(chosen)).isEqualTo(1 + "a prompt worth caching".length());
        assertThat(pool.acquirePrefill(key("a prompt worth caching, again"))).isSameAs(chosen);

        pool.reconcile(view(chosen == pool.of(BackendRole.PREFILL).get(0) ? P2 : P1, D1));
        assertThat(policy.treeSize(chosen)).isZero();
        assertThat(pool.of(BackendRole.PREFILL)).doesNotContain(chosen);
    }

    @Test
    void aServerWhoseBreakerIsOpenIsSkippedAndWithNoneLeftTheErrorNamesIt()
    {
        pool.reconcile(view(P1, P2, D1));
        upAll();
        Backend first = pool.acquirePrefill(key("x"));
        first.release();
        first.failed(); // threshold 1: open
        for (int i = 0; i < 4; i++) {
            Backend other = pool.acquirePrefill(key("x" + i));
            other.release();
            assertThat(other).isNotSameAs(first);
        }
        Backend decode = pool.acquireDecode(key("x"), 3);
        assertThat(decode.pages()).isEqualTo(3);
        decode.release(3);
        decode.failed();
        assertThatThrownBy(() -> pool.acquireDecode(key("x"), 1)).hasMessageContaining("no healthy decode server")
                .hasMessageContaining("healthy, but its circuit breaker is open (1 failure in a row)");
    }
}
