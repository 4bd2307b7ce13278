package io.handoff.http;

import com.fasterxml.jackson.databind.JsonNode;
import io.handoff.core.model.ByteTokenizer;
import io.handoff.core.model.SamplingParams;
import io.handoff.core.scheduler.GenerateRequest;
import io.handoff.core.scheduler.GenerateResult;
import io.handoff.core.scheduler.LogprobRequest;
import io.handoff.core.scheduler.SchedulerConfig;
import io.handoff.core.scheduler.TokenListener;
import io.handoff.core.scheduler.TokenLogprob;
import io.handoff.http.base.ServerConfig;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.net.Socket;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.stream.Stream;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Several outputs for one request over real HTTP and the real scheduler: batched {@code /generate}, OpenAI prompt
 * lists and {@code n}, their order, indexes, seeds, usage, bound, prompt sharing and abort by the request's rid.
 */
class SeveralOutputsTest
{
    private static LocalServer local;

    @BeforeAll
    static void start()
            throws IOException
    {
        local = LocalServer.standard();
    }

    @AfterAll
    static void stop()
    {
        local.close();
    }

    @AfterEach
    void nothingIsLeftInFlightAndNoPageIsHeldByARequest()
    {
        local.awaitNothingInFlight();
    }

    @Test
    void aBatchAnswersAListInPromptOrderEachAsItsOwnRequestWouldBe()
    {
        JsonNode batch = ok("/generate", "{\"text\": [\"one two\", \"three four\", \"five\"], \"sampling_params\": {\"max_new_tokens\": 6, "
                + "\"temperature\": 0.9, \"seed\": 11}}");

        assertThat(batch.isArray()).isTrue();
        assertThat(batch).hasSize(3);
        String[] prompts = {"one two", "three four", "five"};
        for (int i = 0; i < prompts.length; i++) {
            JsonNode single = ok("/generate", "{\"text\": \"" + prompts[i] + "\", \"sampling_params\": {\"max_new_tokens\": 6, \"temperature\": 0.9, "
                    + "\"seed\": 11}}");
            assertThat(batch.get(i).get("output_ids")).as("prompt %d", i).isEqualTo(single.get("output_ids"));
            assertThat(batch.get(i).get("text")).isEqualTo(single.get("text"));
            assertThat(batch.get(i).has("index")).isFalse();
        }
        JsonNode ids = ok("/generate", "{\"input_ids\": [[256, 104, 105], [256, 111]], \"sampling_params\": {\"max_new_tokens\": 3, \"temperature\": 0}}");
        assertThat(ids).hasSize(2);
        assertThat(ids.get(1).get("output_ids")).isEqualTo(ok("/generate", "{\"input_ids\": [256, 111], \"sampling_params\": "
                + "{\"max_new_tokens\": 3, \"temperature\": 0}}").get("output_ids"));
    }

    @Test
    void nOutputsPerPromptArePromptMajorAndOutputJSamplesWithSeedPlusJ()
    {
        JsonNode outputs = ok("/generate", "{\"text\": [\"alpha\", \"beta\"], \"rid\": \"grp\", \"sampling_params\": {\"n\": 2, "
                + "\"max_new_tokens\": 8, \"temperature\": 1.0, \"seed\": 5}}");

        assertThat(outputs).hasSize(4);
        String[] prompts = {"alpha", "beta"};
        for (int i = 0; i < 4; i++) {
            JsonNode single = ok("/generate", "{\"text\": \"" + prompts[i / 2] + "\", \"sampling_params\": {\"max_new_tokens\": 8, "
                    + "\"temperature\": 1.0, \"seed\": " + (5 + i % 2) + "}}");
            assertThat(outputs.get(i).get("output_ids")).as("output %d", i).isEqualTo(single.get("output_ids"));
            assertThat(outputs.get(i).at("/meta_info/id").textValue()).isEqualTo("grp-" + i);
        }
        // seeds 5 and 6 draw differently: the two outputs of a prompt are two samples, not one twice
        assertThat(outputs.get(0).get("output_ids")).isNotEqualTo(outputs.get(1).get("output_ids"));
    }

