package io.handoff.router;

import com.fasterxml.jackson.databind.JsonNode;
import io.handoff.http.testing.PrometheusFormat;
import org.junit.jupiter.api.Test;

import java.io.OutputStream;
import java.net.URI;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

import static io.handoff.router.RouterFixture.entry;
import static io.handoff.router.RouterFixture.json;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** Which servers the router picks, how it follows their health, and its own endpoints. */
class RouterBackendsTest
{
    @Test
    void prefillsAreChosenRoundRobinAndEachDecodeIsToldItsPrefillsControlEndpoint()
            throws Exception
    {
        try (RouterFixture fixture = RouterFixture.start(2, 1)) {
            for (int i = 0; i < 4; i++) {
                assertThat(fixture.post("/generate", "{\"text\": \"x\", \"rid\": \"rr-" + i + "\"}").statusCode()).isEqualTo(200);
            }

            assertThat(fixture.prefills.get(0).rids()).containsExactly("rr-0", "rr-2");
            assertThat(fixture.prefills.get(1).rids()).containsExactly("rr-1", "rr-3");
            assertThat(fixture.decode().received).extracting(received -> received.body().path("bootstrap_host").asText())
                    .containsExactly("10.0.0.1:7001", "10.0.0.2:7001", "10.0.0.1:7001", "10.0.0.2:7001");
        }
    }

    @Test
    void decodesAreChosenByFewestRequestsInFlightWithTiesRoundRobin()
            throws Exception
    {
        CountDownLatch release = new CountDownLatch(1);
        try (RouterFixture fixture = RouterFixture.start(1, 2)) {
            FakeBackend d1 = fixture.decodes.get(0);
            FakeBackend d2 = fixture.decodes.get(1);
            d1.generator = (self, exchange, body) -> {
                if (!body.path("rid").asText().equals("held")) {
                    FakeBackend.answer(self, exchange, body);
                    return;
                }
                OutputStream out = FakeBackend.startEvents(exchange);
                FakeBackend.event(out, FakeBackend.JSON.createObjectNode().put("text", "held"));
                release.await(30, TimeUnit.SECONDS);
                FakeBackend.done(out);
            };
            // Both idle: turns.
            fixture.post("/generate", "{\"text\": \"x\", \"rid\": \"t-0\"}");
            fixture.post("/generate", "{\"text\": \"x\", \"rid\": \"t-1\"}");
            assertThat(d1.rids()).containsExactly("t-0");
            assertThat(d2.rids()).containsExactly("t-1");

            // d1 holds a stream; while it does, every request goes to d2 (even when it is d1's turn).
            HttpResponse<Stream<String>> held = fixture.stream("/generate", "{\"text\": \"x\", \"rid\": \"held\", \"stream\": true}");
            Iterator<String> heldLines = held.body().filter(line -> !line.isEmpty()).iterator();
            assertThat(heldLines.next()).isEqualTo("data: {\"text\":\"held\"}");
            for (int i = 2; i < 5; i++) {
                assertThat(fixture.post("/generate", "{\"text\": \"x\", \"rid\": \"t-" + i + "\"}").statusCode()).isEqualTo(200);
            }
            Map<String, Double> metrics = PrometheusFormat.parse(fixture.get("/metrics").body());
            assertThat(metrics.get("handoff_router_backend_inflight_requests{role=\"decode\",backend=\"" + d1.url() + "\"}")).isEqualTo(1);
            release.countDown();
            assertThat(heldLines.next()).isEqualTo("data: [DONE]");

            assertThat(d1.rids()).containsExactly("t-0", "held");
            assertThat(d2.rids()).containsExactly("t-1", "t-2", "t-3", "t-4");
        }
    }

