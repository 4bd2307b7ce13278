package io.handoff.http;

import com.fasterxml.jackson.databind.JsonNode;
import io.handoff.core.HandoffVersion;
import io.handoff.core.model.ByteTokenizer;
import io.handoff.core.scheduler.HandoffRequest;
import io.handoff.core.scheduler.KvHandoff;
import io.handoff.core.scheduler.SchedulerConfig;
import io.handoff.core.scheduler.SchedulerStats;
import io.handoff.http.base.ApiAccess;
import io.handoff.http.base.ServerConfig;
import io.handoff.http.base.security.ApiKeys;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.net.http.HttpResponse;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * SGLang's admin endpoints and OpenAI's model object over real HTTP, against the real scheduler and model: their
 * shapes, what they refuse, and that {@code /flush_cache} returns the cache's pages to the free pool, refused (the cache
 * intact) while a request runs. The server's scheduler treats rids starting with "remote" as a decode does a request
 * whose prompt's KV is still on its way: it stays running until it is aborted.
 */
class AdminEndpointsTest
{
    private static final ByteTokenizer TOKENIZER = new ByteTokenizer();
    private static LocalServer local;

    /** Requests named "remote…" receive their prompt's KV, which never comes. */
    private static final class ReceivingForever
            implements KvHandoff
    {
        @Override
        public boolean receivesPrompt(HandoffRequest request)
        {
            return request.rid().startsWith("remote");
        }
    }

    @BeforeAll
    static void start()
            throws IOException
    {
        local = new LocalServer(new SchedulerConfig(8, 256, 64, false, 2), ServerConfig.loopback(), 256, null, new ReceivingForever(), Optional.empty());
    }

    @AfterAll
    static void stop()
    {
        local.close();
    }

    @Test
    void getModelInfoDescribesTheServedModel()
    {
        HttpResponse<String> response = local.get("/get_model_info");
        assertThat(response.statusCode()).isEqualTo(200);
        JsonNode body = LocalServer.json(response);
        assertThat(body.get("model_path").textValue()).isEqualTo("tiny-mla");
        assertThat(body.get("tokenizer_path").textValue()).isEqualTo("tiny-mla");
        assertThat(body.get("is_generation").booleanValue()).isTrue();
        assertThat(body.get("context_length").intValue()).isEqualTo(local.model.maxContext());
        assertThat(body.get("vocab_size").intValue()).isEqualTo(local.model.vocabSize());
        assertThat(body.get("architecture").textValue()).isEqualTo("MLA");
        assertThat(body.get("eos_token_ids")).hasSize(1);
        assertThat(body.get("eos_token_ids").get(0).intValue()).isEqualTo(ByteTokenizer.EOS);
    }

    @Test
    void getServerInfoReportsTheSettingsAndStateAndNeverASecret()
    {
        HttpResponse<String> response = local.get("/get_server_info");
        assertThat(response.statusCode()).isEqualTo(200);
        JsonNode body = LocalServer.json(response);
        assertThat(body.get("role").textValue()).isEqualTo("colocated");
        assertThat(body.get("disaggregation_mode").textValue()).isEqualTo("null");
        assertThat(body.has("disaggregation_transfer_backend")).isFalse();
        assertThat(body.get("model_path").textValue()).isEqualTo("tiny-mla");
        assertThat(body.get("port").intValue()).isEqualTo(local.server.address().getPort());
        assertThat(body.get("page_size").intValue()).isEqualTo(LocalServer.PAGE_SIZE);
        assertThat(body.get("max_running_requests").intValue()).isEqualTo(8);
        assertThat(body.get("chunked_prefill_size").intValue()).isEqualTo(256);
        assertThat(body.get("max_queued_requests").intValue()).isEqualTo(64);
        assertThat(body.get("disable_overlap_schedule").booleanValue()).isTrue();
        assertThat(body.get("max_total_num_tokens").longValue()).isEqualTo(256L * LocalServer.PAGE_SIZE);
        assertThat(body.get("version").textValue()).isEqualTo(HandoffVersion.get());
        JsonNode state = body.get("internal_states").get(0);
        assertThat(state.get("kv_pages_total").intValue()).isEqualTo(256);
        assertThat(state.get("running_requests").intValue()).isGreaterThanOrEqualTo(0);

        ServerConfig withKeys = ServerConfig.loopback().withAccess(ApiAccess.OPEN.withApiKeys(ApiKeys.of(List.of("sk-secret-key-1234567890"))));
        JsonNode guarded = new ServerInfo(withKeys, local.server::address, local.scheduler, local.model, Optional.empty(), "colocated")
                .body(local.scheduler.stats());
        assertThat(guarded.get("api_key_required").booleanValue()).isTrue();
        assertThat(guarded.toString()).doesNotContain("sk-secret-key-1234567890");
    }

