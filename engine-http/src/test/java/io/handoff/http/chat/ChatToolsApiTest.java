package io.handoff.http.chat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.sun.net.httpserver.HttpServer;
import io.handoff.core.grammar.ByteAutomaton;
import io.handoff.core.grammar.Grammar;
import io.handoff.http.base.HttpRequestCounts;
import io.handoff.http.base.HttpRoutes;
import io.handoff.http.base.ServerConfig;
import org.junit.jupiter.api.AfterEach;
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
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;

import static org.assertj.core.api.Assertions.assertThat;

/** Tools and response formats over HTTP in this process, over a scripted model that writes a given reply. */
class ChatToolsApiTest
{
    private static final ObjectMapper JSON = new ObjectMapper();
    // a template in Qwen's style: tools in a system turn, calls in <tool_call> blocks, results in <tool_response>
    private static final String HERMES_TEMPLATE = """
            {%- if tools %}{{- '<|im_start|>system\\n# Tools\\n' }}{%- for tool in tools %}{{- tool | tojson }}{{- '\\n' }}{%- endfor %}\
            {{- 'Call them in <tool_call></tool_call> tags.<|im_end|>\\n' }}{%- endif %}
            {%- for m in messages %}
              {%- if m.role == 'assistant' and m.tool_calls %}{{- '<|im_start|>assistant\\n' }}\
            {%- for c in m.tool_calls %}{{- '<tool_call>\\n' + (c.function | tojson) + '\\n</tool_call>' }}{%- endfor %}{{- '<|im_end|>\\n' }}
              {%- elif m.role == 'tool' %}{{- '<|im_start|>user\\n<tool_response>\\n' + m.content + '\\n</tool_response><|im_end|>\\n' }}
              {%- else %}{{- '<|im_start|>' + m.role + '\\n' + m.content + '<|im_end|>\\n' }}{%- endif %}
            {%- endfor %}
            {%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{% endif %}
            """;
    private static final String PLAIN_TEMPLATE = """
            {%- for m in messages %}{{- '<|im_start|>' + m.role + '\\n' + m.content + '<|im_end|>\\n' }}{%- endfor %}
            {%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{% endif %}
            """;
    private static final String CALL = "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"location\": \"Paris\", \"unit\": \"c\"}}\n</tool_call>";
    private static final String TOOLS = "\"tools\": [{\"type\": \"function\", \"function\": {\"name\": \"get_weather\", \"description\": \"Weather\", "
            + "\"parameters\": {\"type\": \"object\", \"properties\": {\"location\": {\"type\": \"string\", \"maxLength\": 10}, "
            + "\"unit\": {\"type\": \"string\", \"enum\": [\"c\", \"f\"]}}, \"required\": [\"location\", \"unit\"], \"additionalProperties\": false}}}]";
    private static final String USER = "\"messages\": [{\"role\": \"user\", \"content\": \"Weather in Paris?\"}]";

    private final HttpClient client = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();
    private final ExecutorService executor = Executors.newVirtualThreadPerTaskExecutor();
    private final List<HttpServer> servers = new ArrayList<>();

    @AfterEach
    void stop()
    {
        servers.forEach(s -> s.stop(0));
        executor.shutdownNow();
    }

    private ChatCompletionsApiTest.ScriptedModel model(String template, String reply)
    {
        return new ChatCompletionsApiTest.ScriptedModel(Optional.of(ChatTemplate.parse(template, "", "<|im_end|>")), reply);
    }

