package io.handoff.dist;

import com.fasterxml.jackson.databind.JsonNode;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.net.Socket;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import java.util.function.Predicate;
import java.util.stream.Stream;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * {@code handoff serve --role colocated} of the built distribution, over real HTTP on loopback: one server
 * for the class (each start costs seconds), requests from {@link java.net.http.HttpClient}.
 */
class ServeIT
{
    private static final String LONG_STREAM = "{\"text\": \"tell me everything\", \"rid\": \"%s\", \"stream\": true, "
            + "\"sampling_params\": {\"max_new_tokens\": 3000, \"ignore_eos\": true}}";

    @TempDir
    static Path temp;
    private static ServerProcess server;

    @BeforeAll
    static void start()
            throws IOException
    {
        server = ServerProcess.start(temp, "-Dhandoff.server.max-body-bytes=64KiB", "-Dhandoff.kv.pool-pages=1024");
    }

    @AfterAll
    static void stop()
            throws InterruptedException
    {
        server.close();
    }

    @Test
    void generateOverHttpProducesTheSameTokensAsHandoffGenerateJson()
            throws Exception
    {
        Path out = Files.createTempFile(temp, "generate", ".json");
        Process generate = new ProcessBuilder(ServerProcess.DIST.resolve("bin/handoff").toString(), "generate", "--prompt", "Once upon a time",
                "--max-new-tokens", "24", "--temperature", "0.8", "--seed", "11", "--json", "-Dhandoff.kv.pool-pages=1024")
                .directory(temp.toFile()).redirectOutput(out.toFile()).redirectError(ProcessBuilder.Redirect.DISCARD).start();
        assertThat(generate.waitFor(2, TimeUnit.MINUTES)).isTrue();
        assertThat(generate.exitValue()).isZero();
        JsonNode expected = ServerProcess.JSON.readTree(out.toFile()).get(0);

        JsonNode generated = ServerProcess.json(server.post("/generate",
                "{\"text\": \"Once upon a time\", \"sampling_params\": {\"max_new_tokens\": 24, \"temperature\": 0.8, \"seed\": 11}}").body());
        JsonNode completed = ServerProcess.json(server.post("/v1/completions",
                "{\"model\": \"tiny-mla\", \"prompt\": \"Once upon a time\", \"max_tokens\": 24, \"temperature\": 0.8, \"seed\": 11}").body());

        assertThat(generated.get("output_ids")).isEqualTo(expected.get("output_ids"));
        assertThat(generated.get("text").asText()).isEqualTo(expected.get("text").asText());
        assertThat(generated.get("meta_info").get("prompt_tokens").asInt()).isEqualTo(expected.get("prompt_tokens").asInt());
        assertThat(generated.get("meta_info").get("finish_reason").get("type").asText()).isEqualTo(expected.get("finish_reason").asText());
        assertThat(completed.get("choices").get(0).get("text").asText()).isEqualTo(expected.get("text").asText());
        assertThat(completed.get("usage").get("completion_tokens").asInt()).isEqualTo(expected.get("completion_tokens").asInt());
    }

    @Test
    void completionsAnswersWholeAndAsServerSentEventsWithTheSameText()
    {
        String request = "{\"prompt\": \"The quick brown fox\", \"max_tokens\": 12, \"temperature\": 0, \"ignore_eos\": true";
        HttpResponse<String> whole = server.post("/v1/completions", request + "}");
        HttpResponse<Stream<String>> streamed = server.stream("/v1/completions", request + ", \"stream\": true}");

        assertThat(whole.statusCode()).as(whole.body()).isEqualTo(200);
        JsonNode body = ServerProcess.json(whole.body());
        assertThat(body.get("object").asText()).isEqualTo("text_completion");
        assertThat(body.get("model").asText()).isEqualTo("tiny-mla");
        assertThat(body.get("choices").get(0).get("finish_reason").asText()).isEqualTo("length");
        assertThat(body.get("usage").get("prompt_tokens").asInt()).isEqualTo(20);
        assertThat(body.get("usage").get("completion_tokens").asInt()).isEqualTo(12);
        List<String> events = events(streamed);
        assertThat(events.getLast()).isEqualTo("[DONE]");
        List<JsonNode> chunks = events.subList(0, events.size() - 1).stream().map(ServerProcess::json).toList();
        assertThat(chunks).hasSize(13);
        StringBuilder text = new StringBuilder();
        chunks.forEach(chunk -> text.append(chunk.get("choices").get(0).get("text").asText()));
        assertThat(text.toString()).isEqualTo(body.get("choices").get(0).get("text").asText());
        assertThat(chunks.getLast().get("choices").get(0).get("finish_reason").asText()).isEqualTo("length");
    }