    @Test
    void versionAndTheModelObjectAnd404ForAnotherModel()
    {
        assertThat(LocalServer.json(local.get("/version")).get("version").textValue()).isEqualTo(HandoffVersion.get());
        HttpResponse<String> one = local.get("/v1/models/tiny-mla");
        assertThat(one.statusCode()).isEqualTo(200);
        JsonNode card = LocalServer.json(one);
        assertThat(card.get("id").textValue()).isEqualTo("tiny-mla");
        assertThat(card.get("object").textValue()).isEqualTo("model");
        assertThat(card.get("max_model_len").intValue()).isEqualTo(local.model.maxContext());
        assertThat(card).isEqualTo(LocalServer.json(local.get("/v1/models")).get("data").get(0));
        for (String other : List.of("/v1/models/gpt-4o", "/v1/models/tiny-mla/extra", "/v1/models/org%2Fname")) {
            HttpResponse<String> missing = local.get(other);
            assertThat(missing.statusCode()).as(other).isEqualTo(404);
            assertThat(LocalServer.json(missing).at("/error/code").textValue()).isEqualTo("model_not_found");
            assertThat(LocalServer.json(missing).at("/error/message").textValue()).contains("tiny-mla");
        }
    }

    @Test
    void tokenizeAnswersTheTokenizersIdsAndDetokenizeTheirText()
    {
        JsonNode one = LocalServer.json(local.post("/tokenize", "{\"text\": \"hello world\"}"));
        int[] expected = TOKENIZER.encode("hello world", true);
        assertThat(ids(one.get("tokens"))).isEqualTo(expected);
        assertThat(one.get("count").intValue()).isEqualTo(expected.length);
        assertThat(one.get("max_model_len").intValue()).isEqualTo(local.model.maxContext());

        JsonNode plain = LocalServer.json(local.post("/v1/tokenize", "{\"prompt\": \"héllo\", \"add_special_tokens\": false, \"model\": \"tiny-mla\"}"));
        assertThat(ids(plain.get("tokens"))).isEqualTo(TOKENIZER.encode("héllo", false));

        JsonNode many = LocalServer.json(local.post("/tokenize", "{\"prompt\": [\"a\", \"bc\"], \"add_special_tokens\": false}"));
        assertThat(ids(many.get("tokens").get(1))).isEqualTo(TOKENIZER.encode("bc", false));
        assertThat(many.get("count").get(0).intValue()).isEqualTo(1);
        assertThat(many.get("count").get(1).intValue()).isEqualTo(2);

        String ids = LocalServer.JSON.valueToTree(TOKENIZER.encode("héllo wörld", false)).toString();
        JsonNode text = LocalServer.json(local.post("/detokenize", "{\"tokens\": " + ids + "}"));
        assertThat(text.get("text").textValue()).isEqualTo("héllo wörld");
        JsonNode texts = LocalServer.json(local.post("/v1/detokenize", "{\"tokens\": [" + ids + ", []]}"));
        assertThat(texts.get("text").get(0).textValue()).isEqualTo("héllo wörld");
        assertThat(texts.get("text").get(1).textValue()).isEmpty();
        assertThat(LocalServer.json(local.post("/detokenize", "{\"tokens\": []}")).get("text").textValue()).isEmpty();
    }

    @Test
    void tokenizeAndDetokenizeRefuseBadInputNamingTheField()
    {
        int vocab = local.model.vocabSize();
        assertRefused(local.post("/tokenize", "{}"), 400, "prompt", "exactly one of 'prompt' or 'text'");
        assertRefused(local.post("/tokenize", "{\"prompt\": \"a\", \"text\": \"b\"}"), 400, "prompt", "exactly one of");
        assertRefused(local.post("/tokenize", "{\"text\": 7}"), 400, "text", "a string or a non-empty list of strings");
        assertRefused(local.post("/tokenize", "{\"text\": [\"a\", 1]}"), 400, "text", "text[1] must be a string");
        assertRefused(local.post("/tokenize", "{\"text\": \"a\", \"max_length\": 3}"), 400, "max_length", "unknown field");
        assertRefused(local.post("/tokenize", "{\"text\": \"a\", \"model\": \"gpt-4o\"}"), 404, "model", "not served here");
        String tooMany = "[" + "\"a\",".repeat(TokenizeEndpoints.MAX_ITEMS) + "\"a\"]";
        assertRefused(local.post("/tokenize", "{\"text\": " + tooMany + "}"), 400, "text", "at most " + TokenizeEndpoints.MAX_ITEMS);
        assertRefused(local.post("/detokenize", "{\"tokens\": [1, " + vocab + "]}"), 400, "tokens", "tokens[1] = " + vocab + " is outside [0, " + vocab + ")");
        assertRefused(local.post("/detokenize", "{\"tokens\": [-1]}"), 400, "tokens", "outside");
        assertRefused(local.post("/detokenize", "{\"tokens\": [1.5]}"), 400, "tokens", "must be an integer");
        assertRefused(local.post("/detokenize", "{\"tokens\": [[1], 2]}"), 400, "tokens", "tokens[1] must be a list");
        assertRefused(local.post("/detokenize", "{\"tokens\": \"abc\"}"), 400, "tokens", "a list of token ids");
        assertRefused(local.post("/detokenize", "{}"), 400, "tokens", "'tokens' is required");
        assertRefused(local.post("/detokenize", "{\"tokens\": [1], \"skip_special_tokens\": false}"), 400, "skip_special_tokens", "not supported");
        // the body limit bounds the text: 1 MiB on this server
        String huge = "x".repeat((1 << 20) + 1);
        assertThat(local.post("/tokenize", "{\"text\": \"" + huge + "\"}").statusCode()).isEqualTo(413);
        assertThat(local.get("/tokenize").statusCode()).isEqualTo(405);
    }