    @Test
    void aPrefillThatADecodeReportsSuspectIsNotPairedUntilNoDecodeReportsIt()
            throws Exception
    {
        try (RouterFixture fixture = RouterFixture.start(2, 1, RouterFixture.CONFIG.withFallback(RouterConfig.Fallback.NONE))) {
            fixture.decode().suspectPeers = List.of("10.0.0.1:7001", "not an address");
            fixture.poll();
            for (int i = 0; i < 3; i++) {
                assertThat(fixture.post("/generate", "{\"text\": \"x\", \"rid\": \"s-" + i + "\"}").statusCode()).isEqualTo(200);
            }
            assertThat(fixture.prefills.get(0).received).isEmpty();
            assertThat(fixture.prefills.get(1).rids()).containsExactly("s-0", "s-1", "s-2");
            JsonNode backends = json(fixture.get("/backends"));
            assertThat(entry(backends, fixture.prefills.get(0).url()).path("suspect").asBoolean(false)).isTrue();
            assertThat(entry(backends, fixture.prefills.get(1).url()).path("suspect").asBoolean(true)).isFalse();
            assertThat(entry(backends, fixture.decode().url()).path("suspect_peers").toString()).isEqualTo("[\"10.0.0.1:7001\"]");

            // with every prefill suspect there is none to pair: without the decode-local fallback, a 503 that says why
            fixture.decode().suspectPeers = List.of("10.0.0.1:7001", "10.0.0.2:7001");
            fixture.poll();
            HttpResponse<String> refused = fixture.post("/generate", "{\"text\": \"x\", \"rid\": \"s-none\"}");
            assertThat(refused.statusCode()).isEqualTo(503);
            assertThat(json(refused).path("error").path("message").asText()).contains("a decode reports it suspect");

            fixture.decode().suspectPeers = List.of();
            fixture.poll();
            for (int i = 3; i < 5; i++) {
                assertThat(fixture.post("/generate", "{\"text\": \"x\", \"rid\": \"s-" + i + "\"}").statusCode()).isEqualTo(200);
            }
            assertThat(fixture.prefills.get(0).rids()).hasSize(1);
        }
    }

    @Test
    void anUnhealthyServerIsSkippedAndGetsRequestsAgainOnceHealthy()
            throws Exception
    {
        try (RouterFixture fixture = RouterFixture.start(1, 2)) {
            FakeBackend d1 = fixture.decodes.get(0);
            FakeBackend d2 = fixture.decodes.get(1);
            d2.healthStatus = 503;
            fixture.poll();

            JsonNode backends = json(fixture.get("/backends"));
            JsonNode d2Entry = entry(backends, d2.url());
            assertThat(d2Entry.path("healthy").asBoolean(true)).isFalse();
            assertThat(d2Entry.path("reason").asText()).contains("GET /health answered 503");
            for (int i = 0; i < 3; i++) {
                assertThat(fixture.post("/generate", "{\"text\": \"x\", \"rid\": \"u-" + i + "\"}").statusCode()).isEqualTo(200);
            }
            assertThat(d1.rids()).containsExactly("u-0", "u-1", "u-2");
            assertThat(d2.received).isEmpty();

            d2.healthStatus = 200;
            fixture.poll();
            for (int i = 3; i < 5; i++) {
                assertThat(fixture.post("/generate", "{\"text\": \"x\", \"rid\": \"u-" + i + "\"}").statusCode()).isEqualTo(200);
            }
            assertThat(d2.rids()).hasSize(1);
            assertThat(d1.rids()).hasSize(4);
            assertThat(entry(json(fixture.get("/backends")), d2.url()).path("healthy").asBoolean(false)).isTrue();
        }
    }

    @Test
    void aServerSlowToAnswerItsHealthPollKeepsGettingRequestsUntilTooManyPollsInARowGoUnanswered()
            throws Exception
    {
        // Long enough for the answered poll to be answered in time on a loaded machine; each stalled poll waits it out.
        RouterConfig config = RouterFixture.config(Duration.ofSeconds(2), Map.of("handoff.router.policy.prefill", "round-robin"));
        try (RouterFixture fixture = RouterFixture.start(1, 1, config)) {
            FakeBackend decode = fixture.decode();
            CountDownLatch busy = new CountDownLatch(1);
            decode.healthStall = busy;
            fixture.poll();
            fixture.poll();
            decode.healthStall = null;
            fixture.poll();
            // Two unanswered, one answered: the count starts again.
            decode.healthStall = busy;
            fixture.poll();
            fixture.poll();

            assertThat(entry(json(fixture.get("/backends")), decode.url()).path("healthy").asBoolean(false)).isTrue();
            assertThat(fixture.post("/generate", "{\"text\": \"x\", \"rid\": \"slow-0\"}").statusCode()).isEqualTo(200);

            fixture.poll();
            JsonNode down = entry(json(fixture.get("/backends")), decode.url());
            assertThat(down.path("healthy").asBoolean(true)).isFalse();
            assertThat(down.path("reason").asText()).isEqualTo("GET /health got no answer within 2000 ms (handoff.router.health-timeout)");
            assertThat(fixture.post("/generate", "{\"text\": \"x\", \"rid\": \"slow-1\"}").statusCode()).isEqualTo(503);

            decode.healthStall = null;
            busy.countDown();
            fixture.poll();
            assertThat(entry(json(fixture.get("/backends")), decode.url()).path("healthy").asBoolean(false)).isTrue();
            assertThat(decode.rids()).containsExactly("slow-0");
        }
    }

