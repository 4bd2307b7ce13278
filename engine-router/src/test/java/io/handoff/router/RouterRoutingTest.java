package io.handoff.router;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import org.junit.jupiter.api.Test;

import java.net.URI;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.function.Predicate;

import static io.handoff.router.RouterFixture.json;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** The routing policies, retries and circuit breakers as the router applies them, in front of fake servers. */
class RouterRoutingTest
{
    private static RouterConfig config(Map<String, String> settings)
    {
        Map<String, String> all = new java.util.HashMap<>(Map.of("handoff.router.retry.initial-backoff", "0s", "handoff.router.retry.max-backoff", "0s",
                "handoff.router.policy.decode", "least-load", "handoff.router.fallback", "none"));
        all.putAll(settings);
        return RouterFixture.config(Duration.ofSeconds(5), all);
    }

    @Test
    void cacheAwareSendsPromptsWithASharedPrefixToThePrefillThatHadIt()
            throws Exception
    {
        try (RouterFixture fixture = RouterFixture.start(2, 1, config(Map.of("handoff.router.policy.prefill", "cache-aware")))) {
            String system = "You are a careful assistant; answer in one line. ";
            // each request once the last one's release reached the pool (it follows the answer): loads are equal, the tree decides
            for (int i = 0; i < 3; i++) {
                assertThat(fixture.post("/generate", "{\"text\": \"" + system + "Q" + i + "\", \"rid\": \"a" + i + "\"}").statusCode()).isEqualTo(200);
                awaitIdle(fixture);
            }
            assertThat(fixture.post("/generate", "{\"text\": \"Translate to French: good morning\", \"rid\": \"b\"}").statusCode()).isEqualTo(200);
            awaitIdle(fixture);
            assertThat(fixture.post("/generate", "{\"text\": \"" + system + "Q3\", \"rid\": \"a3\"}").statusCode()).isEqualTo(200);
            awaitIdle(fixture);
            assertThat(fixture.prefills.get(0).rids()).containsExactly("a0", "a1", "a2", "a3");
            // nothing cached matched it: in turn, to the other one
            assertThat(fixture.prefills.get(1).rids()).containsExactly("b");
            // chats are keyed by their messages: the second follows the first, wherever that went
            for (String rid : List.of("c1", "c2")) {
                assertThat(fixture.post("/v1/chat/completions", "{\"messages\": [{\"role\": \"system\", \"content\": \"" + system + "\"}, "
                        + "{\"role\": \"user\", \"content\": \"" + rid + "\"}], \"rid\": \"" + rid + "\"}").statusCode()).isEqualTo(200);
                awaitIdle(fixture);
            }
            FakeBackend chats = fixture.prefills.stream().filter(prefill -> prefill.rids().contains("c1")).findFirst().orElseThrow();
            assertThat(chats.rids()).contains("c2");
        }
    }

