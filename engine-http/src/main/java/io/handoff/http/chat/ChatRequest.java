package io.handoff.http.chat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.handoff.core.output.LogprobOptions;
import io.handoff.core.output.SamplingOptions;
import io.handoff.core.output.ToolFormat;
import io.handoff.http.base.ApiError;
import io.handoff.http.base.JsonFields;
import io.handoff.http.base.OutputCount;
import io.handoff.http.base.UnusedFields;
import io.handoff.http.fields.LogprobFields;
import io.handoff.http.fields.ResponseFormats;
import io.handoff.http.fields.SamplingFields;

import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Optional;
import java.util.OptionalInt;
import java.util.Set;
import java.util.TreeSet;

import static java.util.Objects.requireNonNull;

/**
 * A validated {@code POST /v1/chat/completions} body: the messages, the sampling fields every API takes
 * ({@link SamplingFields}, OpenAI's spelling, with SGLang's {@code json_schema} / {@code regex} / {@code ebnf}),
 * {@code response_format}, the tools ({@link ChatTools}) and {@code logprobs} / {@code top_logprobs}. Options this
 * server does not implement are taken only at their neutral value, so a client never silently gets something other
 * than what it asked for; every refusal is a 400 naming the field, the value seen and what is allowed.
 *
 * @param maxTokens {@code max_completion_tokens} or its older name {@code max_tokens}; empty: the server's default
 * @param includeUsage {@code stream_options.include_usage}: a last chunk with the usage before {@code [DONE]}
 * @param n choices to generate, each from the same prompt (1 to {@link OutputCount#MAX_OUTPUTS})
 * @param rid the request's id (SGLang's extension; a router sends it), else the server makes one
 * @param sampling the sampling fields, with the output's grammar when {@code response_format} or a constraint field set one
 */