    private HttpResponse<String> post(ChatModel model, String body)
            throws IOException, InterruptedException
    {
        HttpServer http = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 0);
        http.setExecutor(executor);
        ChatCompletionsApi api = new ChatCompletionsApi(model, () -> Instant.ofEpochSecond(1_700_000_000L));
        http.createContext("/", new HttpRoutes(Map.of("/v1/chat/completions", new HttpRoutes.Route("POST", api::handle)), ServerConfig.loopback(),
                new HttpRequestCounts())::dispatch);
        http.start();
        servers.add(http);
        URI uri = URI.create("http://127.0.0.1:" + http.getAddress().getPort() + "/v1/chat/completions");
        return client.send(HttpRequest.newBuilder(uri).header("Content-Type", "application/json").POST(HttpRequest.BodyPublishers.ofString(body))
                .build(), HttpResponse.BodyHandlers.ofString());
    }

    private static String prompt(ChatModel.Request request)
    {
        byte[] bytes = new byte[request.promptIds().length];
        for (int i = 0; i < bytes.length; i++) {
            bytes[i] = (byte) request.promptIds()[i];
        }
        return new String(bytes, StandardCharsets.UTF_8);
    }

    private static boolean takes(Grammar grammar, String text)
    {
        ByteAutomaton automaton = ByteAutomaton.compile(grammar);
        ByteAutomaton.State state = automaton.advance(automaton.start(), text.getBytes(StandardCharsets.UTF_8));
        return state != null && state.complete();
    }

    @Test
    void aCallInTheOutputBecomesToolCallsWithTheTextBeforeItAsContent()
            throws Exception
    {
        ChatCompletionsApiTest.ScriptedModel model = model(HERMES_TEMPLATE, "Let me check.\n" + CALL);
        HttpResponse<String> response = post(model, "{" + USER + ", " + TOOLS + ", \"max_tokens\": 200}");
        assertThat(response.statusCode()).as(response.body()).isEqualTo(200);
        JsonNode choice = JSON.readTree(response.body()).at("/choices/0");
        assertThat(choice.at("/message/content").textValue()).isEqualTo("Let me check.");
        JsonNode call = choice.at("/message/tool_calls/0");
        assertThat(call.get("id").textValue()).matches("call_[0-9a-f]{24}");
        assertThat(call.get("type").textValue()).isEqualTo("function");
        assertThat(call.at("/function/name").textValue()).isEqualTo("get_weather");
        assertThat(JSON.readTree(call.at("/function/arguments").textValue())).isEqualTo(JSON.readTree("{\"location\": \"Paris\", \"unit\": \"c\"}"));
        assertThat(choice.get("finish_reason").textValue()).isEqualTo("tool_calls");
        ChatModel.Request sent = model.requests.getFirst();
        assertThat(prompt(sent)).startsWith("<|im_start|>system\n# Tools\n{\"type\": \"function\", \"function\": {\"name\": \"get_weather\"");
        assertThat(sent.sampling().grammar()).as("auto, not strict: the model may answer in text").isEmpty();
    }

    @Test
    void aStreamHoldsTheCallsTextBackAndSendsTheCallsAsToolCallDeltas()
            throws Exception
    {
        HttpResponse<String> response = post(model(HERMES_TEMPLATE, "Let me check.\n" + CALL), "{" + USER + ", " + TOOLS
                + ", \"max_tokens\": 200, \"stream\": true}");
        List<JsonNode> events = new ArrayList<>();
        for (String line : response.body().split("\n\n")) {
            if (!line.equals("data: [DONE]")) {
                events.add(JSON.readTree(line.substring("data: ".length())));
            }
        }
        StringBuilder content = new StringBuilder();
        List<JsonNode> calls = new ArrayList<>();
        String finish = null;
        for (JsonNode event : events) {
            JsonNode choice = event.at("/choices/0");
            if (choice.at("/delta/content").isTextual()) {
                content.append(choice.at("/delta/content").textValue());
            }
            choice.at("/delta/tool_calls").forEach(calls::add);
            if (choice.get("finish_reason").isTextual()) {
                finish = choice.get("finish_reason").textValue();
            }
        }
        assertThat(content.toString()).isEqualTo("Let me check.");
        assertThat(calls).hasSize(1);
        assertThat(calls.getFirst().get("index").intValue()).isZero();
        assertThat(calls.getFirst().at("/function/name").textValue()).isEqualTo("get_weather");
        assertThat(finish).isEqualTo("tool_calls");
        assertThat(response.body()).endsWith("data: [DONE]\n\n");
    }

    @Test
    void aRequiredCallHoldsTheOutputToTheModelsCallFormatWithTheArgumentsSchema()
            throws Exception
    {
        ChatCompletionsApiTest.ScriptedModel model = model(HERMES_TEMPLATE, CALL);
        HttpResponse<String> response = post(model, "{" + USER + ", " + TOOLS + ", \"tool_choice\": \"required\", \"max_tokens\": 200}");
        assertThat(response.statusCode()).as(response.body()).isEqualTo(200);
        assertThat(JSON.readTree(response.body()).at("/choices/0/message/content").isNull()).isTrue();
        Grammar grammar = model.requests.getFirst().sampling().grammar().orElseThrow();
        assertThat(takes(grammar, CALL)).isTrue();
        assertThat(takes(grammar, CALL.replace("Paris", "Paris, France, Europe"))).as("maxLength 10").isFalse();
        assertThat(takes(grammar, "Sure! " + CALL)).as("only the call").isFalse();
        assertThat(takes(grammar, CALL + "\n" + CALL)).as("one call unless parallel_tool_calls is true").isFalse();
        post(model, "{" + USER + ", " + TOOLS + ", \"tool_choice\": \"required\", \"parallel_tool_calls\": true}");
        assertThat(takes(model.requests.getLast().sampling().grammar().orElseThrow(), CALL + "\n" + CALL)).isTrue();
    }

    @Test
    void aStrictToolUnderAutoLetsTheModelAnswerInTextButHoldsACallItStarts()
            throws Exception
    {
        ChatCompletionsApiTest.ScriptedModel model = model(HERMES_TEMPLATE, "It is sunny.");
        post(model, "{" + USER + ", " + TOOLS.replace("\"description\": \"Weather\"", "\"description\": \"Weather\", \"strict\": true") + "}");
        Grammar grammar = model.requests.getFirst().sampling().grammar().orElseThrow();
        assertThat(takes(grammar, "It is sunny.")).isTrue();
        assertThat(takes(grammar, "Checking.\n" + CALL)).isTrue();
        assertThat(takes(grammar, "Checking.\n" + CALL.replace("\"c\"", "\"kelvin\""))).isFalse();
    }

    @Test
    void earlierCallsAndToolResultsAreRenderedByTheTemplate()
            throws Exception
    {
        ChatCompletionsApiTest.ScriptedModel model = model(HERMES_TEMPLATE, "Sunny, 21 C.");
        HttpResponse<String> response = post(model, "{\"messages\": [{\"role\": \"user\", \"content\": \"Weather in Paris?\"}, {\"role\": \"assistant\", "
                + "\"content\": null, \"tool_calls\": [{\"id\": \"call_1\", \"type\": \"function\", \"function\": {\"name\": \"get_weather\", "
                + "\"arguments\": \"{\\\"location\\\": \\\"Paris\\\"}\"}}]}, {\"role\": \"tool\", \"tool_call_id\": \"call_1\", \"content\": \"21 C\"}], "
                + TOOLS + "}");
        assertThat(response.statusCode()).as(response.body()).isEqualTo(200);
        assertThat(JSON.readTree(response.body()).at("/choices/0/message/content").textValue()).isEqualTo("Sunny, 21 C.");
        assertThat(JSON.readTree(response.body()).at("/choices/0/finish_reason").textValue()).isEqualTo("stop");
        assertThat(prompt(model.requests.getFirst())).contains("<|im_start|>assistant\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": "
                + "{\"location\": \"Paris\"}}\n</tool_call><|im_end|>\n<|im_start|>user\n<tool_response>\n21 C\n</tool_response><|im_end|>\n");
    }

    @Test
    void aTemplateWithoutToolsGetsThemInASystemMessageAndCallsInTheGenericFormat()
            throws Exception
    {
        ChatCompletionsApiTest.ScriptedModel model = model(PLAIN_TEMPLATE, CALL);
        HttpResponse<String> response = post(model, "{" + USER + ", " + TOOLS + ", \"tool_choice\": {\"type\": \"function\", \"function\": "
                + "{\"name\": \"get_weather\"}}, \"max_tokens\": 200}");
        assertThat(JSON.readTree(response.body()).at("/choices/0/message/tool_calls/0/function/name").textValue()).isEqualTo("get_weather");
        assertThat(prompt(model.requests.getFirst())).startsWith("<|im_start|>system\nYou can call these functions").contains("<tool_call>");
    }

    @Test
    void responseFormatsHoldTheOutputToTheirSchema()
            throws Exception
    {
        ChatCompletionsApiTest.ScriptedModel model = model(PLAIN_TEMPLATE, "{\"a\": 1}");
        post(model, "{" + USER + ", \"response_format\": {\"type\": \"json_schema\", \"json_schema\": {\"name\": \"s\", \"strict\": true, "
                + "\"schema\": {\"type\": \"object\", \"properties\": {\"a\": {\"type\": \"integer\"}}, \"required\": [\"a\"], \"additionalProperties\": false}}}}");
        Grammar schema = model.requests.getLast().sampling().grammar().orElseThrow();
        assertThat(takes(schema, "{\"a\": 1}")).isTrue();
        assertThat(takes(schema, "{\"a\": \"1\"}")).isFalse();
        post(model, "{" + USER + ", \"response_format\": {\"type\": \"json_object\"}}");
        assertThat(takes(model.requests.getLast().sampling().grammar().orElseThrow(), "{\"b\": [true, null]}")).isTrue();
        post(model, "{" + USER + ", \"regex\": \"[0-9]+\"}");
        assertThat(takes(model.requests.getLast().sampling().grammar().orElseThrow(), "123")).isTrue();
    }

    @Test
    void whatCannotBeEnforcedOrDoesNotFitIsA400NamingTheField()
            throws Exception
    {
        ChatModel model = model(HERMES_TEMPLATE, CALL);
        assertRefused(post(model, "{" + USER + ", \"response_format\": {\"type\": \"json_schema\", \"json_schema\": {\"name\": \"s\", \"schema\": "
                + "{\"type\": \"string\", \"format\": \"hostname\"}}}}"), "response_format.json_schema.schema", "'hostname' cannot be enforced");
        assertRefused(post(model, "{" + USER + ", " + TOOLS.replace("\"maxLength\": 10", "\"not\": {\"const\": \"x\"}") + ", \"tool_choice\": \"required\"}"),
                "tools[0].function.parameters", "the keyword 'not' cannot be enforced");
        assertRefused(post(model, "{" + USER + ", " + TOOLS + ", \"tool_choice\": {\"type\": \"function\", \"function\": {\"name\": \"nope\"}}}"),
                "tool_choice.function.name", "not among the tools");
        assertRefused(post(model, "{" + USER + ", \"tool_choice\": \"required\"}"), "tool_choice", "only allowed with tools");
        assertRefused(post(model, "{" + USER + ", \"regex\": \"(a\"}"), "regex", "expected ')'");
        assertRefused(post(model, "{" + USER + ", \"regex\": \"a\", \"response_format\": {\"type\": \"json_object\"}}"), "response_format", "send one");
        assertRefused(post(model, "{" + USER + ", " + TOOLS + ", \"tool_choice\": \"required\", \"response_format\": {\"type\": \"json_object\"}}"),
                "tool_choice", "send one");
    }

    private static void assertRefused(HttpResponse<String> response, String param, String message)
            throws IOException
    {
        assertThat(response.statusCode()).as(response.body()).isEqualTo(400);
        JsonNode error = JSON.readTree(response.body()).get("error");
        assertThat(error.get("param").textValue()).isEqualTo(param);
        assertThat(error.get("message").textValue()).contains(message);
    }
}