    @Test
    void leastLoadDecodesCountEstimatedPagesNotRequests()
            throws Exception
    {
        CountDownLatch release = new CountDownLatch(1);
        try (RouterFixture fixture = RouterFixture.start(1, 2, config(Map.of()))) {
            for (FakeBackend decode : fixture.decodes) {
                decode.generator = (self, exchange, body) -> {
                    release.await(RouterFixture.PATIENCE.toSeconds(), TimeUnit.SECONDS);
                    FakeBackend.answer(self, exchange, body);
                };
            }
            // one long request on d1: ceil((1000 + 600) / 16) = 100 pages
            CompletableFuture<HttpResponse<String>> longOne = fixture.postAsync("/generate",
                    "{\"text\": \"" + "x".repeat(1000) + "\", \"sampling_params\": {\"max_new_tokens\": 600}}");
            awaitPages(fixture, fixture.decodes.get(0).url(), pages -> pages == 100);
            // two short ones (ceil((8 + 8) / 16) = 1 page each) on d2: by requests d1 would be the less loaded now
            CompletableFuture<HttpResponse<String>> shortOne = fixture.postAsync("/generate", "{\"text\": \"short 1\", \"sampling_params\": {\"max_new_tokens\": 9}}");
            awaitPages(fixture, fixture.decodes.get(1).url(), pages -> pages == 1);
            CompletableFuture<HttpResponse<String>> shortTwo = fixture.postAsync("/generate", "{\"text\": \"short 2\", \"sampling_params\": {\"max_new_tokens\": 9}}");
            awaitPages(fixture, fixture.decodes.get(1).url(), pages -> pages == 2);
            CompletableFuture<HttpResponse<String>> third = fixture.postAsync("/generate", "{\"text\": \"short 3\", \"sampling_params\": {\"max_new_tokens\": 9}}");
            awaitPages(fixture, fixture.decodes.get(1).url(), pages -> pages == 3);
            release.countDown();
            for (CompletableFuture<HttpResponse<String>> response : List.of(longOne, shortOne, shortTwo, third)) {
                assertThat(response.get(RouterFixture.PATIENCE.toSeconds(), TimeUnit.SECONDS).statusCode()).isEqualTo(200);
            }
            assertThat(fixture.decodes.get(0).received).hasSize(1);
            assertThat(fixture.decodes.get(1).received).hasSize(3);
            awaitPages(fixture, fixture.decodes.get(0).url(), pages -> pages == 0);
            awaitPages(fixture, fixture.decodes.get(1).url(), pages -> pages == 0);
        }
        finally {
            release.countDown();
        }
    }

    @Test
    void aRequestGetsAsManyAttemptsAsMaxAttemptsSaysEachUnderItsOwnRid()
            throws Exception
    {
        try (RouterFixture fixture = RouterFixture.start(2, 1, config(Map.of("handoff.router.retry.max-attempts", "3")))) {
            fixture.decode().generator = (self, exchange, body) -> {
                if (body.path("rid").asText().endsWith("-retry2")) {
                    FakeBackend.answer(self, exchange, body);
                }
                else {
                    FakeBackend.json(exchange, 500, error("checksum_mismatch", body.path("rid").asText()));
                }
            };
            HttpResponse<String> response = fixture.post("/generate", "{\"text\": \"hi\", \"rid\": \"r\"}");
            assertThat(response.statusCode()).as(response.body()).isEqualTo(200);
            assertThat(json(response).path("meta_info").path("id").asText()).isEqualTo("r-retry2");
            assertThat(fixture.decode().rids()).containsExactly("r", "r-retry1", "r-retry2");
            // each retry on another prefill than the attempt before
            assertThat(fixture.prefills.get(0).rids()).containsExactly("r", "r-retry2");
            assertThat(fixture.prefills.get(1).rids()).containsExactly("r-retry1");

            fixture.decode().generator = (self, exchange, body) -> FakeBackend.json(exchange, 500, error("peer_lost", body.path("rid").asText()));
            HttpResponse<String> failed = fixture.post("/generate", "{\"text\": \"hi\", \"rid\": \"f\"}");
            assertThat(failed.statusCode()).isEqualTo(502);
            assertThat(json(failed).path("error").path("message").asText()).startsWith("rid f: the KV transfer failed 3 times. First ")
                    .contains("then, retried in a new room 2 times, last ").contains("attempt f-retry2 failed");
        }
    }

    @Test
    void withOneAttemptARetryableFailureIsA502NotRetried()
            throws Exception
    {
        try (RouterFixture fixture = RouterFixture.start(2, 1, config(Map.of("handoff.router.retry.max-attempts", "1")))) {
            fixture.decode().generator = (self, exchange, body) -> FakeBackend.json(exchange, 500, error("checksum_mismatch", body.path("rid").asText()));
            HttpResponse<String> failed = fixture.post("/generate", "{\"text\": \"hi\", \"rid\": \"once\"}");
            assertThat(failed.statusCode()).isEqualTo(502);
            assertThat(json(failed).path("error").path("message").asText()).contains("max-attempts is 1: not retried");
            assertThat(fixture.decode().rids()).containsExactly("once");
        }
    }

