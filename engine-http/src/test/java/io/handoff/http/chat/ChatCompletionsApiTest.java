package io.handoff.http.chat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.sun.net.httpserver.HttpServer;
import io.handoff.core.scheduler.RoomTicket;
import io.handoff.core.scheduler.TokenLogprob;
import io.handoff.http.base.Exchange;
import io.handoff.http.base.HttpRequestCounts;
import io.handoff.http.base.HttpRoutes;
import io.handoff.http.base.JsonFields;
import io.handoff.http.base.ServerConfig;
import io.handoff.http.fields.TokenTexts;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.time.InstantSource;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;

import static org.assertj.core.api.Assertions.assertThat;

/** The endpoint over HTTP in this process, over a scripted model whose tokens are the prompt's UTF-8 bytes. */
class ChatCompletionsApiTest
{
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final String TEMPLATE = """
            {%- for m in messages %}
              {%- if m.role == 'system' and not loop.first %}{{ raise_exception('a system message must come first') }}{% endif %}
              {{- '<|im_start|>' + m.role + '\\n' + m.content + '<|im_end|>\\n' }}
            {%- endfor %}
            {%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{% endif %}
            """;
    private static final String REPLY = "Hello there, friend";

    /** Replies {@link #REPLY} (or another script) one character (one token) at a time, ending at a stop string or the token limit. */
    static final class ScriptedModel
            implements ChatModel
    {
        final Optional<ChatTemplate> template;
        final List<Request> requests = new ArrayList<>();
        private final String script;

        ScriptedModel(Optional<ChatTemplate> template)
        {
            this(template, REPLY);
        }

        ScriptedModel(Optional<ChatTemplate> template, String script)
        {
            this.template = template;
            this.script = script;
        }

        @Override
        public String id()
        {
            return "scripted";
        }

        @Override
        public Optional<ChatTemplate> template()
        {
            return template;
        }

        @Override
        public int maxContext()
        {
            return 4096;
        }

        @Override
        public int[] encode(String prompt)
        {
            byte[] bytes = prompt.getBytes(StandardCharsets.UTF_8);
            int[] ids = new int[bytes.length];
            for (int i = 0; i < ids.length; i++) {
                ids[i] = bytes[i] & 0xff;
            }
            return ids;
        }

        @Override
        public int vocabSize()
        {
            return 256;
        }

        @Override
        public TokenTexts tokenTexts()
        {
            return id -> new byte[] {(byte) id};
        }

        /** Token {@code i} of the reply has log probability {@code -i/8}, and the next byte up is its one alternative. */
        static TokenLogprob logprob(int i)
        {
            int id = REPLY.charAt(i);
            return new TokenLogprob(id, -i / 8f, new int[] {id, id + 1}, new float[] {-i / 8f, -i / 8f - 1});
        }

        @Override
        public Optional<RoomTicket> ticket(JsonFields body, Exchange exchange)
        {
            return Optional.empty();
        }

        /** Each of the {@code n} choices is the same reply, streamed choice after choice. */
        @Override
        public synchronized Result generate(Request request, TextSink sink)
        {
            requests.add(request);
            List<Outcome> outcomes = new ArrayList<>();
            for (int choice = 0; choice < request.n(); choice++) {
                Outcome outcome = reply(request, choice, sink);
                if (outcome.clientGone()) {
                    return new Result(outcomes, Optional.empty(), true);
                }
                outcomes.add(outcome);
            }
            return new Result(outcomes, Optional.empty(), false);
        }

        private Outcome reply(Request request, int choice, TextSink sink)
        {
            String reply = script;
            StringBuilder text = new StringBuilder();
            List<TokenLogprob> logprobs = new ArrayList<>();
            for (int i = 0; i < reply.length(); i++) {
                if (i == request.maxTokens()) {
                    return outcome(request, text.toString(), "length", i, logprobs, false);
                }
                text.append(reply.charAt(i));
                if (request.logprobs().isPresent()) {
                    logprobs.add(logprob(i));
                }
                for (String stop : request.stops()) {
                    int at = text.indexOf(stop);
                    if (at >= 0) {
                        return outcome(request, text.substring(0, at), "stop", i + 1, logprobs, false);
                    }
                }
                try {
                    sink.onText(choice, text.toString(), reply.substring(0, i + 1).chars().toArray(), logprobs);
                }
                catch (IOException e) {
                    return outcome(request, text.toString(), "abort", i + 1, logprobs, true);
                }
            }
            return outcome(request, text.toString(), "stop", reply.length(), logprobs, false);
        }

        private Outcome outcome(Request request, String text, String reason, int tokens, List<TokenLogprob> logprobs, boolean gone)
        {
            return new Outcome(text, reason, request.promptIds().length, script.substring(0, tokens).chars().toArray(), Optional.empty(), gone,
                    logprobs);
        }
    }