    @Test
    void aRidListNamesEachPromptsOutputs()
    {
        JsonNode outputs = ok("/generate", "{\"text\": [\"x\", \"y\"], \"rid\": [\"first\", \"second\"], \"sampling_params\": {\"max_new_tokens\": 2}}");
        assertThat(outputs.get(0).at("/meta_info/id").textValue()).isEqualTo("first");
        assertThat(outputs.get(1).at("/meta_info/id").textValue()).isEqualTo("second");
        JsonNode withN = ok("/generate", "{\"text\": [\"x\", \"y\"], \"rid\": [\"a\", \"b\"], \"sampling_params\": {\"max_new_tokens\": 2, \"n\": 2}}");
        assertThat(withN.findValuesAsText("id")).containsExactly("a-0", "a-1", "b-0", "b-1");
        refused("/generate", "{\"text\": [\"x\", \"y\"], \"rid\": [\"a\"]}", "rid", "rid lists 1 ids for 2 prompts");
        refused("/generate", "{\"text\": [\"x\", \"y\"], \"rid\": [\"a\", \"a\"]}", "rid", "appears twice");
    }

    @Test
    void aBatchStreamMarksEveryEventWithItsOutputAndEndsWithOneDone()
    {
        String body = "{\"text\": [\"one two\", \"three four\"], \"stream\": true, \"sampling_params\": {\"n\": 2, \"max_new_tokens\": 5, "
                + "\"temperature\": 0.8, \"seed\": 3, \"ignore_eos\": true}}";
        JsonNode whole = ok("/generate", body.replace("\"stream\": true", "\"stream\": false"));
        HttpResponse<Stream<String>> response = local.stream("/generate", body);
        assertThat(response.statusCode()).isEqualTo(200);
        List<String> data = response.body().filter(line -> line.startsWith("data: ")).map(line -> line.substring(6)).toList();

        assertThat(data.getLast()).isEqualTo("[DONE]");
        assertThat(data.stream().filter("[DONE]"::equals)).hasSize(1);
        Map<Integer, JsonNode> last = new HashMap<>();
        Map<Integer, Integer> events = new HashMap<>();
        for (String event : data.subList(0, data.size() - 1)) {
            JsonNode chunk = LocalServer.json(event);
            int index = chunk.get("index").intValue();
            assertThat(last.containsKey(index) && !last.get(index).at("/meta_info/finish_reason").isNull())
                    .as("an event of output %d after its finish", index).isFalse();
            last.put(index, chunk);
            events.merge(index, 1, Integer::sum);
        }
        assertThat(last.keySet()).containsExactlyInAnyOrder(0, 1, 2, 3);
        for (int i = 0; i < 4; i++) {
            assertThat(last.get(i).get("output_ids")).as("output %d", i).isEqualTo(whole.get(i).get("output_ids"));
            assertThat(last.get(i).at("/meta_info/finish_reason/type").textValue()).isEqualTo("length");
            assertThat(events.get(i)).isEqualTo(6); // a chunk per token, then the last one
        }
    }

    @Test
    void completionsOfAPromptListAreIndexedPromptMajorAndUsageCountsEachPromptOnce()
    {
        JsonNode response = ok("/v1/completions", "{\"prompt\": [\"red\", \"green blue\"], \"n\": 2, \"max_tokens\": 4, \"temperature\": 0.7, "
                + "\"seed\": 2, \"ignore_eos\": true}");

        JsonNode choices = response.get("choices");
        assertThat(choices).hasSize(4);
        String[] prompts = {"red", "green blue"};
        for (int i = 0; i < 4; i++) {
            assertThat(choices.get(i).get("index").intValue()).isEqualTo(i);
            JsonNode single = ok("/v1/completions", "{\"prompt\": \"" + prompts[i / 2] + "\", \"max_tokens\": 4, \"temperature\": 0.7, \"seed\": "
                    + (2 + i % 2) + ", \"ignore_eos\": true}");
            assertThat(choices.get(i).get("text")).as("choice %d", i).isEqualTo(single.at("/choices/0/text"));
        }
        // BOS + bytes: 4 and 11 tokens, each counted once though each has two completions
        assertThat(response.at("/usage/prompt_tokens").intValue()).isEqualTo(4 + 11);
        assertThat(response.at("/usage/completion_tokens").intValue()).isEqualTo(16);
        assertThat(response.at("/usage/total_tokens").intValue()).isEqualTo(31);
        JsonNode tokens = ok("/v1/completions", "{\"prompt\": [[256, 104], [256, 105, 106]], \"max_tokens\": 2, \"temperature\": 0}");
        assertThat(tokens.get("choices")).hasSize(2);
        assertThat(tokens.at("/usage/prompt_tokens").intValue()).isEqualTo(5);
    }

