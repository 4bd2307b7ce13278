package io.handoff.http;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.handoff.core.grammar.Grammar;
import io.handoff.http.base.ApiError;
import io.handoff.http.base.JsonFields;
import io.handoff.http.chat.ChatMessage;
import io.handoff.http.fields.ResponseFormats;

import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Optional;
import java.util.OptionalInt;
import java.util.Set;
import java.util.TreeSet;

import static java.util.Objects.requireNonNull;

/**
 * A {@code POST /v1/responses} body, text in and text out: {@code input} as a string (one user message) or a list of
 * message items whose {@code content} is a string or {@code input_text}/{@code output_text} parts; {@code instructions}
 * becomes a leading system message. Tools, stored responses and structured output do not exist here: a field asking
 * for them is refused, naming it; left out, null or at its neutral value it is accepted.
 *
 * @param messages what the chat template renders, instructions first
 * @param maxOutputTokens {@code max_output_tokens}, when given
 */
record ResponsesRequest(Optional<String> model, Optional<String> instructions, List<ChatMessage> messages, OptionalInt maxOutputTokens,
        double temperature, double topP, boolean stream, Optional<String> rid, Optional<Grammar> format)
{
    static final int MAX_ITEMS = 256;
    private static final Set<String> FIELDS = Set.of("model", "input", "instructions", "max_output_tokens", "temperature", "top_p", "stream",
            "store", "user", "tools", "tool_choice", "parallel_tool_calls", "text", "truncation", "previous_response_id", "background",
            "include", "metadata", "rid", "bootstrap_room", "bootstrap_generation", "bootstrap_host", "bootstrap_local");
    private static final Set<String> ITEM_FIELDS = Set.of("type", "role", "content", "id", "status");
    private static final Set<String> ROLES = Set.of("system", "developer", "user", "assistant");

    ResponsesRequest
    {
        requireNonNull(model, "model is null");
        requireNonNull(instructions, "instructions is null");
        requireNonNull(rid, "rid is null");
        messages = List.copyOf(requireNonNull(messages, "messages is null"));
        requireNonNull(maxOutputTokens, "maxOutputTokens is null");
        requireNonNull(format, "format is null");
    }

    static ResponsesRequest parse(JsonFields body, int maxContext)
    {
        body.allowOnly(FIELDS);
        body.onlyNeutral("store", JsonFields.MAPPER.getNodeFactory().booleanNode(false), "responses are not stored, so none can be retrieved later");
        body.onlyNeutral("background", JsonFields.MAPPER.getNodeFactory().booleanNode(false), "every response is answered in the request");
        body.onlyNeutral("previous_response_id", null, "responses are not stored; send the whole conversation in input");
        body.onlyNeutral("tools", JsonFields.MAPPER.createArrayNode(), "tool calling is served by /v1/chat/completions, not by the Responses API");
        body.onlyNeutral("tool_choice", JsonFields.MAPPER.getNodeFactory().textNode("none"),
                "tool calling is served by /v1/chat/completions, not by the Responses API");
        body.onlyNeutral("include", JsonFields.MAPPER.createArrayNode(), "there is nothing extra to include");
        body.onlyNeutral("truncation", JsonFields.MAPPER.getNodeFactory().textNode("disabled"), "a prompt too long for the context is refused");
        body.bool("parallel_tool_calls");
        body.string("user");
        body.object("metadata");
        Optional<Grammar> format = body.object("text").flatMap(text -> {
            text.allowOnly(Set.of("format"));
            return text.raw("format").flatMap(value -> ResponseFormats.responses(value, text.path("format")));
        });
        Optional<String> instructions = body.string("instructions");
        List<ChatMessage> messages = new ArrayList<>();
        instructions.ifPresent(text -> messages.add(new ChatMessage("system", text)));
        messages.addAll(input(body.raw("input").orElseThrow(() -> ApiError.invalid("missing_field", "input",
                "'input' is required: a string, or a list of {\"role\", \"content\"} message items"))));
        return new ResponsesRequest(body.string("model"), instructions, messages,
                body.integer("max_output_tokens", 1, maxContext).map(v -> OptionalInt.of(v.intValue())).orElse(OptionalInt.empty()),
                body.number("temperature", 0, false, 2).orElse(1.0),
                body.number("top_p", 0, true, 1).orElse(1.0),
                body.bool("stream").orElse(false),
                body.string("rid"),
                format);
    }

    private static List<ChatMessage> input(JsonNode input)
    {
        if (input.isTextual()) {
            if (input.textValue().isEmpty()) {
                throw ApiError.invalid("invalid_value", "input", "input is an empty string; send the text to respond to");
            }
            return List.of(new ChatMessage("user", input.textValue()));
        }
        if (!input.isArray() || input.isEmpty()) {
            throw ApiError.invalid("invalid_type", "input", "input must be a string or a non-empty list of message items, got " + JsonFields.describe(input));
        }
        if (input.size() > MAX_ITEMS) {
            throw ApiError.invalid("invalid_value", "input", "input holds " + input.size() + " items; send at most " + MAX_ITEMS);
        }
        List<ChatMessage> messages = new ArrayList<>();
        for (int i = 0; i < input.size(); i++) {
            String path = "input[" + i + "]";
            if (!(input.get(i) instanceof ObjectNode item)) {
                throw ApiError.invalid("invalid_type", path, path + " must be a message item {\"role\", \"content\"}, got " + JsonFields.describe(input.get(i)));
            }
            messages.add(message(path, item));
        }
        if (messages.stream().allMatch(message -> message.content().isEmpty())) {
            throw ApiError.invalid("invalid_value", "input", "every input item's content is empty; send at least one with text");
        }
        return messages;
    }

    private static ChatMessage message(String path, ObjectNode item)
    {
        for (Iterator<String> names = item.fieldNames(); names.hasNext(); ) {
            String name = names.next();
            if (!ITEM_FIELDS.contains(name)) {
                throw ApiError.invalid("unknown_field", path + "." + name, "unknown field '" + path + "." + name + "' of a message item; known fields: "
                        + String.join(", ", new TreeSet<>(ITEM_FIELDS)));
            }
        }
        String type = text(path + ".type", item.get("type")).orElse("message");
        if (!type.equals("message")) {
            throw ApiError.invalid("unsupported", path + ".type", path + ".type = \"" + type + "\" is not supported: only message items (text in, text out)");
        }
        String role = text(path + ".role", item.get("role")).orElseThrow(() -> ApiError.invalid("missing_field", path + ".role", path + ".role is required"));
        if (!ROLES.contains(role)) {
            throw ApiError.invalid("invalid_value", path + ".role", path + ".role = \"" + role + "\" is not supported; use one of " + new TreeSet<>(ROLES));
        }
        // the Responses API's developer role is what chat templates know as system
        return new ChatMessage(role.equals("developer") ? "system" : role, content(path + ".content", item.get("content")));
    }

    /** A string, or {@code input_text} / {@code output_text} parts joined with newlines, as chat completions joins its text parts. */
    private static String content(String path, JsonNode value)
    {
        if (value == null || value.isNull()) {
            throw ApiError.invalid("missing_field", path, path + " is required");
        }
        if (value.isTextual()) {
            return value.textValue();
        }
        if (!value.isArray()) {
            throw ApiError.invalid("invalid_type", path, path + " must be a string or a list of {\"type\": \"input_text\", \"text\": ...} parts, got "
                    + JsonFields.describe(value));
        }
        List<String> texts = new ArrayList<>();
        for (int i = 0; i < value.size(); i++) {
            String partPath = path + "[" + i + "]";
            JsonNode part = value.get(i);
            if (!part.isObject()) {
                throw ApiError.invalid("invalid_type", partPath, partPath + " must be an object with a \"type\", got " + JsonFields.describe(part));
            }
            String type = text(partPath + ".type", part.get("type")).orElseThrow(() -> ApiError.invalid("missing_field", partPath + ".type",
                    partPath + ".type is required"));
            if (!type.equals("input_text") && !type.equals("output_text")) {
                throw ApiError.invalid("unsupported", partPath + ".type", partPath + ".type = \"" + type
                        + "\" is not supported: this model takes text parts only (input_text, output_text)");
            }
            texts.add(text(partPath + ".text", part.get("text")).orElseThrow(() -> ApiError.invalid("missing_field", partPath + ".text",
                    partPath + ".text is required")));
        }
        return String.join("\n", texts);
    }

    private static Optional<String> text(String path, JsonNode value)
    {
        if (value == null || value.isNull()) {
            return Optional.empty();
        }
        if (!value.isTextual()) {
            throw ApiError.invalid("invalid_type", path, path + " must be a string, got " + JsonFields.describe(value));
        }
        return Optional.of(value.textValue());
    }
}