    @Test
    void aPrefillWhoseRequestsFailInARowIsTakenOutByItsBreakerAndBackendsShowsIt()
            throws Exception
    {
        try (RouterFixture fixture = RouterFixture.start(2, 1, config(Map.of("handoff.router.policy.prefill", "round-robin",
                "handoff.router.circuit-breaker.failure-threshold", "2", "handoff.router.circuit-breaker.open-duration", "1h")))) {
            FakeBackend failing = fixture.prefills.get(0);
            // a failure without a retryable cause: relayed, not retried, and counted against the prefill
            failing.generator = (self, exchange, body) -> FakeBackend.json(exchange, 500, error("internal", body.path("rid").asText()));
            for (int i = 0; i < 4; i++) {
                fixture.post("/generate", "{\"text\": \"hi\", \"rid\": \"b" + i + "\"}");
                if (i == 0) {
                    awaitBreaker(fixture, failing.url(), breaker -> breaker.path("failures_in_a_row").asInt() == 1);
                }
            }
            awaitBreaker(fixture, failing.url(), breaker -> breaker.path("state").asText().equals("open"));
            assertThat(failing.rids()).containsExactly("b0", "b2");
            for (int i = 4; i < 7; i++) {
                assertThat(fixture.post("/generate", "{\"text\": \"hi\", \"rid\": \"b" + i + "\"}").statusCode()).isEqualTo(200);
            }
            assertThat(failing.rids()).as("out of choice while open").containsExactly("b0", "b2");
            assertThat(fixture.prefills.get(1).rids()).containsExactly("b1", "b3", "b4", "b5", "b6");
            JsonNode healthy = breaker(fixture, fixture.prefills.get(1).url());
            assertThat(healthy.path("state").asText()).isEqualTo("closed");

            // with the other one stopped and polled out, nothing is left: a 503 that names the open breaker
            fixture.prefills.get(1).stop();
            fixture.poll();
            HttpResponse<String> none = fixture.post("/generate", "{\"text\": \"hi\"}");
            assertThat(none.statusCode()).isEqualTo(503);
            assertThat(json(none).path("error").path("message").asText()).contains("circuit breaker is open (2 failures in a row)")
                    .contains("handoff.router.circuit-breaker.open-duration");
        }
    }

    @Test
    void failuresThatBlameTheLinkNeverCutOffALoneDecodeButItsOwnFailuresDo()
            throws Exception
    {
        try (RouterFixture fixture = RouterFixture.start(1, 1, config(Map.of("handoff.router.retry.max-attempts", "2",
                "handoff.router.circuit-breaker.failure-threshold", "2", "handoff.router.circuit-breaker.open-duration", "1h")))) {
            // a link that corrupts every page: each attempt fails with a checksum mismatch, reported by a healthy decode
            fixture.decode().generator = (self, exchange, body) -> FakeBackend.json(exchange, 500, error("checksum_mismatch", body.path("rid").asText()));
            for (int i = 0; i < 5; i++) {
                HttpResponse<String> failed = fixture.post("/generate", "{\"text\": \"hi\", \"rid\": \"c" + i + "\"}");
                assertThat(failed.statusCode()).as("tried twice on the only path, then named").isEqualTo(502);
                assertThat(json(failed).path("error").path("message").asText()).contains("the KV transfer failed twice");
            }
            assertThat(fixture.decode().rids()).as("every request reached the decode, and its retry too").hasSize(10);
            assertThat(breaker(fixture, fixture.decode().url()).path("state").asText()).isEqualTo("closed");
            assertThat(breaker(fixture, fixture.prefills.getFirst().url()).path("state").asText()).isEqualTo("closed");
            assertThat(fixture.get("/metrics").body()).contains("handoff_router_link_failures_total{prefill=\"" + fixture.prefills.getFirst().url()
                    + "\",decode=\"" + fixture.decode().url() + "\",cause=\"checksum_mismatch\"} 10");

            // the link heals: served at once, no breaker to wait out
            fixture.decode().generator = FakeBackend::answer;
            assertThat(fixture.post("/generate", "{\"text\": \"hi\"}").statusCode()).isEqualTo(200);

            // the decode's own failures (the engine failed, no transfer cause) still open its breaker
            fixture.decode().generator = (self, exchange, body) -> FakeBackend.json(exchange, 500, error("engine", body.path("rid").asText()));
            fixture.post("/generate", "{\"text\": \"hi\"}");
            fixture.post("/generate", "{\"text\": \"hi\"}");
            awaitBreaker(fixture, fixture.decode().url(), breaker -> breaker.path("state").asText().equals("open"));
        }
    }