    @Test
    void generateStreamsCumulativeChunksEndingWithDone()
    {
        List<String> events = events(server.stream("/generate",
                "{\"text\": \"abc\", \"stream\": true, \"sampling_params\": {\"max_new_tokens\": 6, \"temperature\": 0, \"ignore_eos\": true}}"));

        assertThat(events.getLast()).isEqualTo("[DONE]");
        JsonNode last = ServerProcess.json(events.get(events.size() - 2));
        assertThat(last.get("output_ids")).hasSize(6);
        assertThat(last.get("meta_info").get("finish_reason").get("type").asText()).isEqualTo("length");
        assertThat(events).hasSize(6 + 2);
    }

    @Test
    void abortRequestByRidEndsAGenerationAfterItsFirstStreamedToken()
    {
        Iterator<String> lines = server.stream("/generate", LONG_STREAM.formatted("abort-by-rid")).body().iterator();
        JsonNode first = ServerProcess.json(nextEvent(lines));
        assertThat(first.get("output_ids")).isNotEmpty();

        HttpResponse<String> abort = server.post("/abort_request", "{\"rid\": \"abort-by-rid\"}");

        assertThat(abort.statusCode()).as(abort.body()).isEqualTo(200);
        List<String> rest = new ArrayList<>();
        lines.forEachRemaining(line -> {
            if (line.startsWith("data: ")) {
                rest.add(line.substring(6));
            }
        });
        assertThat(rest.getLast()).isEqualTo("[DONE]");
        JsonNode last = ServerProcess.json(rest.get(rest.size() - 2));
        assertThat(last.get("meta_info").get("finish_reason").get("type").asText()).isEqualTo("abort");
        assertThat(last.get("meta_info").get("completion_tokens").asInt()).isBetween(1, 2999);
        awaitMetrics(m -> m.get("handoff_running_requests") == 0 && m.get("handoff_kv_request_pages") == 0, "the aborted request's pages back");
    }

    @Test
    void clientThatDisconnectsMidStreamIsAbortedAndTheKvPageCountReturnsToItsStart()
            throws IOException
    {
        Map<String, Double> before = awaitMetrics(m -> m.get("handoff_running_requests") == 0, "no request running");
        byte[] body = LONG_STREAM.formatted("disconnecting").getBytes(StandardCharsets.UTF_8);
        try (Socket socket = new Socket("127.0.0.1", server.port)) {
            OutputStream out = socket.getOutputStream();
            out.write(("POST /generate HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: " + body.length
                    + "\r\n\r\n").getBytes(StandardCharsets.US_ASCII));
            out.write(body);
            out.flush();
            BufferedReader in = new BufferedReader(new InputStreamReader(socket.getInputStream(), StandardCharsets.UTF_8));
            String line;
            do {
                line = in.readLine();
                assertThat(line).as("the stream ended before its first token").isNotNull();
            }
            while (!line.startsWith("data: {"));
            Map<String, Double> during = metrics();
            assertThat(during.get("handoff_running_requests")).isEqualTo(1);
            assertThat(during.get("handoff_kv_request_pages")).isGreaterThan(before.get("handoff_kv_request_pages"));
        }

        // The exchange ends (in-flight 0) after the scheduler has let the request go; wait for both.
        Map<String, Double> after = awaitMetrics(m -> m.get("handoff_running_requests") == 0 && m.get("handoff_server_inflight_requests") == 0
                && m.get("handoff_kv_request_pages").equals(before.get("handoff_kv_request_pages")), "the KV page count back at its start");

        assertThat(after.get("handoff_client_disconnects_total")).isEqualTo(before.get("handoff_client_disconnects_total") + 1);
        assertThat(after.get("handoff_server_inflight_requests")).isZero();
        assertThat(after.get("handoff_kv_pages{state=\"free\"}") + after.get("handoff_prefix_cache_pages")).isEqualTo(after.get("handoff_kv_pool_pages"));
    }