    @Test
    void healthGenerateAsksAPrefillAndADecodeToGenerateAndNamesTheOneThatCannot()
            throws Exception
    {
        try (RouterFixture fixture = RouterFixture.start(1, 1)) {
            HttpResponse<String> ok = fixture.get("/health_generate");

            assertThat(ok.statusCode()).as(ok.body()).isEqualTo(200);
            JsonNode body = json(ok);
            assertThat(body.path("prefill").path("url").asText()).isEqualTo(fixture.prefill().url().toString());
            assertThat(body.path("decode").path("answer").path("output_id").asInt()).isEqualTo(65);

            fixture.decode().healthGenerateStatus = 503;
            HttpResponse<String> failing = fixture.get("/health_generate");

            assertThat(failing.statusCode()).isEqualTo(503);
            assertThat(json(failing).path("error").path("message").asText())
                    .startsWith("decode server " + fixture.decode().url() + " answered GET /health_generate with 503: ");
        }
    }

    @Test
    void aPrefillThatRecoversIsAskedForItsBootstrapAgainAndItsNewControlEndpointIsUsed()
            throws Exception
    {
        try (RouterFixture fixture = RouterFixture.start(1, 1)) {
            FakeBackend prefill = fixture.prefill();
            assertThat(prefill.bootstrapCalls.get()).isEqualTo(1);
            fixture.poll();
            assertThat(prefill.bootstrapCalls.get()).as("a healthy server is not asked again").isEqualTo(1);

            // A restart: down for a poll, then back with a new control port.
            prefill.healthStatus = 503;
            fixture.poll();
            prefill.control = "10.0.0.1:7999";
            prefill.healthStatus = 200;
            fixture.poll();

            assertThat(prefill.bootstrapCalls.get()).isEqualTo(2);
            assertThat(fixture.post("/generate", "{\"text\": \"x\"}").statusCode()).isEqualTo(200);
            assertThat(fixture.decode().only().body().path("bootstrap_host").asText()).isEqualTo("10.0.0.1:7999");
            assertThat(entry(json(fixture.get("/backends")), prefill.url()).path("control").asText()).isEqualTo("10.0.0.1:7999");
        }
    }

    @Test
    void noHealthyDecodeIsA503WithRetryAfterThatNamesTheDecodeSide()
            throws Exception
    {
        try (RouterFixture fixture = RouterFixture.start(1, 1)) {
            fixture.decode().healthStatus = 503;
            fixture.poll();

            HttpResponse<String> response = fixture.post("/generate", "{\"text\": \"x\"}");

            assertThat(response.statusCode()).isEqualTo(503);
            assertThat(response.headers().firstValue("Retry-After")).hasValue("1");
            JsonNode error = json(response).path("error");
            assertThat(error.path("code").asText()).isEqualTo("no_healthy_decode");
            assertThat(error.path("message").asText()).startsWith("no healthy decode server: " + fixture.decode().url() + " (GET /health answered 503");
            assertThat(error.path("message").asText()).doesNotContain("no healthy prefill");
            assertThat(fixture.prefill().received).isEmpty();
            HttpResponse<String> health = fixture.get("/health");
            assertThat(health.statusCode()).isEqualTo(503);
            assertThat(json(health).path("error").path("code").asText()).isEqualTo("no_healthy_decode");
        }
    }

    @Test
    void aListedServerThatReportsTheOtherRoleServesInThatRoleFromThenOn()
            throws Exception
    {
        try (RouterFixture fixture = RouterFixture.start(1, 1, RouterFixture.CONFIG.withFallback(RouterConfig.Fallback.NONE))) {
            // its role was switched (POST /admin/role): the static lists follow what it reports
            fixture.prefill().bootstrapRole = "decode";
            fixture.prefill().healthStatus = 503;
            fixture.poll();
            fixture.prefill().healthStatus = 200;
            fixture.poll();
            fixture.poll();

            JsonNode moved = entry(json(fixture.get("/backends")), fixture.prefill().url());
            assertThat(moved.path("role").asText()).isEqualTo("decode");
            assertThat(moved.path("healthy").asBoolean(false)).isTrue();
            HttpResponse<String> response = fixture.post("/generate", "{\"text\": \"x\"}");
            assertThat(response.statusCode()).isEqualTo(503);
            assertThat(json(response).path("error").path("code").asText()).isEqualTo("no_healthy_prefill");
            assertThat(json(response).path("error").path("message").asText()).contains("none is listed by static lists");
        }
    }

