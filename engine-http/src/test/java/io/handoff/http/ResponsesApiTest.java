package io.handoff.http;

import com.fasterxml.jackson.databind.JsonNode;
import io.handoff.core.runtime.ChatTemplateText;
import io.handoff.core.scheduler.KvHandoff;
import io.handoff.core.scheduler.SchedulerConfig;
import io.handoff.http.base.ServerConfig;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.net.http.HttpResponse;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * {@code POST /v1/responses} over real HTTP against the real scheduler and model, with a chat template: the same
 * rendered prompt as chat completions (so greedy output is the same text), the response object's shape, the event
 * stream, and what it refuses.
 */
class ResponsesApiTest
{
    private static final String TEMPLATE = """
            {%- for m in messages %}{{- '<|' + m.role + '|>' + m.content + '\\n' }}{%- endfor %}
            {%- if add_generation_prompt %}{{- '<|assistant|>' }}{% endif %}""";
    private static LocalServer local;

    @BeforeAll
    static void start()
            throws IOException
    {
        local = new LocalServer(new SchedulerConfig(8, 256, 64, true, 2), ServerConfig.loopback(), 256, null, KvHandoff.NONE,
                Optional.of(new ChatTemplateText(TEMPLATE, "", "")));
    }

    @AfterAll
    static void stop()
    {
        local.close();
    }

    @Test
    void aResponseRendersItsInputLikeChatAndHasTheResponsesShape()
    {
        HttpResponse<String> response = local.post("/v1/responses", "{\"model\": \"tiny-mla\", \"instructions\": \"Be brief.\", "
                + "\"input\": [{\"role\": \"user\", \"content\": [{\"type\": \"input_text\", \"text\": \"Hi\"}]}], \"max_output_tokens\": 6, "
                + "\"temperature\": 0}");
        assertThat(response.statusCode()).as(response.body()).isEqualTo(200);
        JsonNode body = LocalServer.json(response);
        assertThat(body.get("id").textValue()).startsWith("resp_");
        assertThat(body.get("object").textValue()).isEqualTo("response");
        assertThat(body.get("created_at").longValue()).isPositive();
        assertThat(body.get("model").textValue()).isEqualTo("tiny-mla");
        assertThat(body.get("instructions").textValue()).isEqualTo("Be brief.");
        assertThat(body.get("max_output_tokens").intValue()).isEqualTo(6);
        JsonNode message = body.get("output").get(0);
        assertThat(message.get("type").textValue()).isEqualTo("message");
        assertThat(message.get("role").textValue()).isEqualTo("assistant");
        assertThat(message.get("id").textValue()).startsWith("msg_");
        JsonNode part = message.get("content").get(0);
        assertThat(part.get("type").textValue()).isEqualTo("output_text");
        JsonNode usage = body.get("usage");
        assertThat(usage.get("output_tokens").intValue()).isBetween(1, 6);
        assertThat(usage.get("total_tokens").intValue()).isEqualTo(usage.get("input_tokens").intValue() + usage.get("output_tokens").intValue());
        if (usage.get("output_tokens").intValue() == 6) {
            assertThat(body.get("status").textValue()).isEqualTo("incomplete");
            assertThat(body.at("/incomplete_details/reason").textValue()).isEqualTo("max_output_tokens");
        }
        else {
            assertThat(body.get("status").textValue()).isEqualTo("completed");
        }

        JsonNode chat = LocalServer.json(local.post("/v1/chat/completions", "{\"messages\": [{\"role\": \"system\", \"content\": \"Be brief.\"}, "
                + "{\"role\": \"user\", \"content\": \"Hi\"}], \"max_tokens\": 6, \"temperature\": 0}"));
        assertThat(part.get("text").textValue()).isEqualTo(chat.at("/choices/0/message/content").textValue());
        assertThat(usage.get("input_tokens").intValue()).isEqualTo(chat.at("/usage/prompt_tokens").intValue());
    }

    @Test
    void aStringInputIsOneUserMessage()
    {
        JsonNode text = LocalServer.json(local.post("/v1/responses", "{\"input\": \"Hi\", \"max_output_tokens\": 5, \"temperature\": 0}"));
        JsonNode chat = LocalServer.json(local.post("/v1/chat/completions", "{\"messages\": [{\"role\": \"user\", \"content\": \"Hi\"}], "
                + "\"max_tokens\": 5, \"temperature\": 0}"));
        assertThat(text.at("/output/0/content/0/text").textValue()).isEqualTo(chat.at("/choices/0/message/content").textValue());
        assertThat(text.get("instructions").isNull()).isTrue();
    }