    @Test
    void metricsAreValidPrometheusTextCoveringRequestsTokensLatenciesAndPages()
    {
        server.post("/v1/completions", "{\"prompt\": \"count me\", \"max_tokens\": 3}");

        HttpResponse<String> response = server.get("/metrics");

        assertThat(response.statusCode()).isEqualTo(200);
        assertThat(response.headers().firstValue("Content-Type")).hasValueSatisfying(type -> assertThat(type).startsWith("text/plain; version=0.0.4"));
        Map<String, Double> samples = PrometheusFormat.parse(response.body());
        assertThat(samples.get("handoff_kv_pool_pages")).isEqualTo(1024);
        double byState = samples.entrySet().stream().filter(e -> e.getKey().startsWith("handoff_kv_pages{state=")).mapToDouble(Map.Entry::getValue).sum();
        assertThat(byState).isEqualTo(1024);
        assertThat(samples.get("handoff_http_requests_total{route=\"/v1/completions\",code=\"200\"}")).isGreaterThanOrEqualTo(1);
        assertThat(samples.get("handoff_time_to_first_token_seconds_count")).isGreaterThanOrEqualTo(1);
        assertThat(samples.get("handoff_time_to_first_token_seconds_bucket{le=\"+Inf\"}")).isEqualTo(samples.get("handoff_time_to_first_token_seconds_count"));
        assertThat(samples.get("handoff_inter_token_latency_seconds_count")).isGreaterThanOrEqualTo(2);
        assertThat(samples.get("handoff_generation_tokens_total")).isGreaterThanOrEqualTo(3);
        assertThat(samples).containsKeys("handoff_running_requests", "handoff_waiting_requests", "handoff_prefix_cache_hit_rate",
                "handoff_requests_finished_total{reason=\"length\"}", "handoff_e2e_request_latency_seconds_sum");
    }

    @Test
    void healthAndHealthGenerateAnswerOkAndModelsListsTheModel()
    {
        HttpResponse<String> health = server.get("/health");
        HttpResponse<String> generate = server.get("/health_generate");
        JsonNode models = ServerProcess.json(server.get("/v1/models").body());

        assertThat(health.statusCode()).isEqualTo(200);
        assertThat(generate.statusCode()).as(generate.body()).isEqualTo(200);
        assertThat(ServerProcess.json(generate.body()).get("status").asText()).isEqualTo("ok");
        assertThat(models.get("data").get(0).get("id").asText()).isEqualTo("tiny-mla");
    }

