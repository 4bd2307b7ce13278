package io.handoff.http;

import io.handoff.core.model.Transformer;
import io.handoff.core.scheduler.SchedulerConfig;
import io.handoff.http.base.ApiAccess;
import io.handoff.http.base.RequestLimits;
import io.handoff.http.base.ServerConfig;
import io.handoff.http.base.security.ApiKeys;
import io.handoff.http.testing.PrometheusFormat;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.util.List;

import static io.handoff.http.ApiServerTest.assertError;
import static org.assertj.core.api.Assertions.assertThat;

/** The real server with API keys and a prompt limit configured: who gets in, and what is refused before it reaches the scheduler. */
class ApiServerAccessTest
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
    void withApiKeysEveryEndpointButHealthNeedsOneAndTheRightOneGetsAnswers()
            throws Exception
    {
        ServerConfig config = ServerConfig.loopback().withAccess(ApiAccess.OPEN.withApiKeys(ApiKeys.of(List.of("k-acc", "k-other"))));
        try (LocalServer local = new LocalServer(new SchedulerConfig(4, 256, 16, true, 2), config, 64, model)) {
            String completion = "{\"prompt\": \"hi\", \"max_tokens\": 1}";
            for (String path : List.of("/v1/models", "/metrics", "/bootstrap", "/health_generate")) {
                assertThat(local.get(path).statusCode()).as("GET %s without a key", path).isEqualTo(401);
            }
            HttpResponse<String> refused = local.post("/v1/completions", completion);
            assertThat(refused.statusCode()).isEqualTo(401);
            assertThat(refused.headers().firstValue("WWW-Authenticate")).contains("Bearer realm=\"handoff\"");
            assertError(LocalServer.json(refused), "missing_api_key", "", "requires an API key");
            assertThat(local.post("/generate", "{\"text\": \"hi\"}").statusCode()).isEqualTo(401);
            assertThat(local.get("/health").statusCode()).isEqualTo(200);

            assertThat(send(local, "/v1/completions", completion, "Bearer k-wrong").statusCode()).isEqualTo(401);
            HttpResponse<String> accepted = send(local, "/v1/completions", completion, "Bearer k-acc");
            assertThat(accepted.statusCode()).as(accepted.body()).isEqualTo(200);
            assertThat(LocalServer.json(accepted).get("usage").get("completion_tokens").asInt()).isEqualTo(1);
            assertThat(send(local, "/generate", "{\"text\": \"hi\", \"sampling_params\": {\"max_new_tokens\": 1}}", "Bearer k-other").statusCode())
                    .isEqualTo(200);
            HttpResponse<String> metrics = local.client.send(HttpRequest.newBuilder(local.uri("/metrics")).header("Authorization", "Bearer k-acc")
                    .build(), HttpResponse.BodyHandlers.ofString());
            assertThat(PrometheusFormat.parse(metrics.body()).get("handoff_http_requests_total{route=\"/v1/completions\",code=\"401\"}")).isEqualTo(2);
        }
    }

    @Test
    void aPromptOverTheConfiguredLimitIs400NamingTheLimit()
            throws Exception
    {
        ServerConfig config = ServerConfig.loopback().withLimits(RequestLimits.DEFAULT.withMaxPromptTokens(8));
        try (LocalServer local = new LocalServer(new SchedulerConfig(4, 256, 16, true, 2), config, 64, model)) {
            // the byte tokenizer: a start token and one token per byte
            HttpResponse<String> tooLong = local.post("/v1/completions", "{\"prompt\": \"12345678\", \"max_tokens\": 1}");
            HttpResponse<String> fits = local.post("/v1/completions", "{\"prompt\": \"1234567\", \"max_tokens\": 1}");
            HttpResponse<String> ids = local.post("/generate", "{\"input_ids\": [1, 2, 3, 4, 5, 6, 7, 8, 9]}");

            assertThat(tooLong.statusCode()).isEqualTo(400);
            assertError(LocalServer.json(tooLong), "prompt_too_long", "prompt",
                    "the prompt is 9 tokens; this server accepts at most 8 (handoff.server.max-prompt-tokens)");
            assertThat(fits.statusCode()).as(fits.body()).isEqualTo(200);
            assertError(LocalServer.json(ids), "prompt_too_long", "input_ids", "the prompt is 9 tokens");
        }
    }

    private static HttpResponse<String> send(LocalServer local, String path, String body, String authorization)
            throws Exception
    {
        return local.client.send(HttpRequest.newBuilder(local.uri(path)).header("Authorization", authorization)
                .POST(HttpRequest.BodyPublishers.ofString(body)).build(), HttpResponse.BodyHandlers.ofString());
    }
}