    @Test
    void streamedChoicesCarryTheirIndexAndTheUsageSumsThem()
    {
        HttpResponse<Stream<String>> response = local.stream("/v1/completions", "{\"prompt\": \"abc\", \"n\": 3, \"max_tokens\": 3, \"stream\": true, "
                + "\"ignore_eos\": true, \"stream_options\": {\"include_usage\": true}}");
        List<String> data = response.body().filter(line -> line.startsWith("data: ")).map(line -> line.substring(6)).toList();

        assertThat(data.getLast()).isEqualTo("[DONE]");
        JsonNode usage = LocalServer.json(data.get(data.size() - 2));
        assertThat(usage.get("choices")).isEmpty();
        assertThat(usage.at("/usage/prompt_tokens").intValue()).isEqualTo(4);
        assertThat(usage.at("/usage/completion_tokens").intValue()).isEqualTo(9);
        Map<Integer, String> finish = new HashMap<>();
        for (String event : data.subList(0, data.size() - 2)) {
            JsonNode choice = LocalServer.json(event).at("/choices/0");
            if (!choice.get("finish_reason").isNull()) {
                finish.put(choice.get("index").intValue(), choice.get("finish_reason").textValue());
            }
        }
        assertThat(finish).containsExactlyInAnyOrderEntriesOf(Map.of(0, "length", 1, "length", 2, "length"));
    }

    @Test
    void aPromptsOutputsShareItsKvThroughThePrefixCache()
    {
        // 3 pages and a bit: computed once, then every output finds its whole pages cached
        String prompt = "A prompt of several pages, written once for this test and shared by its outputs!";
        JsonNode outputs = ok("/generate", "{\"text\": \"" + prompt + "\", \"sampling_params\": {\"n\": 3, \"max_new_tokens\": 2}}");

        assertThat(outputs).hasSize(3);
        for (int i = 0; i < 3; i++) {
            assertThat(outputs.get(i).at("/meta_info/cached_tokens").intValue()).as("output %d", i)
                    .isEqualTo(prompt.length() / LocalServer.PAGE_SIZE * LocalServer.PAGE_SIZE).isPositive();
        }
    }

    @Test
    void bestOfReturnsTheNMostLikelyOfItsCandidatesAndCountsThemAll()
    {
        int[] prompt = new ByteTokenizer().encode("abc", true);
        List<double[]> candidates = new ArrayList<>(); // {cumulative logprob, seed}
        List<int[]> outputs = new ArrayList<>();
        for (int j = 0; j < 4; j++) {
            GenerateResult result = local.scheduler.submit(new GenerateRequest("best-" + j, prompt, 6, new SamplingParams(1f, 1f, 7 + j), Set.of(), true,
                    false).withLogprobs(new LogprobRequest(0, -1)), TokenListener.NONE).result().join();
            assertThat(result.logprobs().output()).hasSize(result.outputIds().length);
            candidates.add(new double[] {result.logprobs().output().stream().mapToDouble(TokenLogprob::logprob).sum(), j});
            outputs.add(result.outputIds());
        }
        candidates.sort((a, b) -> a[0] != b[0] ? Double.compare(b[0], a[0]) : Double.compare(a[1], b[1]));

        JsonNode response = ok("/v1/completions", "{\"prompt\": \"abc\", \"n\": 2, \"best_of\": 4, \"max_tokens\": 6, \"temperature\": 1.0, "
                + "\"seed\": 7, \"ignore_eos\": true}");

        assertThat(response.get("choices")).hasSize(2);
        for (int k = 0; k < 2; k++) {
            assertThat(response.at("/choices/" + k + "/index").intValue()).isEqualTo(k);
            assertThat(response.at("/choices/" + k + "/text").textValue()).as("choice %d", k)
                    .isEqualTo(new ByteTokenizer().decode(outputs.get((int) candidates.get(k)[1])));
        }
        assertThat(response.at("/usage/completion_tokens").intValue()).isEqualTo(24);
        assertThat(response.at("/usage/prompt_tokens").intValue()).isEqualTo(4);
    }

