package io.handoff.http.chat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.handoff.core.grammar.ByteAutomaton;
import io.handoff.core.grammar.Grammar;
import io.handoff.core.grammar.GrammarException;
import io.handoff.core.grammar.JsonSchemaGrammar;
import io.handoff.core.json.Json;
import io.handoff.core.output.ToolFormat;
import io.handoff.core.output.ToolSpec;
import io.handoff.http.base.ApiError;
import io.handoff.http.base.JsonFields;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalInt;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Pattern;

import static java.util.Objects.requireNonNull;

/**
 * A chat request's {@code tools}, {@code tool_choice} and {@code parallel_tool_calls}, validated: the functions the
 * model may call, and whether it must ({@code required}, or a named function), may ({@code auto}, the default with
 * tools) or may not ({@code none}). Where the output is held to a call's grammar, it holds one call unless the request
 * sets {@code parallel_tool_calls: true}: a grammar that always offers another call lets a small model repeat its call
 * until the token limit. Calls the model writes unconstrained are all parsed.
 *
 * @param named the function a {@link Choice#NAMED} choice names
 */
public record ChatTools(List<Tool> tools, Choice choice, Optional<String> named, boolean parallel)
{
    public static final ChatTools NONE = new ChatTools(List.of(), Choice.NONE, Optional.empty(), false);
    public static final int MAX_TOOLS = 128;
    private static final Pattern NAME = Pattern.compile("[a-zA-Z0-9_-]{1,64}");

    public enum Choice
    {
        NONE, AUTO, REQUIRED, NAMED
    }

    /**
     * One function.
     *
     * @param parameters its arguments' JSON Schema (an empty object schema when the tool has none)
     * @param strict the arguments must follow the schema even when the model chooses to call it ({@code auto})
     */
    public record Tool(String name, Optional<String> description, ObjectNode parameters, boolean strict)
    {
        public Tool
        {
            requireNonNull(name, "name is null");
            requireNonNull(description, "description is null");
            requireNonNull(parameters, "parameters is null");
        }

        /** The tool as chat templates see it: {@code {"type": "function", "function": {...}}}. */
        Map<String, Object> templateValue()
        {
            Map<String, Object> function = new LinkedHashMap<>();
            function.put("name", name);
            description.ifPresent(d -> function.put("description", d));
            function.put("parameters", TemplateValues.fromJson(parameters));
            Map<String, Object> tool = new LinkedHashMap<>();
            tool.put("type", "function");
            tool.put("function", function);
            return tool;
        }
    }

    public ChatTools
    {
        tools = List.copyOf(requireNonNull(tools, "tools is null"));
        requireNonNull(choice, "choice is null");
        requireNonNull(named, "named is null");
    }

    /** Whether the model is told about the tools (and its output is searched for calls). */
    public boolean active()
    {
        return !tools.isEmpty() && choice != Choice.NONE;
    }

    /** Whether the output must be calls. */
    public boolean required()
    {
        return choice == Choice.REQUIRED || choice == Choice.NAMED;
    }

    /** The tools a call may name: the named one, or all. */
    public List<Tool> callable()
    {
        return named.map(name -> tools.stream().filter(t -> t.name().equals(name)).toList()).orElse(tools);
    }

    /**
     * The grammar the output follows in {@code format}, when a call is required or a callable tool is strict; a tool whose
     * arguments' schema cannot be enforced then is a 400 naming it.
     */
    public Optional<Grammar> grammar(ToolFormat format, OptionalInt specialStart)
    {
        if (!active()) {
            return Optional.empty();
        }
        List<ToolSpec> specs = new ArrayList<>();
        boolean enforced = required() || callable().stream().anyMatch(Tool::strict);
        for (Tool tool : callable()) {
            Object parameters = Json.parse(tool.parameters().toString(), "parameters");
            if (enforced) {
                try {
                    ByteAutomaton.compile(JsonSchemaGrammar.compile(parameters, "parameters"));
                }
                catch (GrammarException e) {
                    throw ApiError.invalid("invalid_value", "tools[" + tools.indexOf(tool) + "].function.parameters", "the arguments of '"
                            + tool.name() + "' cannot be enforced: " + e.getMessage());
                }
            }
            specs.add(new ToolSpec(tool.name(), parameters, tool.strict()));
        }
        return format.grammar(specs, required(), parallel, specialStart);
    }

    /** Each tool's JSON text, as a template without tools is told them. */
    public List<String> jsonTexts()
    {
        return tools.stream().map(tool -> JsonFields.MAPPER.valueToTree(tool.templateValue()).toString()).toList();
    }

    /** The tools as a chat template's {@code tools} variable. */
    public List<Object> templateValues()
    {
        List<Object> values = new ArrayList<>();
        tools.forEach(tool -> values.add(tool.templateValue()));
        return values;
    }