public record ChatRequest(
        Optional<String> model,
        List<ChatMessage> messages,
        OptionalInt maxTokens,
        SamplingOptions sampling,
        Optional<LogprobOptions> logprobs,
        boolean stream,
        boolean includeUsage,
        int n,
        Optional<String> rid,
        ChatTools tools)
{
    static final Set<String> ROLES = Set.of("system", "user", "assistant", "tool");
    private static final Set<String> FIELDS = JsonFields.fieldNames(Set.of("model", "messages", "max_tokens", "max_completion_tokens", "stream",
            "stream_options", "n", "user", "logprobs", "top_logprobs", "tools", "tool_choice", "parallel_tool_calls", "response_format", "rid",
            // a router's pairing of a prefill with a decode; the server checks them (and who sent them) itself
            "bootstrap_room", "bootstrap_generation", "bootstrap_host", "bootstrap_local"),
            SamplingFields.names(SamplingFields.Spelling.OPENAI), UnusedFields.openAiNames());
    private static final Set<String> MESSAGE_FIELDS = Set.of("role", "content", "name", "tool_call_id", "tool_calls");

    public ChatRequest
    {
        requireNonNull(model, "model is null");
        messages = List.copyOf(requireNonNull(messages, "messages is null"));
        requireNonNull(maxTokens, "maxTokens is null");
        requireNonNull(sampling, "sampling is null");
        requireNonNull(logprobs, "logprobs is null");
        requireNonNull(rid, "rid is null");
        requireNonNull(tools, "tools is null");
    }

    public List<String> stop()
    {
        return sampling.stops();
    }

    /** Validates {@code body} with no bound on token ids and the context as the default output limit. */
    public static ChatRequest parse(ObjectNode body, int maxContext)
    {
        return parse(body, maxContext, Integer.MAX_VALUE, maxContext);
    }

    /**
     * Validates {@code body}; {@code maxContext} bounds the token limit, {@code vocabSize} the stop token ids, and
     * {@code defaultMaxTokens} is the output limit when the body sets none. Throws a 400 {@link ApiError} for the first bad field.
     */
    public static ChatRequest parse(ObjectNode body, int maxContext, int vocabSize, int defaultMaxTokens)
    {
        allowOnly(body, "", FIELDS);
        JsonFields fields = JsonFields.of(body);
        Optional<String> model = optional(body, "model").map(v -> string("model", v));
        UnusedFields.checkOpenAi(fields);
        ChatTools tools = ChatTools.parse(body);
        optional(body, "user").ifPresent(v -> string("user", v));
        boolean stream = optional(body, "stream").map(v -> bool("stream", v)).orElse(false);
        boolean includeUsage = false;
        Optional<JsonNode> options = optional(body, "stream_options");
        if (options.isPresent()) {
            if (!(options.get() instanceof ObjectNode object)) {
                throw wrongType("stream_options", "an object", options.get());
            }
            if (!stream) {
                throw ApiError.invalid("invalid_value", "stream_options", "stream_options is only allowed with \"stream\": true");
            }
            allowOnly(object, "stream_options.", Set.of("include_usage"));
            includeUsage = optional(object, "include_usage").map(v -> bool("stream_options.include_usage", v)).orElse(false);
        }
        List<ChatMessage> messages = messages(body);
        OptionalInt maxTokens = maxTokens(body, maxContext);
        SamplingOptions sampling = SamplingFields.parse(fields, SamplingFields.Spelling.OPENAI, maxTokens.orElse(defaultMaxTokens), vocabSize);
        sampling = ResponseFormats.withChatFormat(sampling, optional(body, "response_format"), body::has);
        if (tools.active() && sampling.grammar().isPresent() && (tools.required() || tools.callable().stream().anyMatch(ChatTools.Tool::strict))) {
            throw ApiError.invalid("invalid_value", "tool_choice", "a required or strict tool call and response_format (or json_schema, regex, "
                    + "ebnf) both constrain the output; send one");
        }
        return new ChatRequest(model, messages, maxTokens, sampling, LogprobFields.chat(fields), stream, includeUsage,
                OutputCount.of("/v1/chat/completions", body).returned(), optional(body, "rid").map(v -> string("rid", v)), tools);
    }

    private static List<ChatMessage> messages(ObjectNode body)
    {
        JsonNode value = optional(body, "messages").orElseThrow(() -> ApiError.invalid("missing_field", "messages", "'messages' is required"));
        if (!value.isArray()) {
            throw wrongType("messages", "an array of {role, content} objects", value);
        }
        if (value.isEmpty()) {
            throw ApiError.invalid("invalid_value", "messages", "messages must hold at least one message, got an empty array");
        }
        List<ChatMessage> messages = new ArrayList<>();
        for (int i = 0; i < value.size(); i++) {
            String path = "messages[" + i + "]";
            if (!(value.get(i) instanceof ObjectNode message)) {
                throw wrongType(path, "an object with role and content", value.get(i));
            }
            allowOnly(message, path + ".", MESSAGE_FIELDS);
            String role = string(path + ".role", optional(message, "role").orElseThrow(() ->
                    ApiError.invalid("missing_field", path + ".role", path + ".role is required")));
            if (!ROLES.contains(role)) {
                throw ApiError.invalid("invalid_value", path + ".role", path + ".role = \"" + role + "\" is not supported; use one of "
                        + new TreeSet<>(ROLES));
            }
            Optional<String> name = optional(message, "name").map(v -> string(path + ".name", v));
            Optional<String> toolCallId = optional(message, "tool_call_id").map(v -> string(path + ".tool_call_id", v));
            List<ToolFormat.Call> calls = new ArrayList<>();
            List<String> ids = new ArrayList<>();
            optional(message, "tool_calls").ifPresent(v -> toolCalls(path + ".tool_calls", v, role, calls, ids));
            String content = calls.isEmpty() || message.hasNonNull("content") ? content(path + ".content", message.get("content"), role) : "";
            messages.add(new ChatMessage(role, content, calls, ids, toolCallId, name));
        }
        if (messages.stream().allMatch(message -> message.content().isEmpty() && message.toolCalls().isEmpty())) {
            // the template alone would be the prompt: a generation from nothing the client said
            throw ApiError.invalid("invalid_value", "messages", "every message's content is empty; send at least one message with text");
        }
        return messages;
    }

    /** An assistant message's earlier calls: {@code [{"id", "type": "function", "function": {"name", "arguments"}}]}. */
    private static void toolCalls(String path, JsonNode value, String role, List<ToolFormat.Call> calls, List<String> ids)
    {
        if (!role.equals("assistant")) {
            throw ApiError.invalid("invalid_value", path, path + " is only allowed on an assistant message");
        }
        if (!value.isArray()) {
            throw wrongType(path, "an array of {\"id\", \"type\": \"function\", \"function\": {\"name\", \"arguments\"}}", value);
        }
        for (int i = 0; i < value.size(); i++) {
            String at = path + "[" + i + "]";
            JsonNode call = value.get(i);
            JsonNode function = call.path("function");
            if (!call.isObject() || !function.path("name").isTextual()) {
                throw ApiError.invalid("invalid_value", at, at + " must be {\"id\", \"type\": \"function\", \"function\": {\"name\", \"arguments\"}}");
            }
            JsonNode arguments = function.path("arguments");
            String text;
            if (arguments.isTextual()) {
                text = arguments.textValue();
                try {
                    if (!JsonFields.MAPPER.readTree(text).isObject()) {
                        throw ApiError.invalid("invalid_value", at + ".function.arguments", at + ".function.arguments must be a JSON object's text");
                    }
                }
                catch (com.fasterxml.jackson.core.JsonProcessingException e) {
                    throw ApiError.invalid("invalid_value", at + ".function.arguments", at + ".function.arguments is not JSON: " + e.getOriginalMessage());
                }
            }
            else if (arguments.isObject()) {
                text = arguments.toString();
            }
            else {
                throw wrongType(at + ".function.arguments", "the arguments' JSON text", arguments);
            }
            calls.add(new ToolFormat.Call(function.get("name").textValue(), text));
            ids.add(call.path("id").isTextual() ? call.get("id").textValue() : "call_" + i);
        }
    }

    /** A string, or an array of {@code {type: "text", text}} parts joined with newlines (as vLLM joins them). */
    private static String content(String path, JsonNode value, String role)
    {
        if (value == null || value.isNull()) {
            if (role.equals("assistant")) {
                return "";
            }
            throw ApiError.invalid("missing_field", path, path + " is required for a " + role + " message");
        }
        if (value.isTextual()) {
            return value.textValue();
        }
        if (!value.isArray()) {
            throw wrongType(path, "a string or an array of {\"type\": \"text\", \"text\": ...} parts", value);
        }
        List<String> texts = new ArrayList<>();
        for (int i = 0; i < value.size(); i++) {
            JsonNode part = value.get(i);
            String partPath = path + "[" + i + "]";
            if (!part.isObject() || !part.path("type").isTextual()) {
                throw wrongType(partPath, "an object with a \"type\"", part);
            }
            String type = part.get("type").textValue();
            if (!type.equals("text")) {
                throw ApiError.invalid("unsupported", partPath + ".type", partPath + ".type = \"" + type
                        + "\" is not supported: this model takes text parts only ({\"type\": \"text\", \"text\": ...})");
            }
            texts.add(string(partPath + ".text", optional((ObjectNode) part, "text").orElseThrow(() ->
                    ApiError.invalid("missing_field", partPath + ".text", partPath + ".text is required"))));
        }
        return String.join("\n", texts);
    }

    private static OptionalInt maxTokens(ObjectNode body, int maxContext)
    {
        Optional<Long> legacy = optional(body, "max_tokens").map(v -> range("max_tokens", integer("max_tokens", v), 1, maxContext));
        Optional<Long> current = optional(body, "max_completion_tokens").map(v -> range("max_completion_tokens",
                integer("max_completion_tokens", v), 1, maxContext));
        if (legacy.isPresent() && current.isPresent() && !legacy.equals(current)) {
            throw ApiError.invalid("invalid_value", "max_completion_tokens", "max_completion_tokens = " + current.get() + " and max_tokens = "
                    + legacy.get() + " disagree; send one of them (max_tokens is the older name of max_completion_tokens)");
        }
        return current.or(() -> legacy).map(v -> OptionalInt.of(v.intValue())).orElse(OptionalInt.empty());
    }

    private static void allowOnly(ObjectNode node, String prefix, Set<String> known)
    {
        for (Iterator<String> names = node.fieldNames(); names.hasNext(); ) {
            String name = names.next();
            if (!known.contains(name)) {
                throw ApiError.invalid("unknown_field", prefix + name, "unknown field '" + prefix + name + "'; known fields: "
                        + String.join(", ", new TreeSet<>(known)));
            }
        }
    }

    private static Optional<JsonNode> optional(ObjectNode node, String name)
    {
        JsonNode value = node.get(name);
        return value == null || value.isNull() ? Optional.empty() : Optional.of(value);
    }

    private static String string(String path, JsonNode value)
    {
        if (!value.isTextual()) {
            throw wrongType(path, "a string", value);
        }
        return value.textValue();
    }

    private static boolean bool(String path, JsonNode value)
    {
        if (!value.isBoolean()) {
            throw wrongType(path, "true or false", value);
        }
        return value.booleanValue();
    }

    private static long integer(String path, JsonNode value)
    {
        boolean integral = value.isIntegralNumber() && value.canConvertToLong()
                || value.isFloatingPointNumber() && value.doubleValue() == Math.rint(value.doubleValue()) && Math.abs(value.doubleValue()) < 0x1p53;
        if (!integral) {
            throw wrongType(path, "an integer", value);
        }
        return value.longValue();
    }

    private static long range(String path, long value, long min, long max)
    {
        if (value < min || value > max) {
            throw ApiError.invalid("invalid_value", path, path + " must be in " + min + ".." + max + " (the model's context), got " + value);
        }
        return value;
    }

    private static ApiError wrongType(String path, String expected, JsonNode value)
    {
        return ApiError.invalid("invalid_type", path, path + " must be " + expected + ", got " + describe(value));
    }

    private static String describe(JsonNode value)
    {
        return switch (value.getNodeType()) {
            case STRING -> "the string " + shown(value);
            case NUMBER -> "the number " + shown(value);
            case ARRAY -> "an array";
            case OBJECT -> "an object";
            case NULL -> "null";
            default -> shown(value);
        };
    }

    private static String shown(JsonNode value)
    {
        String text = value.toString();
        return text.length() > 40 ? text.substring(0, 37) + "..." : text;
    }
}