    static Stream<List<Object>> badRequests()
    {
        return Stream.of(
                List.of("/v1/completions", "{\"prompt\": \"x\", \"max_tokens\": ", 400, "not valid JSON at line 1, column 31"),
                List.of("/generate", "{\"text\": 42}", 400, "text must be a string, got the number 42"),
                List.of("/v1/completions", "{\"prompt\": \"x\", \"max_tokens\": 8.5}", 400, "max_tokens must be an integer, got the number 8.5"),
                List.of("/v1/completions", "{\"prompt\": \"x\", \"temprature\": 0}", 400, "unknown field 'temprature'"),
                List.of("/generate", "{\"text\": \"x\", \"sampling_params\": {\"max_new_tokens\": 0}}", 400,
                        "sampling_params.max_new_tokens must be in 1..4096, got 0"),
                List.of("/v1/completions", "{\"prompt\": \"x\", \"max_tokens\": 100000}", 400, "max_tokens must be in 1..4096, got 100000"),
                List.of("/v1/completions", "{\"prompt\": \"" + "y".repeat(5000) + "\"}", 400,
                        "the prompt is 5001 tokens; the model's context is 4096 tokens"),
                List.of("/v1/completions", "{\"prompt\": \"" + "y".repeat(4000) + "\", \"max_tokens\": 200}", 400,
                        "the prompt (4001 tokens) + max_tokens (200) = 4201 exceeds the model's context of 4096 tokens; set max_tokens to at most 95"),
                List.of("/v1/completions", "{\"prompt\": \"x\", \"model\": \"llama-70b\"}", 404, "model 'llama-70b' is not served here; this server serves 'tiny-mla'"),
                List.of("/v1/completions", "{\"prompt\": \"" + "z".repeat(200 * 1024) + "\"}", 413,
                        "the request body is larger than 65536 bytes (handoff.server.max-body-bytes)"),
                List.of("/abort_request", "{\"rid\": \"never-sent\"}", 404, "no request with rid 'never-sent' is in flight"));
    }

    @ParameterizedTest
    @MethodSource("badRequests")
    void badRequestGets4xxWithAnErrorObjectSayingWhatWasWrong(List<Object> bad)
    {
        HttpResponse<String> response = server.post((String) bad.get(0), (String) bad.get(1));

        assertThat(response.statusCode()).as(response.body()).isEqualTo(bad.get(2));
        JsonNode error = ServerProcess.json(response.body()).get("error");
        assertThat(error.get("message").asText()).contains((String) bad.get(3));
        assertThat(error.get("type").asText()).isEqualTo("invalid_request_error");
        assertThat(error.has("param") && error.has("code")).isTrue();
        assertThat(metrics().get("handoff_kv_request_pages")).isZero();
    }

    @Test
    void aPrefillWhoseTransferBackendIsUnknownExitsOneNamingIt()
            throws Exception
    {
        Launcher.Run run = Launcher.run(temp, "serve", "--role", "prefill", "--port", "0", "-Dhandoff.disaggregation.transfer-backend=carrier-pigeon");

        assertThat(run.exitCode()).as(run.describe()).isEqualTo(1);
        assertThat(run.stderr()).contains("no transfer backend 'carrier-pigeon' (handoff.disaggregation.transfer-backend); available: ");
    }

    private static Map<String, Double> metrics()
    {
        return PrometheusFormat.parse(server.get("/metrics").body());
    }

    /** Polls /metrics until {@code condition} holds; fails after a minute. */
    private static Map<String, Double> awaitMetrics(Predicate<Map<String, Double>> condition, String what)
    {
        long deadline = System.nanoTime() + Duration.ofMinutes(1).toNanos();
        Map<String, Double> samples = metrics();
        while (!condition.test(samples)) {
            assertThat(System.nanoTime()).as("waiting for %s; last metrics %s", what, samples).isLessThan(deadline);
            LockSupport.parkNanos(10_000_000);
            samples = metrics();
        }
        return samples;
    }

    private static List<String> events(HttpResponse<Stream<String>> response)
    {
        assertThat(response.statusCode()).isEqualTo(200);
        assertThat(response.headers().firstValue("Content-Type")).hasValueSatisfying(type -> assertThat(type).startsWith("text/event-stream"));
        try (Stream<String> lines = response.body()) {
            return lines.filter(line -> line.startsWith("data: ")).map(line -> line.substring(6)).toList();
        }
    }

    private static String nextEvent(Iterator<String> lines)
    {
        while (lines.hasNext()) {
            String line = lines.next();
            if (line.startsWith("data: ")) {
                return line.substring(6);
            }
        }
        throw new AssertionError("the stream ended before its first event");
    }
}
