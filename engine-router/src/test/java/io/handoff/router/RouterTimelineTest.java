package io.handoff.router;

import com.fasterxml.jackson.databind.JsonNode;
import io.handoff.http.base.ApiAccess;
import io.handoff.http.base.ServerConfig;
import org.junit.jupiter.api.Test;

import java.net.http.HttpResponse;
import java.util.ArrayList;
import java.util.List;

import static io.handoff.router.RouterFixture.json;
import static org.assertj.core.api.Assertions.assertThat;

/** The router's own timeline of a request: received, paired, sent to each server, each server's answer, and what the client got. */
class RouterTimelineTest
{
    private static final ServerConfig DEBUG = ServerConfig.loopback().withAccess(ApiAccess.OPEN.withDebugEndpoints(true));

    @Test
    void aRoutedRequestRecordsItsPairTheSendsTheAnswersAndTheClientsStatus()
            throws Exception
    {
        try (RouterFixture fixture = RouterFixture.start(1, 1, RouterFixture.CONFIG, DEBUG)) {
            assertThat(fixture.post("/generate", "{\"text\": \"hello\", \"rid\": \"rt-1\"}").statusCode()).isEqualTo(200);

            awaitLine(fixture, "rt-1", "response from=prefill status=200");
            JsonNode timeline = json(fixture.get("/debug/requests/rt-1"));
            assertThat(timeline.get("role").asText()).isEqualTo("router");
            List<String> lines = lines(timeline);
            assertThat(lines.subList(0, 2)).satisfiesExactly(
                    line -> assertThat(line).isEqualTo("received path=/generate"),
                    line -> assertThat(line).startsWith("paired prefill=" + fixture.prefill().url() + " decode=" + fixture.decode().url() + " room="));
            // the two sends run at once, so the prefill may answer before the decode's send is recorded (and after the client
            // has its answer): each answer follows its own send, and the client's status follows the decode's answer
            String sentToPrefill = "sent to=prefill url=" + fixture.prefill().url();
            String sentToDecode = "sent to=decode url=" + fixture.decode().url();
            assertThat(lines).contains(sentToPrefill, sentToDecode, "response from=prefill status=200", "response from=decode status=200");
            assertThat(lines.indexOf("response from=prefill status=200")).isGreaterThan(lines.indexOf(sentToPrefill));
            assertThat(lines.indexOf("response from=decode status=200")).isGreaterThan(lines.indexOf(sentToDecode));
            assertThat(lines.indexOf("routed status=200")).isGreaterThan(lines.indexOf("response from=decode status=200"));
            assertThat(timeline.get("ended").asBoolean()).isTrue();
        }
    }

    @Test
    void aPrefillFailureIsTheRoutedOutcomeAndTheDecodesAbortIsNotAnAnswer()
            throws Exception
    {
        try (RouterFixture fixture = RouterFixture.start(1, 1, RouterFixture.CONFIG, DEBUG)) {
            fixture.prefill().generator = (self, exchange, body) -> FakeBackend.json(exchange, 500,
                    json("{\"error\": {\"message\": \"prefill exploded\", \"type\": \"server_error\", \"param\": null, \"code\": \"internal_error\"}}"));
            fixture.decode().generator = (self, exchange, body) -> {
                self.awaitAbort(body.path("rid").asText());
                FakeBackend.json(exchange, 200, FakeBackend.response(self, body.path("rid").asText(), ""));
            };

            HttpResponse<String> response = fixture.post("/generate", "{\"text\": \"hi\", \"rid\": \"rt-2\"}");

            assertThat(response.statusCode()).isEqualTo(500);
            awaitLine(fixture, "rt-2", "response from=prefill status=500");
            List<String> lines = lines(json(fixture.get("/debug/requests/rt-2")));
            assertThat(lines).contains("response from=prefill status=500", "routed status=500");
            assertThat(lines).noneMatch(line -> line.startsWith("response from=decode"));
        }
    }

    @Test
    void theRouterSaysWhichRidsItKeeps()
            throws Exception
    {
        try (RouterFixture fixture = RouterFixture.start(1, 1, RouterFixture.CONFIG, DEBUG)) {
            fixture.post("/generate", "{\"text\": \"hello\", \"rid\": \"rt-3\"}");

            assertThat(json(fixture.get("/debug/requests")).get("rids").toString()).isEqualTo("[\"rt-3\"]");
            assertThat(fixture.get("/debug/requests/other").statusCode()).isEqualTo(404);
        }
    }

    /**
     * Until {@code rid}'s timeline has {@code line}: the prefill's answer is recorded by a callback on its call, which may
     * run after the router has answered the client.
     */
    private static void awaitLine(RouterFixture fixture, String rid, String line)
    {
        String path = "/debug/requests/" + rid;
        RouterFixture.await(() -> lines(json(fixture.get(path))).contains(line), () -> "'" + line + "' in " + fixture.get(path).body());
    }

    private static List<String> lines(JsonNode timeline)
    {
        List<String> lines = new ArrayList<>();
        for (JsonNode entry : timeline.get("entries")) {
            lines.add((entry.get("event").asText() + " " + entry.get("detail").asText()).strip());
        }
        return lines;
    }
}