    @Test
    void theStreamIsTheResponsesEventsAndItsDeltasAddUpToTheText()
    {
        String request = "{\"input\": \"Tell me\", \"max_output_tokens\": 8, \"temperature\": 0";
        String expected = LocalServer.json(local.post("/v1/responses", request + "}")).at("/output/0/content/0/text").textValue();
        HttpResponse<java.util.stream.Stream<String>> response = local.stream("/v1/responses", request + ", \"stream\": true}");
        assertThat(response.statusCode()).isEqualTo(200);
        assertThat(response.headers().firstValue("Content-Type").orElse("")).startsWith("text/event-stream");
        List<String> types = new ArrayList<>();
        StringBuilder deltas = new StringBuilder();
        JsonNode last = null;
        String eventName = null;
        for (String line : response.body().toList()) {
            if (line.startsWith("event: ")) {
                eventName = line.substring(7);
            }
            else if (line.startsWith("data: ")) {
                JsonNode event = LocalServer.json(line.substring(6));
                assertThat(event.get("type").textValue()).isEqualTo(eventName);
                assertThat(event.get("sequence_number").intValue()).isEqualTo(types.size());
                types.add(event.get("type").textValue());
                if (eventName.equals("response.output_text.delta")) {
                    deltas.append(event.get("delta").textValue());
                }
                last = event;
            }
        }
        assertThat(types.subList(0, 4)).containsExactly("response.created", "response.in_progress", "response.output_item.added",
                "response.content_part.added");
        assertThat(types.subList(types.size() - 4, types.size())).containsExactly("response.output_text.done", "response.content_part.done",
                "response.output_item.done", last.at("/response/status").textValue().equals("completed") ? "response.completed" : "response.incomplete");
        if (!expected.isEmpty()) {
            assertThat(types).contains("response.output_text.delta");
        }
        assertThat(deltas.toString()).isEqualTo(expected);
        assertThat(last.at("/response/output/0/content/0/text").textValue()).isEqualTo(expected);
    }

    @Test
    void whatTheResponsesApiCannotDoIsRefusedNamingTheField()
    {
        assertRefused("{}", 400, "input", "'input' is required");
        assertRefused("{\"input\": []}", 400, "input", "non-empty list");
        assertRefused("{\"input\": \"Hi\", \"store\": true}", 400, "store", "not stored");
        assertRefused("{\"input\": \"Hi\", \"previous_response_id\": \"resp_1\"}", 400, "previous_response_id", "not stored");
        assertRefused("{\"input\": \"Hi\", \"tools\": [{\"type\": \"web_search\"}]}", 400, "tools", "tool calling");
        assertRefused("{\"input\": [{\"role\": \"user\", \"content\": [{\"type\": \"input_image\", \"image_url\": \"x\"}]}]}", 400,
                "input[0].content[0].type", "text parts only");
        assertRefused("{\"input\": [{\"type\": \"function_call_output\", \"role\": \"user\", \"content\": \"x\"}]}", 400, "input[0].type",
                "only message items");
        assertRefused("{\"input\": [{\"role\": \"robot\", \"content\": \"x\"}]}", 400, "input[0].role", "not supported");
        assertRefused("{\"input\": \"Hi\", \"max_output_tokens\": 0}", 400, "max_output_tokens", "must be in");
        assertRefused("{\"input\": \"Hi\", \"temperature\": 3}", 400, "temperature", "must be in");
        assertRefused("{\"input\": \"Hi\", \"frobnicate\": 1}", 400, "frobnicate", "unknown field");
        assertRefused("{\"input\": \"Hi\", \"model\": \"gpt-4o\"}", 404, "model", "not served here");
        assertRefused("{\"input\": \"Hi\", \"text\": {\"format\": {\"type\": \"xml\"}}}", 400, "text.format.type", "use text, json_object or json_schema");
        assertRefused("{\"input\": \"Hi\", \"text\": {\"format\": {\"type\": \"json_schema\", \"name\": \"s\", \"schema\": {\"not\": {}}}}}", 400,
                "text.format.schema", "cannot be enforced");
    }

    private static void assertRefused(String body, int status, String param, String message)
    {
        HttpResponse<String> response = local.post("/v1/responses", body);
        assertThat(response.statusCode()).as(body + " -> " + response.body()).isEqualTo(status);
        JsonNode error = LocalServer.json(response).get("error");
        assertThat(error.get("param").textValue()).isEqualTo(param);
        assertThat(error.get("message").textValue()).contains(message);
    }
}