    private final ChatTemplate template = ChatTemplate.parse(TEMPLATE, "", "<|im_end|>");
    private final ScriptedModel model = new ScriptedModel(Optional.of(template));
    private final MutableClock clock = new MutableClock(Instant.ofEpochSecond(1_700_000_000L));
    private final HttpClient client = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();
    private final ExecutorService executor = Executors.newVirtualThreadPerTaskExecutor();
    private HttpServer server;

    @BeforeEach
    void start()
            throws IOException
    {
        server = serve(model);
    }

    @AfterEach
    void stop()
    {
        server.stop(0);
        executor.shutdownNow();
    }

    private HttpServer serve(ChatModel served)
            throws IOException
    {
        HttpServer http = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 0);
        http.setExecutor(executor);
        ChatCompletionsApi api = new ChatCompletionsApi(served, clock);
        HttpRoutes routes = new HttpRoutes(Map.of("/v1/chat/completions", new HttpRoutes.Route("POST", api::handle)), ServerConfig.loopback(),
                new HttpRequestCounts());
        http.createContext("/", routes::dispatch);
        http.start();
        return http;
    }

    private HttpResponse<String> post(HttpServer target, String body)
            throws IOException, InterruptedException
    {
        URI uri = URI.create("http://127.0.0.1:" + target.getAddress().getPort() + "/v1/chat/completions");
        return client.send(HttpRequest.newBuilder(uri).header("Content-Type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString(body)).build(), HttpResponse.BodyHandlers.ofString());
    }

    private int promptTokens(List<ChatMessage> messages)
    {
        return template.render(messages, true).getBytes(StandardCharsets.UTF_8).length;
    }

    @Test
    void aCompletionHasOpenAisShapeAndCountsTheRenderedPrompt()
            throws Exception
    {
        HttpResponse<String> response = post(server, "{\"model\": \"scripted\", \"messages\": [{\"role\": \"system\", \"content\": \"Be kind\"}, "
                + "{\"role\": \"user\", \"content\": \"Hi ü\"}], \"max_tokens\": 64, \"temperature\": 0.25, \"seed\": 9}");
        assertThat(response.statusCode()).isEqualTo(200);
        JsonNode body = JSON.readTree(response.body());
        int prompt = promptTokens(List.of(new ChatMessage("system", "Be kind"), new ChatMessage("user", "Hi ü")));
        assertThat(body.get("id").textValue()).startsWith("chatcmpl-chat-");
        assertThat(body.get("object").textValue()).isEqualTo("chat.completion");
        assertThat(body.get("created").longValue()).isEqualTo(1_700_000_000L);
        assertThat(body.get("model").textValue()).isEqualTo("scripted");
        assertThat(body.get("choices")).hasSize(1);
        JsonNode choice = body.get("choices").get(0);
        assertThat(choice.get("index").intValue()).isZero();
        assertThat(choice.get("message")).isEqualTo(JSON.readTree("{\"role\": \"assistant\", \"content\": \"" + REPLY + "\"}"));
        assertThat(choice.get("finish_reason").textValue()).isEqualTo("stop");
        assertThat(body.get("usage")).isEqualTo(JSON.readTree("{\"prompt_tokens\": " + prompt + ", \"completion_tokens\": " + REPLY.length()
                + ", \"total_tokens\": " + (prompt + REPLY.length()) + "}"));
        ChatModel.Request sent = model.requests.getFirst();
        assertThat(new String(bytes(sent.promptIds()), StandardCharsets.UTF_8))
                .isEqualTo("<|im_start|>system\nBe kind<|im_end|>\n<|im_start|>user\nHi ü<|im_end|>\n<|im_start|>assistant\n");
        assertThat(sent.maxTokens()).isEqualTo(64);
        assertThat(sent.sampling().sampling().temperature()).isEqualTo(0.25f);
        assertThat(sent.sampling().sampling().seed()).isEqualTo(9);
    }

    @Test
    void theTokenLimitAndStopStringsSetTheFinishReason()
            throws Exception
    {
        JsonNode limited = JSON.readTree(post(server, "{\"messages\": [{\"role\": \"user\", \"content\": \"Hi\"}], \"max_completion_tokens\": 5}").body());
        assertThat(limited.at("/choices/0/message/content").textValue()).isEqualTo("Hello");
        assertThat(limited.at("/choices/0/finish_reason").textValue()).isEqualTo("length");
        assertThat(limited.at("/usage/completion_tokens").intValue()).isEqualTo(5);
        JsonNode stopped = JSON.readTree(post(server, "{\"messages\": [{\"role\": \"user\", \"content\": \"Hi\"}], \"stop\": \", \"}").body());
        assertThat(stopped.at("/choices/0/message/content").textValue()).isEqualTo("Hello there");
        assertThat(stopped.at("/choices/0/finish_reason").textValue()).isEqualTo("stop");
    }

    @Test
    void aStreamSendsTheRoleThenContentDeltasThenTheFinishReasonThenUsageThenDone()
            throws Exception
    {
        HttpResponse<String> response = post(server, "{\"messages\": [{\"role\": \"user\", \"content\": \"Hi\"}], \"stream\": true, "
                + "\"stream_options\": {\"include_usage\": true}, \"max_tokens\": 8}");
        assertThat(response.statusCode()).isEqualTo(200);
        assertThat(response.headers().firstValue("Content-Type")).hasValue("text/event-stream; charset=utf-8");
        List<String> events = List.of(response.body().split("\n\n"));
        assertThat(events).allMatch(e -> e.startsWith("data: "));
        assertThat(events.getLast()).isEqualTo("data: [DONE]");
        List<JsonNode> chunks = new ArrayList<>();
        for (String event : events.subList(0, events.size() - 1)) {
            chunks.add(JSON.readTree(event.substring("data: ".length())));
        }
        assertThat(chunks).allMatch(c -> c.get("object").textValue().equals("chat.completion.chunk") && c.get("model").textValue().equals("scripted"));
        assertThat(chunks.stream().map(c -> c.get("id").textValue()).distinct()).hasSize(1);
        assertThat(chunks.getFirst().at("/choices/0/delta")).isEqualTo(JSON.readTree("{\"role\": \"assistant\", \"content\": \"\"}"));
        List<JsonNode> deltas = chunks.subList(1, chunks.size() - 2);
        assertThat(deltas).hasSize(8).allMatch(c -> c.at("/choices/0/finish_reason").isNull() && !c.at("/choices/0/delta").has("role"));
        StringBuilder content = new StringBuilder();
        deltas.forEach(c -> content.append(c.at("/choices/0/delta/content").textValue()));
        assertThat(content.toString()).isEqualTo("Hello th");
        JsonNode last = chunks.get(chunks.size() - 2);
        assertThat(last.at("/choices/0/finish_reason").textValue()).isEqualTo("length");
        assertThat(last.at("/choices/0/delta")).isEmpty();
        JsonNode usage = chunks.getLast();
        int prompt = promptTokens(List.of(new ChatMessage("user", "Hi")));
        assertThat(usage.get("choices")).isEmpty();
        assertThat(usage.get("usage")).isEqualTo(JSON.readTree("{\"prompt_tokens\": " + prompt + ", \"completion_tokens\": 8, \"total_tokens\": "
                + (prompt + 8) + "}"));
    }

    @Test
    void aStreamWithoutUsageEndsWithTheFinishChunk()
            throws Exception
    {
        String body = post(server, "{\"messages\": [{\"role\": \"user\", \"content\": \"Hi\"}], \"stream\": true, \"max_tokens\": 2}").body();
        assertThat(body).endsWith("\"finish_reason\":\"length\",\"delta\":{}}]}\n\ndata: [DONE]\n\n").doesNotContain("usage");
    }

    @Test
    void aModelWithoutATemplateIsRefusedWithA400()
            throws Exception
    {
        HttpServer bare = serve(new ScriptedModel(Optional.empty()));
        try {
            HttpResponse<String> response = post(bare, "{\"messages\": [{\"role\": \"user\", \"content\": \"Hi\"}]}");
            assertThat(response.statusCode()).isEqualTo(400);
            assertThat(JSON.readTree(response.body()).at("/error/message").textValue())
                    .isEqualTo("model scripted has no chat template; use /v1/completions with a prompt you format yourself");
            assertThat(JSON.readTree(response.body()).at("/error/code").textValue()).isEqualTo("no_chat_template");
        }
        finally {
            bare.stop(0);
        }
    }

    @Test
    void aConversationTheTemplateRefusesIsA400WithItsMessage()
            throws Exception
    {
        HttpResponse<String> response = post(server, "{\"messages\": [{\"role\": \"user\", \"content\": \"Hi\"}, "
                + "{\"role\": \"system\", \"content\": \"late\"}], \"stream\": true}");
        assertThat(response.statusCode()).isEqualTo(400);
        JsonNode error = JSON.readTree(response.body()).get("error");
        assertThat(error.get("message").textValue()).isEqualTo("a system message must come first");
        assertThat(error.get("param").textValue()).isEqualTo("messages");
        assertThat(model.requests).isEmpty();
    }

    @Test
    void badFieldsAndOtherModelsAreRefusedBeforeGenerating()
            throws Exception
    {
        HttpResponse<String> bad = post(server, "{\"messages\": [{\"role\": \"user\", \"content\": \"Hi\"}], \"n\": 65}");
        assertThat(bad.statusCode()).isEqualTo(400);
        assertThat(JSON.readTree(bad.body()).at("/error/param").textValue()).isEqualTo("n");
        assertThat(JSON.readTree(bad.body()).at("/error/message").textValue()).isEqualTo("n must be in 1..64, got 65");
        HttpResponse<String> other = post(server, "{\"model\": \"gpt-4\", \"messages\": [{\"role\": \"user\", \"content\": \"Hi\"}]}");
        assertThat(other.statusCode()).isEqualTo(404);
        assertThat(JSON.readTree(other.body()).at("/error/message").textValue()).contains("model 'gpt-4' is not served here");
        assertThat(model.requests).isEmpty();
    }

    @Test
    void aConversationWithNothingToContinueIsA400NotAGenerationFromTheTemplateAlone()
            throws Exception
    {
        for (String messages : List.of("[]", "[{\"role\": \"user\", \"content\": \"\"}]",
                "[{\"role\": \"system\", \"content\": \"\"}, {\"role\": \"user\", \"content\": []}]")) {
            HttpResponse<String> response = post(server, "{\"messages\": " + messages + "}");
            assertThat(response.statusCode()).as(messages).isEqualTo(400);
            assertThat(JSON.readTree(response.body()).at("/error/param").textValue()).isEqualTo("messages");
        }
        HttpResponse<String> allEmpty = post(server, "{\"messages\": [{\"role\": \"user\", \"content\": \"\"}]}");
        assertThat(JSON.readTree(allEmpty.body()).at("/error/message").textValue())
                .isEqualTo("every message's content is empty; send at least one message with text");
        assertThat(model.requests).isEmpty();
    }

    @Test
    void createdIsTheTimeEachRequestArrived()
            throws Exception
    {
        String request = "{\"messages\": [{\"role\": \"user\", \"content\": \"Hi\"}], \"max_tokens\": 1}";
        JsonNode first = JSON.readTree(post(server, request).body());
        clock.advance(5);
        JsonNode second = JSON.readTree(post(server, request).body());

        assertThat(first.get("created").longValue()).isEqualTo(1_700_000_000L);
        assertThat(second.get("created").longValue()).isEqualTo(1_700_000_005L);
    }

    @Test
    void logprobsGiveEachTokensTextBytesLogprobAndAlternativesInWholeAndStreamedAnswers()
            throws Exception
    {
        String request = "{\"messages\": [{\"role\": \"user\", \"content\": \"Hi\"}], \"max_tokens\": 3, \"logprobs\": true, \"top_logprobs\": 1";
        JsonNode whole = JSON.readTree(post(server, request + "}").body()).at("/choices/0/logprobs");
        assertThat(whole).isEqualTo(JSON.readTree("""
                {"content": [
                  {"token": "H", "logprob": 0.0, "bytes": [72], "top_logprobs": [{"token": "H", "logprob": 0.0, "bytes": [72]}]},
                  {"token": "e", "logprob": -0.125, "bytes": [101], "top_logprobs": [{"token": "e", "logprob": -0.125, "bytes": [101]}]},
                  {"token": "l", "logprob": -0.25, "bytes": [108], "top_logprobs": [{"token": "l", "logprob": -0.25, "bytes": [108]}]}],
                 "refusal": null}"""));
        assertThat(model.requests.getFirst().logprobs()).contains(new io.handoff.core.output.LogprobOptions(1, -1, true));

        List<JsonNode> content = new ArrayList<>();
        for (String event : post(server, request + ", \"stream\": true}").body().split("\n\n")) {
            if (!event.equals("data: [DONE]")) {
                JsonNode chunk = JSON.readTree(event.substring("data: ".length()));
                chunk.at("/choices/0/logprobs/content").forEach(content::add);
            }
        }
        assertThat(content).containsExactlyElementsOf(whole.get("content"));
        JsonNode without = JSON.readTree(post(server, "{\"messages\": [{\"role\": \"user\", \"content\": \"Hi\"}], \"max_tokens\": 3}").body());
        assertThat(without.at("/choices/0/logprobs").isNull()).isTrue();
    }

    /** A clock a test moves by hand. */
    static final class MutableClock
            implements InstantSource
    {
        private volatile Instant now;

        MutableClock(Instant start)
        {
            now = start;
        }

        void advance(long seconds)
        {
            now = now.plusSeconds(seconds);
        }

        @Override
        public Instant instant()
        {
            return now;
        }
    }

    @Test
    void nChoicesAreIndexedAndThePromptIsCountedOnce()
            throws Exception
    {
        HttpResponse<String> response = post(server, "{\"messages\": [{\"role\": \"user\", \"content\": \"Hi\"}], \"n\": 2, "
                + "\"max_tokens\": 5, \"seed\": 4}");
        assertThat(response.statusCode()).as(response.body()).isEqualTo(200);
        JsonNode body = JSON.readTree(response.body());
        assertThat(body.get("choices")).hasSize(2);
        for (int i = 0; i < 2; i++) {
            assertThat(body.at("/choices/" + i + "/index").intValue()).isEqualTo(i);
            assertThat(body.at("/choices/" + i + "/message/content").textValue()).isEqualTo("Hello");
        }
        int prompt = promptTokens(List.of(new ChatMessage("user", "Hi")));
        assertThat(body.get("usage")).isEqualTo(JSON.readTree("{\"prompt_tokens\": " + prompt + ", \"completion_tokens\": 10, \"total_tokens\": "
                + (prompt + 10) + "}"));
        assertThat(model.requests.getFirst().n()).isEqualTo(2);
    }

    @Test
    void aStreamOfNChoicesMarksEveryChunkWithItsChoice()
            throws Exception
    {
        String body = post(server, "{\"messages\": [{\"role\": \"user\", \"content\": \"Hi\"}], \"n\": 2, \"stream\": true, \"max_tokens\": 3}").body();
        List<String> events = List.of(body.split("\n\n"));
        assertThat(events.getLast()).isEqualTo("data: [DONE]");
        StringBuilder[] content = {new StringBuilder(), new StringBuilder()};
        List<String> finishes = new ArrayList<>();
        for (String event : events.subList(0, events.size() - 1)) {
            JsonNode choice = JSON.readTree(event.substring("data: ".length())).at("/choices/0");
            int index = choice.get("index").intValue();
            content[index].append(choice.at("/delta/content").asText(""));
            if (!choice.get("finish_reason").isNull()) {
                finishes.add(index + ":" + choice.get("finish_reason").textValue());
            }
        }
        assertThat(content[0].toString()).isEqualTo("Hel");
        assertThat(content[1].toString()).isEqualTo("Hel");
        assertThat(finishes).containsExactly("0:length", "1:length");
    }

    private static byte[] bytes(int[] ids)
    {
        byte[] bytes = new byte[ids.length];
        for (int i = 0; i < ids.length; i++) {
            bytes[i] = (byte) ids[i];
        }
        return bytes;
    }
}
