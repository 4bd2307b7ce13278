package io.handoff.http.fields;

import com.fasterxml.jackson.databind.JsonNode;
import io.handoff.core.grammar.ByteAutomaton;
import io.handoff.core.grammar.Grammar;
import io.handoff.core.grammar.GrammarException;
import io.handoff.core.grammar.JsonSchemaGrammar;
import io.handoff.core.output.SamplingOptions;
import io.handoff.http.base.ApiError;
import io.handoff.http.base.JsonFields;

import java.util.Optional;
import java.util.Set;
import java.util.function.Predicate;

/**
 * OpenAI's {@code response_format} (chat: {@code {"type": "json_schema", "json_schema": {"name", "schema", "strict"}}})
 * and the Responses API's {@code text.format} ({@code {"type": "json_schema", "name", "schema", "strict"}}), as the
 * grammar the output must follow. {@code json_object} is any JSON object; {@code text} is no constraint. A schema is
 * enforced whether or not {@code strict} is set, so one this engine cannot enforce is a 400 either way.
 */
public final class ResponseFormats
{
    private ResponseFormats() {}

    /**
     * {@code sampling} held to the chat-style {@code response_format} when the body sets one; a 400 when a constraint
     * field ({@code has} tells which the body sets) constrains the output too.
     */
    public static SamplingOptions withChatFormat(SamplingOptions sampling, Optional<JsonNode> responseFormat, Predicate<String> has)
    {
        Optional<Grammar> format = responseFormat.filter(v -> !v.isNull()).flatMap(v -> chat(v, "response_format"));
        if (format.isEmpty()) {
            return sampling;
        }
        if (sampling.grammar().isPresent()) {
            throw ApiError.invalid("invalid_value", "response_format", "response_format and " + ConstraintFields.NAMES.stream().filter(has)
                    .sorted().findFirst().orElse("a constraint") + " both constrain the output; send one");
        }
        return sampling.withGrammar(format.get());
    }

    /** Chat's {@code response_format}. */
    public static Optional<Grammar> chat(JsonNode value, String path)
    {
        String type = type(value, path, Set.of("type", "json_schema"));
        if (!type.equals("json_schema")) {
            return simple(type, path);
        }
        JsonNode spec = value.get("json_schema");
        if (spec == null || !spec.isObject()) {
            throw ApiError.invalid("missing_field", path + ".json_schema", path + ".json_schema is required with type json_schema: "
                    + "{\"name\": ..., \"schema\": {...}, \"strict\": true}");
        }
        return Optional.of(schema(spec, path + ".json_schema"));
    }

    /** The Responses API's {@code text.format}. */
    public static Optional<Grammar> responses(JsonNode value, String path)
    {
        String type = type(value, path, Set.of("type", "name", "schema", "strict", "description"));
        if (!type.equals("json_schema")) {
            return simple(type, path);
        }
        return Optional.of(schema(value, path));
    }

    private static String type(JsonNode value, String path, Set<String> fields)
    {
        if (!value.isObject() || !value.path("type").isTextual()) {
            throw ApiError.invalid("invalid_type", path, path + " must be an object with a \"type\" (text, json_object or json_schema), got "
                    + JsonFields.describe(value));
        }
        value.fieldNames().forEachRemaining(name -> {
            if (!fields.contains(name)) {
                throw ApiError.invalid("unknown_field", path + "." + name, "unknown field '" + path + "." + name + "'; known fields: "
                        + String.join(", ", new java.util.TreeSet<>(fields)));
            }
        });
        return value.get("type").textValue();
    }

    private static Optional<Grammar> simple(String type, String path)
    {
        return switch (type) {
            case "text" -> Optional.empty();
            case "json_object" -> Optional.of(JsonSchemaGrammar.anyObject());
            default -> throw ApiError.invalid("invalid_value", path + ".type", path + ".type = \"" + type
                    + "\" is not supported; use text, json_object or json_schema");
        };
    }

    private static Grammar schema(JsonNode spec, String path)
    {
        for (String name : new String[] {"name", "description"}) {
            if (spec.has(name) && !spec.get(name).isTextual()) {
                throw ApiError.invalid("invalid_type", path + "." + name, path + "." + name + " must be a string");
            }
        }
        if (spec.has("strict") && !spec.get("strict").isBoolean() && !spec.get("strict").isNull()) {
            throw ApiError.invalid("invalid_type", path + ".strict", path + ".strict must be true or false");
        }
        JsonNode schema = spec.get("schema");
        if (schema == null || !(schema.isObject() || schema.isBoolean())) {
            throw ApiError.invalid("missing_field", path + ".schema", path + ".schema is required: the JSON Schema the output must follow");
        }
        try {
            Grammar grammar = ConstraintFields.schema(schema.toString(), path + ".schema");
            ByteAutomaton.compile(grammar);
            return grammar;
        }
        catch (GrammarException e) {
            throw ApiError.invalid("invalid_value", path + ".schema", path + ".schema cannot be enforced: " + e.getMessage());
        }
    }
}
