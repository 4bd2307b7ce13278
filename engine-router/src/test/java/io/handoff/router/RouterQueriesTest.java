package io.handoff.router;

import com.fasterxml.jackson.databind.JsonNode;
import org.junit.jupiter.api.Test;

import java.net.http.HttpResponse;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The model and admin queries through the router: answered by a healthy decode, which the {@code X-Handoff-Backend}
 * header names, with the path and body passed on as the client sent them; {@code /flush_cache} reaches every server,
 * and the answer lists each one's result.
 */
class RouterQueriesTest
{
    @Test
    void infoAndTokenizeQueriesAreAnsweredByADecodeNamedInTheHeader()
            throws Exception
    {
        try (RouterFixture fixture = RouterFixture.start(1, 1)) {
            for (String path : List.of("/get_model_info", "/get_server_info", "/version")) {
                HttpResponse<String> response = fixture.get(path);
                assertThat(response.statusCode()).as(path).isEqualTo(200);
                assertThat(RouterFixture.json(response).get("server").textValue()).isEqualTo("d1");
                assertThat(response.headers().firstValue(BackendQueries.BACKEND_HEADER)).contains(fixture.decode().url().toString());
            }
            for (String path : List.of("/tokenize", "/detokenize", "/v1/tokenize", "/v1/detokenize")) {
                JsonNode answer = RouterFixture.json(fixture.post(path, "{\"text\": \"hello world\"}"));
                assertThat(answer.get("server").textValue()).as(path).isEqualTo("d1");
                assertThat(answer.get("method").textValue()).isEqualTo("POST");
                assertThat(answer.at("/body/text").textValue()).isEqualTo("hello world");
            }
            // the server's 404 for another model, passed on; the decoded id reaches it encoded again
            HttpResponse<String> other = fixture.get("/v1/models/org%2Fmy%20model");
            assertThat(other.statusCode()).isEqualTo(404);
            assertThat(RouterFixture.json(other).get("raw_path").textValue()).isEqualTo("/v1/models/org/my%20model");
            assertThat(fixture.get("/v1/models").statusCode()).isEqualTo(200);
            // a body the router cannot read is refused by the router itself
            assertThat(fixture.post("/tokenize", "{not json").statusCode()).isEqualTo(400);
        }
    }

    @Test
    void noHealthyDecodeIs503()
            throws Exception
    {
        try (RouterFixture fixture = RouterFixture.start(1, 1)) {
            fixture.decode().healthStatus = 503;
            fixture.poll();
            HttpResponse<String> response = fixture.get("/get_model_info");
            assertThat(response.statusCode()).isEqualTo(503);
            assertThat(RouterFixture.json(response).at("/error/message").textValue()).contains("decode");
        }
    }

    @Test
    void flushCacheReachesEveryServerAndReportsEachResult()
            throws Exception
    {
        try (RouterFixture fixture = RouterFixture.start(2, 1)) {
            HttpResponse<String> flushed = fixture.post("/flush_cache", "");
            assertThat(flushed.statusCode()).isEqualTo(200);
            JsonNode body = RouterFixture.json(flushed);
            assertThat(body.get("success").booleanValue()).isTrue();
            assertThat(body.get("backends")).hasSize(3);
            for (JsonNode result : body.get("backends")) {
                assertThat(result.get("status").intValue()).isEqualTo(200);
                assertThat(result.get("flushed").booleanValue()).isTrue();
            }
            assertThat(fixture.prefills).allSatisfy(prefill -> assertThat(prefill.flushes.get()).isEqualTo(1));
            assertThat(fixture.decode().flushes.get()).isEqualTo(1);

            // one server busy: 400, and the others still flushed
            fixture.prefills.get(1).flushStatus = 400;
            HttpResponse<String> refused = fixture.get("/flush_cache");
            assertThat(refused.statusCode()).isEqualTo(400);
            JsonNode partly = RouterFixture.json(refused);
            assertThat(partly.get("success").booleanValue()).isFalse();
            assertThat(partly.get("backends").findValuesAsText("url")).contains(fixture.prefills.get(1).url().toString());
            long refusedCount = 0;
            for (JsonNode result : partly.get("backends")) {
                boolean isBusy = result.get("url").textValue().equals(fixture.prefills.get(1).url().toString());
                assertThat(result.get("flushed").booleanValue()).isEqualTo(!isBusy);
                refusedCount += isBusy ? 1 : 0;
            }
            assertThat(refusedCount).isEqualTo(1);

            // one server gone: 502 naming it
            fixture.prefills.get(1).flushStatus = 200;
            fixture.prefills.get(1).stop();
            HttpResponse<String> gone = fixture.post("/flush_cache", "");
            assertThat(gone.statusCode()).isEqualTo(502);
            assertThat(gone.body()).contains("could not be reached");
        }
    }
}