    @Test
    void healthModelsBackendsAndMetricsDescribeTheRouterAndItsServers()
            throws Exception
    {
        try (RouterFixture fixture = RouterFixture.start(2, 1)) {
            fixture.post("/generate", "{\"text\": \"x\"}");

            HttpResponse<String> health = fixture.get("/health");
            assertThat(health.statusCode()).isEqualTo(200);
            assertThat(json(health)).isEqualTo(json("{\"status\": \"ok\", \"prefill\": {\"healthy\": 2, \"total\": 2}, \"decode\": {\"healthy\": 1, \"total\": 1}, "
                    + "\"membership\": {\"source\": \"static lists (--prefill, --decode)\", \"stale\": null}}"));

            HttpResponse<String> models = fixture.get("/v1/models");
            assertThat(models.statusCode()).isEqualTo(200);
            assertThat(json(models).path("data").get(0).path("owned_by").asText()).isEqualTo("d1");

            JsonNode backends = json(fixture.get("/backends"));
            assertThat(backends.size()).isEqualTo(3);
            JsonNode p1 = entry(backends, fixture.prefills.get(0).url());
            assertThat(p1.path("role").asText()).isEqualTo("prefill");
            assertThat(p1.path("healthy").asBoolean()).isTrue();
            assertThat(p1.path("in_flight").isInt()).isTrue();
            assertThat(p1.path("control").asText()).isEqualTo("10.0.0.1:7001");
            assertThat(p1.path("bootstrap").path("compatibility").asText()).isEqualTo("c0ffee");
            JsonNode d1 = entry(backends, fixture.decode().url());
            assertThat(d1.path("control").isNull()).isTrue();
            assertThat(d1.path("in_flight").asInt(-1)).as("released before the client had its response").isZero();

            HttpResponse<String> metrics = fixture.get("/metrics");
            assertThat(metrics.headers().firstValue("Content-Type")).hasValue("text/plain; version=0.0.4; charset=utf-8");
            Map<String, Double> samples = PrometheusFormat.parse(metrics.body());
            assertThat(samples.get("handoff_http_requests_total{route=\"/generate\",code=\"200\"}")).isEqualTo(1);
            assertThat(samples.get("handoff_router_backend_healthy{role=\"decode\",backend=\"" + fixture.decode().url() + "\"}")).isEqualTo(1);
            assertThat(samples.get("handoff_router_backend_requests_total{role=\"prefill\",backend=\"" + fixture.prefills.get(0).url() + "\"}")).isEqualTo(1);
            assertThat(samples.get("handoff_router_backend_requests_total{role=\"prefill\",backend=\"" + fixture.prefills.get(1).url() + "\"}")).isEqualTo(0);
            assertThat(samples.get("handoff_router_request_latency_seconds_count")).isEqualTo(1);
            assertThat(samples.get("handoff_router_inflight_requests")).isEqualTo(0);
        }
    }

    @Test
    void unknownPathsAndWrongMethodsAreAnsweredAsByAServer()
            throws Exception
    {
        try (RouterFixture fixture = RouterFixture.start(1, 1)) {
            HttpResponse<String> missing = fixture.get("/nope");
            HttpResponse<String> wrongMethod = fixture.get("/generate");

            assertThat(missing.statusCode()).isEqualTo(404);
            assertThat(json(missing).path("error").path("message").asText()).contains("/backends", "/generate", "/v1/completions");
            assertThat(wrongMethod.statusCode()).isEqualTo(405);
            assertThat(wrongMethod.headers().firstValue("Allow")).hasValue("POST");
        }
    }

    @Test
    void backendUrlsAreHostAndPortWithAnOptionalHttpScheme()
    {
        assertThat(Router.backendUrl("http://10.0.0.5:30000")).isEqualTo(URI.create("http://10.0.0.5:30000"));
        assertThat(Router.backendUrl("10.0.0.5:30000/")).isEqualTo(URI.create("http://10.0.0.5:30000"));
        assertThat(Router.backendUrl("https://decode.local:8443")).isEqualTo(URI.create("https://decode.local:8443"));
        for (String bad : List.of("10.0.0.5", "ftp://h:1", "http://h:1/?x=1", "http:// bad")) {
            assertThatThrownBy(() -> Router.backendUrl(bad)).isInstanceOf(IllegalArgumentException.class).hasMessageContaining(bad.strip());
        }
    }
}
