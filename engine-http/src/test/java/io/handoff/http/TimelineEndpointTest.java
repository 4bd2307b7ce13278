package io.handoff.http;

import com.fasterxml.jackson.databind.JsonNode;
import io.handoff.core.config.ConfigSource;
import io.handoff.core.config.HandoffConfig;
import io.handoff.core.config.InvalidConfigException;
import io.handoff.core.model.Transformer;
import io.handoff.core.scheduler.SchedulerConfig;
import io.handoff.http.base.ApiAccess;
import io.handoff.http.base.DebugEndpoints;
import io.handoff.http.base.ServerConfig;
import io.handoff.http.base.security.ApiKeys;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;

import static io.handoff.http.ApiServerTest.assertError;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * GET /debug/requests/{rid} on a real colocated server, and handoff.server.debug-endpoints = auto | on | off: auto is on only
 * on a loopback address, and API keys still apply.
 */
class TimelineEndpointTest
{
    private static Transformer model;

    @BeforeAll
    static void buildModel()
    {
        model = LocalServer.newModel();
    }

    @AfterAll
    static void closeModel()
    {
        model.close();
    }

    @Test
    void aFinishedRequestsTimelineIsServedAsJsonInOrder()
            throws Exception
    {
        ServerConfig config = ServerConfig.loopback().withAccess(ApiAccess.OPEN.withDebugEndpoints(true));
        try (LocalServer local = new LocalServer(new SchedulerConfig(4, 256, 16, true, 2), config, 64, model)) {
            HttpResponse<String> generated = local.post("/generate", "{\"rid\": \"tl-1\", \"text\": \"hello\", \"sampling_params\": {\"max_new_tokens\": 3}}");
            assertThat(generated.statusCode()).as(generated.body()).isEqualTo(200);

            HttpResponse<String> response = local.get("/debug/requests/tl-1");
            assertThat(response.statusCode()).as(response.body()).isEqualTo(200);
            JsonNode body = LocalServer.json(response);
            assertThat(body.get("rid").asText()).isEqualTo("tl-1");
            assertThat(body.get("role").asText()).isEqualTo("colocated");
            assertThat(body.get("ended").asBoolean()).isTrue();
            assertThat(body.get("dropped").asInt()).isZero();
            assertThat(body.get("host").asText()).isNotEmpty();
            List<String> events = new ArrayList<>();
            long previous = -1;
            for (JsonNode entry : body.get("entries")) {
                events.add(entry.get("event").asText());
                assertThat(entry.get("offset_us").asLong()).isGreaterThanOrEqualTo(previous);
                assertThat(entry.get("epoch_us").asLong()).isGreaterThanOrEqualTo(body.get("start_epoch_us").asLong());
                previous = entry.get("offset_us").asLong();
            }
            assertThat(events).containsExactly("queued", "admitted", "forward_done", "first_token", "done");

            JsonNode list = LocalServer.json(local.get("/debug/requests"));
            assertThat(list.get("rids").toString()).contains("\"tl-1\"");
            assertThat(list.get("capacity").asInt()).isEqualTo(1000);
        }
    }

    @Test
    void anUnknownRidIs404SayingWhatIsKept()
            throws Exception
    {
        ServerConfig config = ServerConfig.loopback().withAccess(ApiAccess.OPEN.withDebugEndpoints(true));
        try (LocalServer local = new LocalServer(new SchedulerConfig(4, 256, 16, true, 2), config, 64, model)) {
            HttpResponse<String> response = local.get("/debug/requests/never-sent");

            assertThat(response.statusCode()).isEqualTo(404);
            assertError(LocalServer.json(response), "unknown_rid", "rid", "has no timeline for rid 'never-sent'");
            assertThat(response.body()).contains("the last 1000 requests");
        }
    }

    @Test
    void withDebugEndpointsOffTheRouteDoesNotExistAndWithKeysItNeedsOne()
            throws Exception
    {
        try (LocalServer off = new LocalServer(new SchedulerConfig(4, 256, 16, true, 2), ServerConfig.loopback(), 64, model)) {
            HttpResponse<String> response = off.get("/debug/requests/x");
            assertThat(response.statusCode()).isEqualTo(404);
            assertError(LocalServer.json(response), "not_found", "", "no endpoint /debug/requests/x");
        }
        ServerConfig keyed = ServerConfig.loopback().withAccess(ApiAccess.OPEN.withDebugEndpoints(true).withApiKeys(ApiKeys.of(List.of("k-dbg"))));
        try (LocalServer local = new LocalServer(new SchedulerConfig(4, 256, 16, true, 2), keyed, 64, model)) {
            assertThat(local.get("/debug/requests").statusCode()).isEqualTo(401);
            HttpResponse<String> withKey = local.client.send(HttpRequest.newBuilder(local.uri("/debug/requests"))
                    .header("Authorization", "Bearer k-dbg").build(), HttpResponse.BodyHandlers.ofString());
            assertThat(withKey.statusCode()).as(withKey.body()).isEqualTo(200);
        }
    }

    @Test
    void autoIsOnOnlyOnALoopbackAddressAndOnOrOffDecideAlone()
    {
        assertThat(debugEndpoints(Map.of())).as("the defaults: auto on 127.0.0.1").isTrue();
        assertThat(debugEndpoints(Map.of("handoff.server.host", "::1"))).isTrue();
        assertThat(debugEndpoints(Map.of("handoff.server.host", "localhost"))).isTrue();
        assertThat(debugEndpoints(Map.of("handoff.server.host", "0.0.0.0"))).isFalse();
        assertThat(debugEndpoints(Map.of("handoff.server.host", "10.1.2.3"))).isFalse();
        assertThat(debugEndpoints(Map.of("handoff.server.host", "0.0.0.0", "handoff.server.debug-endpoints", "on"))).isTrue();
        assertThat(debugEndpoints(Map.of("handoff.server.debug-endpoints", "off"))).isFalse();
    }

    @Test
    void anythingButAutoOnOrOffIsRefusedNamingTheChoices()
    {
        assertThatThrownBy(() -> debugEndpoints(Map.of("handoff.server.debug-endpoints", "true")))
                .isInstanceOf(InvalidConfigException.class)
                .satisfies(e -> assertThat(((InvalidConfigException) e).problems().toString())
                        .contains("handoff.server.debug-endpoints").contains("auto").contains("off"));
        assertThatThrownBy(() -> DebugEndpoints.parse("yes")).hasMessageContaining("must be auto, on or off, not 'yes'");
    }

    private static boolean debugEndpoints(Map<String, String> overrides)
    {
        HandoffConfig config = HandoffConfig.load(new ConfigSource(Optional.empty(), overrides, Map.of()), List.of());
        return DebugEndpoints.enabled(config.config());
    }
}