    @Test
    void cacheAwareDecodesSendEachTurnOfAConversationBackToTheDecodeThatHoldsItsHistory()
            throws Exception
    {
        try (RouterFixture fixture = RouterFixture.start(1, 2, config(Map.of("handoff.router.policy.decode", "cache-aware")))) {
            String[] histories = {"Conversation 1. You are a helpful assistant. User: what is a page? Assistant:",
                    "Conversation 2. You answer questions about transfers. User: what moves? Assistant:"};
            for (int turn = 0; turn < 3; turn++) {
                for (int c = 0; c < histories.length; c++) {
                    assertThat(fixture.post("/generate", "{\"text\": \"" + histories[c] + "\", \"rid\": \"c" + c + "t" + turn + "\"}").statusCode())
                            .isEqualTo(200);
                    awaitIdle(fixture);
                    histories[c] += " an answer. User: and then? Assistant:";
                }
            }
            // each conversation's turns on one decode, the two conversations on different ones
            for (FakeBackend decode : fixture.decodes) {
                List<String> conversations = decode.rids().stream().map(rid -> rid.substring(0, 2)).distinct().toList();
                assertThat(conversations).as(decode + " served " + decode.rids()).hasSize(1);
                assertThat(decode.rids()).hasSize(3);
            }
        }
    }

    @Test
    void anUnknownPolicyIsRefusedNamingTheKey()
    {
        assertThatThrownBy(() -> config(Map.of("handoff.router.policy.prefill", "fastest")))
                .hasMessageStartingWith("handoff.router.policy.prefill = 'fastest' is not a routing policy");
    }

    private static ObjectNode error(String cause, String rid)
    {
        ObjectNode body = FakeBackend.JSON.createObjectNode();
        body.putObject("error").put("message", "test: attempt " + rid + " failed").put("type", "server_error").putNull("param")
                .put("code", "internal_error").put("cause", cause);
        return body;
    }

    private static JsonNode breaker(RouterFixture fixture, URI url)
    {
        return fixture.backend(url).path("circuit_breaker");
    }

    private static void awaitBreaker(RouterFixture fixture, URI url, Predicate<JsonNode> condition)
    {
        RouterFixture.await(() -> condition.test(breaker(fixture, url)), () -> "breaker of " + url + ": " + breaker(fixture, url));
    }

    private static void awaitPages(RouterFixture fixture, URI url, Predicate<Long> condition)
    {
        RouterFixture.await(() -> condition.test(fixture.backend(url).path("outstanding_pages").asLong()), () -> "pages of " + url + ": " + fixture.backend(url));
    }

    /** Until the router counts no request in flight on any server. */
    private static void awaitIdle(RouterFixture fixture)
    {
        RouterFixture.await(() -> {
            for (JsonNode entry : RouterFixture.json(fixture.get("/backends"))) {
                if (entry.path("in_flight").asInt() != 0) {
                    return false;
                }
            }
            return true;
        }, () -> "requests in flight: " + fixture.get("/backends").body());
    }
}