    @Test
    void flushCacheReturnsTheCachedPagesToTheFreePoolAndIsRefusedWhileARequestRuns()
            throws Exception
    {
        assertThat(local.post("/generate", "{\"text\": \"" + "a long enough prompt to fill pages ".repeat(3) + "\", "
                + "\"sampling_params\": {\"max_new_tokens\": 4, \"temperature\": 0}}").statusCode()).isEqualTo(200);
        SchedulerStats before = local.awaitStats(stats -> stats.running() == 0 && stats.cachedPages() > 0, "the finished request's prefix to be cached");
        int cached = before.cachedPages();

        // a decode's request waiting for its prompt's KV: running, so the flush is refused and the cache stays
        CompletableFuture<HttpResponse<String>> receiving = CompletableFuture.supplyAsync(() -> local.post("/generate",
                "{\"rid\": \"remote-1\", \"text\": \"abc\", \"sampling_params\": {\"max_new_tokens\": 4}}"));
        local.awaitStats(stats -> stats.running() == 1 && stats.pages().receiving() > 0, "the remote request to be admitted, receiving");
        for (String method : List.of("GET", "POST")) {
            HttpResponse<String> refused = method.equals("GET") ? local.get("/flush_cache") : local.post("/flush_cache", "");
            assertRefused(refused, 400, null, "1 request(s) running and 0 waiting");
            assertThat(LocalServer.json(refused).at("/error/code").textValue()).isEqualTo("requests_in_flight");
        }
        assertThat(local.scheduler.stats().cachedPages()).isEqualTo(cached);
        assertThat(local.post("/abort_request", "{\"rid\": \"remote-1\"}").statusCode()).isEqualTo(200);
        receiving.get();
        local.awaitStats(stats -> stats.running() == 0 && LocalServer.requestPages(stats) == 0, "the aborted request to return its pages");

        HttpResponse<String> flushed = local.post("/flush_cache", "");
        assertThat(flushed.statusCode()).isEqualTo(200);
        JsonNode body = LocalServer.json(flushed);
        assertThat(body.get("success").booleanValue()).isTrue();
        assertThat(body.get("dropped_pages").intValue()).isEqualTo(cached);
        assertThat(body.get("free_pages").intValue()).isEqualTo(256);
        String metrics = local.get("/metrics").body();
        assertThat(metrics).contains("handoff_kv_pages{state=\"free\"} 256", "handoff_prefix_cache_pages 0");
        assertThat(local.get("/flush_cache").statusCode()).isEqualTo(200);
        assertThat(local.client.send(java.net.http.HttpRequest.newBuilder(local.uri("/flush_cache"))
                .method("PUT", java.net.http.HttpRequest.BodyPublishers.noBody()).build(), HttpResponse.BodyHandlers.ofString()).headers()
                .firstValue("Allow")).contains("GET, POST");
    }

    private static void assertRefused(HttpResponse<String> response, int status, String param, String message)
    {
        assertThat(response.statusCode()).as(response.body()).isEqualTo(status);
        JsonNode error = LocalServer.json(response).get("error");
        if (param != null) {
            assertThat(error.get("param").textValue()).isEqualTo(param);
        }
        assertThat(error.get("message").textValue()).contains(message);
    }

    private static int[] ids(JsonNode array)
    {
        int[] ids = new int[array.size()];
        for (int i = 0; i < ids.length; i++) {
            ids[i] = array.get(i).intValue();
        }
        return ids;
    }
}
