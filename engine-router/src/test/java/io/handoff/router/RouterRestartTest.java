package io.handoff.router;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.sun.net.httpserver.HttpExchange;
import io.handoff.cluster.Member;
import io.handoff.cluster.MemberRole;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.net.http.HttpResponse;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import static io.handoff.router.RouterFixture.json;
import static io.handoff.router.ScriptedMembership.member;
import static io.handoff.router.ScriptedMembership.view;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * A request in flight on a prefill incarnation that is lost (its decode answers {@code peer_lost}) while membership
 * replaces that member: the retry goes to the member's new incarnation once it is healthy, and fails cleanly, naming the
 * cause, while it is not.
 */
class RouterRestartTest
{
    private static final long WAIT_SECONDS = 30;

    private FakeBackend first;
    private FakeBackend second;
    private FakeBackend decode;

    @BeforeEach
    void startServers()
            throws Exception
    {
        // the same member before and after its restart: a new process at a new address (as etcd lists a restarted server)
        first = FakeBackend.prefill("p1-first", "10.0.0.1:7001");
        second = FakeBackend.prefill("p1-second", "10.0.0.1:7002");
        decode = FakeBackend.decode("d1");
        first.incarnation = "first";
        second.incarnation = "second";
    }

    private Member prefill(FakeBackend server)
    {
        return member("p1", MemberRole.PREFILL, server.incarnation, server.url(), false);
    }

    private Member decodeMember()
    {
        return member("d1", MemberRole.DECODE, "", decode.url(), false);
    }

    @Test
    void aRequestLostWithTheOldIncarnationIsRetriedOnTheNewOneOnceItIsHealthy()
            throws Exception
    {
        ScriptedMembership membership = new ScriptedMembership(view(prefill(first), decodeMember()));
        try (RouterFixture fixture = RouterFixture.following(membership, List.of(first, second), List.of(decode))) {
            CountDownLatch replaced = failFirstAttemptOnceReleased();
            CompletableFuture<HttpResponse<String>> response = CompletableFuture.supplyAsync(
                    () -> fixture.post("/generate", "{\"text\": \"hi\", \"rid\": \"lost\"}"));
            assertThat(decode.awaitReceived("lost")).isTrue();

            membership.publish(view(prefill(second), decodeMember()));
            fixture.poll();
            replaced.countDown();

            HttpResponse<String> answered = response.get(WAIT_SECONDS, TimeUnit.SECONDS);
            assertThat(answered.statusCode()).as(answered.body()).isEqualTo(200);
            assertThat(first.rids()).containsExactly("lost");
            assertThat(second.rids()).containsExactly("lost-retry1");
            JsonNode listed = json(fixture.get("/backends")).get(0);
            assertThat(listed.path("incarnation").asText()).isEqualTo("second");
        }
    }

    @Test
    void whileTheNewIncarnationIsNotHealthyTheLostRequestFailsCleanlyNamingTheCause()
            throws Exception
    {
        ScriptedMembership membership = new ScriptedMembership(view(prefill(first), decodeMember()));
        try (RouterFixture fixture = RouterFixture.following(membership, List.of(first, second), List.of(decode))) {
            CountDownLatch replaced = failFirstAttemptOnceReleased();
            CompletableFuture<HttpResponse<String>> response = CompletableFuture.supplyAsync(
                    () -> fixture.post("/generate", "{\"text\": \"hi\", \"rid\": \"lost\"}"));
            assertThat(decode.awaitReceived("lost")).isTrue();

            // listed, but the process at its address is not that incarnation yet: it stays out
            second.incarnation = "starting";
            membership.publish(view(member("p1", MemberRole.PREFILL, "second", second.url(), false), decodeMember()));
            fixture.poll();
            replaced.countDown();

            HttpResponse<String> answered = response.get(WAIT_SECONDS, TimeUnit.SECONDS);
            assertThat(answered.statusCode()).isEqualTo(502);
            assertThat(json(answered).path("error").path("cause").asText()).isEqualTo("peer_lost");
            assertThat(second.rids()).isEmpty();
        }
    }

    /** The decode fails the first attempt with {@code peer_lost} once the returned latch is counted down; a retry succeeds. */
    private CountDownLatch failFirstAttemptOnceReleased()
    {
        CountDownLatch replaced = new CountDownLatch(1);
        decode.generator = (self, exchange, body) -> {
            if (body.path("rid").asText().contains(PairedRequests.RETRY_SUFFIX)) {
                FakeBackend.answer(self, exchange, body);
                return;
            }
            if (!replaced.await(WAIT_SECONDS, TimeUnit.SECONDS)) {
                throw new AssertionError("the test never replaced the member");
            }
            peerLost(exchange, body);
        };
        return replaced;
    }

    private static void peerLost(HttpExchange exchange, ObjectNode body)
            throws IOException
    {
        ObjectNode error = FakeBackend.JSON.createObjectNode();
        error.putObject("error").put("message", "lost the prefill: the control connection to prefill 10.0.0.1:7001 closed")
                .put("type", "server_error").putNull("param").put("code", "internal_error").put("cause", "peer_lost");
        FakeBackend.json(exchange, 500, error);
    }
}
