package io.handoff.router;

import com.fasterxml.jackson.databind.JsonNode;
import io.handoff.cluster.Member;
import io.handoff.cluster.MemberRole;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import java.net.http.HttpResponse;
import java.util.ArrayList;
import java.util.List;

import static io.handoff.router.RouterFixture.json;
import static io.handoff.router.ScriptedMembership.member;
import static io.handoff.router.ScriptedMembership.view;
import static org.assertj.core.api.Assertions.assertThat;

/** The router following a membership that changes while it runs: servers join, drain, leave and restart. */
class RouterMembershipTest
{
    private FakeBackend p1;
    private FakeBackend p2;
    private FakeBackend d1;

    @BeforeEach
    void startServers()
            throws Exception
    {
        p1 = FakeBackend.prefill("p1", "10.0.0.1:7001");
        p2 = FakeBackend.prefill("p2", "10.0.0.2:7001");
        d1 = FakeBackend.decode("d1");
    }

    /** The router follows {@code membership}; all three fake servers run (and are closed with it), listed or not. */
    private RouterFixture following(ScriptedMembership membership)
            throws Exception
    {
        return RouterFixture.following(membership, List.of(p1, p2), List.of(d1));
    }

    private Member prefill(FakeBackend server, String id, String incarnation, boolean draining)
    {
        return member(id, MemberRole.PREFILL, incarnation, server.url(), draining);
    }

    private Member decode()
    {
        return member("d1", MemberRole.DECODE, "", d1.url(), false);
    }

    @Test
    void aRouterWithNoServersYetAnswers503NamingItsSourceAndServesOnceServersJoin()
            throws Exception
    {
        ScriptedMembership membership = new ScriptedMembership(view());
        try (RouterFixture fixture = following(membership)) {
            HttpResponse<String> none = fixture.get("/health");
            assertThat(none.statusCode()).isEqualTo(503);
            assertThat(json(none).path("error").path("message").asText())
                    .contains("no healthy prefill server: none is listed by a scripted membership")
                    .contains("no healthy decode server: none is listed by a scripted membership");

            membership.publish(view(prefill(p1, "p1", "", false), decode()));
            fixture.poll();

            assertThat(fixture.get("/health").statusCode()).isEqualTo(200);
            assertThat(fixture.post("/generate", "{\"text\": \"a\"}").statusCode()).isEqualTo(200);
            assertThat(p1.received).hasSize(1);
        }
        assertThat(membership.closed).as("the router closes the membership it follows").isTrue();
    }

    @Test
    void aDrainingServerGetsNoNewRequestsAndALeavingOneDropsOutOfTheList()
            throws Exception
    {
        ScriptedMembership membership = new ScriptedMembership(view(prefill(p1, "p1", "a", false), prefill(p2, "p2", "b", false), decode()));
        try (RouterFixture fixture = following(membership)) {
            membership.publish(view(prefill(p1, "p1", "a", true), prefill(p2, "p2", "b", false), decode()));
            for (int i = 0; i < 4; i++) {
                assertThat(fixture.post("/generate", "{\"text\": \"x" + i + "\"}").statusCode()).isEqualTo(200);
            }
            assertThat(p1.received).as("draining").isEmpty();
            assertThat(p2.received).hasSize(4);
            JsonNode listed = json(fixture.get("/backends"));
            assertThat(listed.get(0).path("id").asText()).isEqualTo("p1");
            assertThat(listed.get(0).path("draining").asBoolean()).isTrue();
            assertThat(listed.get(0).path("incarnation").asText()).isEqualTo("a");

            membership.publish(view(prefill(p2, "p2", "b", false), decode()));
            assertThat(ids(json(fixture.get("/backends")))).containsExactly("p2", "d1");
            assertThat(json(fixture.get("/health")).path("prefill").path("total").asInt()).isEqualTo(1);
        }
    }

    @Test
    void aNewIncarnationIsANewServerThatStaysOutUntilTheProcessAtTheAddressIsThatIncarnation()
            throws Exception
    {
        p1.incarnation = "first";
        ScriptedMembership membership = new ScriptedMembership(view(prefill(p1, "p1", "first", false), decode()));
        try (RouterFixture fixture = following(membership)) {
            assertThat(fixture.post("/generate", "{\"text\": \"a\"}").statusCode()).isEqualTo(200);
            int bootstraps = p1.bootstrapCalls.get();

            // the store lists a restart before the old process stopped answering at the address
            membership.publish(view(prefill(p1, "p1", "second", false), decode()));
            fixture.poll();
            assertThat(p1.bootstrapCalls.get()).as("a new incarnation's bootstrap is read afresh").isGreaterThan(bootstraps);
            JsonNode entry = json(fixture.get("/backends")).get(0);
            assertThat(entry.path("healthy").asBoolean()).isFalse();
            assertThat(entry.path("reason").asText()).contains("reports incarnation first but membership lists second");
            assertThat(fixture.post("/generate", "{\"text\": \"b\"}").statusCode()).isEqualTo(503);

            p1.incarnation = "second";
            fixture.poll();
            assertThat(fixture.post("/generate", "{\"text\": \"c\"}").statusCode()).isEqualTo(200);
            assertThat(json(fixture.get("/backends")).get(0).path("incarnation").asText()).isEqualTo("second");
        }
    }

    @Test
    void aStaleViewKeepsTheLastKnownServersServingAndSaysSo()
            throws Exception
    {
        ScriptedMembership membership = new ScriptedMembership(view(prefill(p1, "p1", "", false), decode()));
        try (RouterFixture fixture = following(membership)) {
            membership.publish(membership.current().staleBecause("etcd http://127.0.0.1:1 did not answer"));

            HttpResponse<String> health = fixture.get("/health");
            assertThat(health.statusCode()).isEqualTo(200);
            assertThat(json(health).path("membership").path("stale").asText()).isEqualTo("etcd http://127.0.0.1:1 did not answer");
            assertThat(fixture.post("/generate", "{\"text\": \"a\"}").statusCode()).isEqualTo(200);

            membership.publish(view(prefill(p1, "p1", "", false), decode()));
            assertThat(json(fixture.get("/health")).path("membership").path("stale").isNull()).isTrue();
        }
    }

    private static List<String> ids(JsonNode backends)
    {
        List<String> ids = new ArrayList<>();
        backends.forEach(entry -> ids.add(entry.path("id").asText()));
        return ids;
    }
}