    static ChatTools parse(ObjectNode body)
    {
        JsonNode toolsNode = body.get("tools");
        List<Tool> tools = new ArrayList<>();
        if (toolsNode != null && !toolsNode.isNull()) {
            if (!toolsNode.isArray()) {
                throw ApiError.invalid("invalid_type", "tools", "tools must be an array of {\"type\": \"function\", \"function\": {...}}, got "
                        + JsonFields.describe(toolsNode));
            }
            if (toolsNode.size() > MAX_TOOLS) {
                throw ApiError.invalid("invalid_value", "tools", "tools holds " + toolsNode.size() + " tools, over the limit of " + MAX_TOOLS);
            }
            Set<String> names = new TreeSet<>();
            for (int i = 0; i < toolsNode.size(); i++) {
                Tool tool = tool(toolsNode.get(i), "tools[" + i + "]");
                if (!names.add(tool.name())) {
                    throw ApiError.invalid("invalid_value", "tools[" + i + "].function.name", "two tools are named '" + tool.name() + "'");
                }
                tools.add(tool);
            }
        }
        boolean parallel = false;
        JsonNode parallelNode = body.get("parallel_tool_calls");
        if (parallelNode != null && !parallelNode.isNull()) {
            if (!parallelNode.isBoolean()) {
                throw ApiError.invalid("invalid_type", "parallel_tool_calls", "parallel_tool_calls must be true or false");
            }
            parallel = parallelNode.booleanValue();
        }
        JsonNode choiceNode = body.get("tool_choice");
        Choice choice = tools.isEmpty() ? Choice.NONE : Choice.AUTO;
        Optional<String> named = Optional.empty();
        if (choiceNode != null && !choiceNode.isNull()) {
            if (choiceNode.isTextual()) {
                choice = switch (choiceNode.textValue()) {
                    case "none" -> Choice.NONE;
                    case "auto" -> Choice.AUTO;
                    case "required" -> Choice.REQUIRED;
                    default -> throw ApiError.invalid("invalid_value", "tool_choice", "tool_choice = \"" + choiceNode.textValue()
                            + "\" is not one of none, auto, required (or {\"type\": \"function\", \"function\": {\"name\": ...}})");
                };
            }
            else if (choiceNode.isObject() && "function".equals(choiceNode.path("type").asText()) && choiceNode.path("function").path("name").isTextual()) {
                choice = Choice.NAMED;
                String name = choiceNode.get("function").get("name").textValue();
                if (tools.stream().noneMatch(t -> t.name().equals(name))) {
                    throw ApiError.invalid("invalid_value", "tool_choice.function.name", "tool_choice names '" + name + "', which is not among "
                            + "the tools " + tools.stream().map(Tool::name).toList());
                }
                named = Optional.of(name);
            }
            else {
                throw ApiError.invalid("invalid_type", "tool_choice", "tool_choice must be none, auto, required or {\"type\": \"function\", "
                        + "\"function\": {\"name\": ...}}, got " + JsonFields.describe(choiceNode));
            }
            if (choice != Choice.NONE && tools.isEmpty()) {
                throw ApiError.invalid("invalid_value", "tool_choice", "tool_choice is only allowed with tools; send the tools it may call");
            }
        }
        return new ChatTools(tools, choice, named, parallel);
    }

    private static Tool tool(JsonNode node, String path)
    {
        if (!node.isObject() || !"function".equals(node.path("type").asText())) {
            throw ApiError.invalid("invalid_value", path + ".type", path + " must be {\"type\": \"function\", \"function\": {...}}; "
                    + "only function tools are supported");
        }
        JsonNode function = node.get("function");
        if (function == null || !function.isObject()) {
            throw ApiError.invalid("missing_field", path + ".function", path + ".function is required");
        }
        for (var names = function.fieldNames(); names.hasNext(); ) {
            String field = names.next();
            if (!Set.of("name", "description", "parameters", "strict").contains(field)) {
                throw ApiError.invalid("unknown_field", path + ".function." + field, "unknown field '" + path + ".function." + field
                        + "'; known fields: description, name, parameters, strict");
            }
        }
        JsonNode name = function.get("name");
        if (name == null || !name.isTextual() || !NAME.matcher(name.textValue()).matches()) {
            throw ApiError.invalid("invalid_value", path + ".function.name", path + ".function.name must be 1 to 64 letters, digits, _ or -");
        }
        JsonNode description = function.get("description");
        if (description != null && !description.isNull() && !description.isTextual()) {
            throw ApiError.invalid("invalid_type", path + ".function.description", path + ".function.description must be a string");
        }
        JsonNode parameters = function.get("parameters");
        ObjectNode schema;
        if (parameters == null || parameters.isNull()) {
            schema = JsonFields.MAPPER.createObjectNode().put("type", "object");
            schema.putObject("properties");
        }
        else if (parameters.isObject()) {
            schema = (ObjectNode) parameters;
        }
        else {
            throw ApiError.invalid("invalid_type", path + ".function.parameters", path + ".function.parameters must be a JSON Schema object");
        }
        JsonNode strict = function.get("strict");
        if (strict != null && !strict.isNull() && !strict.isBoolean()) {
            throw ApiError.invalid("invalid_type", path + ".function.strict", path + ".function.strict must be true or false");
        }
        return new Tool(name.textValue(), Optional.ofNullable(description).filter(JsonNode::isTextual).map(JsonNode::textValue), schema,
                strict != null && strict.asBoolean(false));
    }
}