    @Test
    void moreOutputsThanTheBoundAreRefusedNamingTheField()
    {
        refused("/generate", "{\"text\": \"x\", \"sampling_params\": {\"n\": 65}}", "sampling_params.n", "sampling_params.n must be in 1..64");
        String prompts = "\"p\", ".repeat(32) + "\"p\"";
        refused("/generate", "{\"text\": [" + prompts + "], \"sampling_params\": {\"n\": 2}}", "sampling_params.n",
                "33 prompt(s) × 2 output(s) = 66 generations; one request may ask for at most 64");
        refused("/v1/completions", "{\"prompt\": [" + prompts + ", " + prompts + "]}", "prompt", "66 prompt(s) × 1 output(s) = 66 generations");
        refused("/v1/completions", "{\"prompt\": \"x\", \"n\": 2, \"best_of\": 1}", "best_of", "best_of (1) must be at least n (2)");
        refused("/v1/completions", "{\"prompt\": \"x\", \"best_of\": 2, \"stream\": true}", "best_of", "cannot be streamed");
        refused("/generate", "{\"text\": []}", "text", "the list of prompts is empty");
        refused("/generate", "{\"text\": [\"x\", 3]}", "text[1]", "text[1] must be a string");
    }

    @Test
    void abortingTheRequestsRidAbortsAllItsOutputs()
    {
        HttpResponse<Stream<String>> response = local.stream("/generate", "{\"text\": \"go on\", \"rid\": \"many\", \"stream\": true, "
                + "\"sampling_params\": {\"n\": 2, \"max_new_tokens\": 2000, \"ignore_eos\": true}}");
        Iterator<String> lines = response.body().iterator();
        assertThat(lines.next()).startsWith("data: ");

        HttpResponse<String> abort = local.post("/abort_request", "{\"rid\": \"many\"}");

        assertThat(abort.statusCode()).as(abort.body()).isEqualTo(200);
        List<String> finishes = new ArrayList<>();
        while (lines.hasNext()) {
            String line = lines.next();
            if (line.startsWith("data: {")) {
                JsonNode reason = LocalServer.json(line.substring(6)).at("/meta_info/finish_reason");
                if (!reason.isNull()) {
                    finishes.add(reason.get("type").textValue());
                }
            }
        }
        assertThat(finishes).containsExactly("abort", "abort");
    }

    @Test
    void aClientThatLeavesMidStreamHasEveryOutputAbortedAndCountsOnce()
            throws IOException
    {
        double before = disconnects();
        byte[] body = "{\"text\": [\"bye\", \"ciao\"], \"stream\": true, \"sampling_params\": {\"n\": 2, \"max_new_tokens\": 3000, \"ignore_eos\": true}}"
                .getBytes(StandardCharsets.UTF_8);
        try (Socket socket = new Socket("127.0.0.1", local.server.address().getPort())) {
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
        }

        local.awaitStats(s -> s.running() == 0 && LocalServer.requestPages(s) == 0 && local.server.inFlight() == 0,
                "the abandoned outputs to be aborted");
        assertThat(disconnects()).isEqualTo(before + 1);
    }

    @Test
    void anOutputTheSchedulerRefusesRefusesTheRequestAndEndsTheOthers()
            throws IOException
    {
        // one running and one waiting request at most: the third output of three cannot be queued
        try (LocalServer small = new LocalServer(new SchedulerConfig(1, 256, 1, true, 2), ServerConfig.loopback(), 256)) {
            HttpResponse<String> response = small.post("/generate", "{\"text\": \"busy\", \"sampling_params\": {\"n\": 3, "
                    + "\"max_new_tokens\": 2000, \"ignore_eos\": true}}");

            assertThat(response.statusCode()).as(response.body()).isEqualTo(503);
            assertThat(response.headers().firstValue("Retry-After")).isPresent();
            assertThat(LocalServer.json(response).at("/error/message").textValue()).contains("the waiting queue is full");
            small.awaitStats(s -> s.running() == 0 && s.waiting() == 0 && LocalServer.requestPages(s) == 0 && small.server.inFlight() == 0,
                    "the outputs already submitted to be aborted");
        }
    }

    private static double disconnects()
    {
        String metrics = local.get("/metrics").body();
        return metrics.lines().filter(line -> line.startsWith("handoff_client_disconnects_total ")).mapToDouble(line -> Double.parseDouble(line.split(" ")[1]))
                .findFirst().orElseThrow();
    }

    private static JsonNode ok(String path, String body)
    {
        HttpResponse<String> response = local.post(path, body);
        assertThat(response.statusCode()).as(response.body()).isEqualTo(200);
        return LocalServer.json(response);
    }

    private static void refused(String path, String body, String param, String message)
    {
        HttpResponse<String> response = local.post(path, body);
        assertThat(response.statusCode()).as(response.body()).isEqualTo(400);
        JsonNode error = LocalServer.json(response).get("error");
        assertThat(error.get("param").textValue()).isEqualTo(param);
        assertThat(error.get("message").textValue()).contains(message);
    }
}
