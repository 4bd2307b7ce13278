package io.handoff.http.fields;

import com.fasterxml.jackson.databind.JsonNode;
import io.handoff.core.grammar.ByteAutomaton;
import io.handoff.core.grammar.Gbnf;
import io.handoff.core.grammar.Grammar;
import io.handoff.core.grammar.GrammarException;
import io.handoff.core.grammar.JsonSchemaGrammar;
import io.handoff.core.grammar.RegexGrammar;
import io.handoff.core.json.Json;
import io.handoff.http.base.ApiError;
import io.handoff.http.base.JsonFields;

import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.Set;

/**
 * SGLang's constraints on the output: {@code json_schema} (a schema, as a JSON string or an object), {@code regex} (the
 * whole output matches it) and {@code ebnf} (a GBNF grammar), at most one per request. Each is compiled here, so a
 * constraint that cannot be enforced is a 400 that names the field and the reason.
 */
public final class ConstraintFields
{
    public static final Set<String> NAMES = Set.of("json_schema", "regex", "ebnf");
    /** The longest schema or grammar text taken. */
    public static final int MAX_LENGTH = 64 * 1024;

    private ConstraintFields() {}

    /** The one constraint {@code body} sets, compiled; empty when it sets none. */
    public static Optional<Grammar> parse(JsonFields body)
    {
        List<String> present = new ArrayList<>();
        for (String name : List.of("json_schema", "regex", "ebnf")) {
            if (body.raw(name).isPresent()) {
                present.add(name);
            }
        }
        if (present.isEmpty()) {
            return Optional.empty();
        }
        if (present.size() > 1) {
            throw ApiError.invalid("invalid_value", body.path(present.get(1)), "set one constraint, not " + String.join(" and ", present));
        }
        String name = present.getFirst();
        JsonNode value = body.raw(name).get();
        String text;
        if (value.isTextual()) {
            text = value.textValue();
        }
        else if (name.equals("json_schema") && (value.isObject() || value.isBoolean())) {
            text = value.toString();
        }
        else {
            throw ApiError.invalid("invalid_type", body.path(name), body.path(name) + " must be a string" + (name.equals("json_schema")
                    ? " (the schema as JSON text) or an object" : "") + ", got " + JsonFields.describe(value));
        }
        if (text.length() > MAX_LENGTH) {
            throw ApiError.invalid("invalid_value", body.path(name), body.path(name) + " is " + text.length() + " characters, over the limit of "
                    + MAX_LENGTH);
        }
        try {
            Grammar grammar = switch (name) {
                case "regex" -> RegexGrammar.fullMatch(text);
                case "ebnf" -> Gbnf.parse(text);
                default -> schema(text, body.path(name));
            };
            // what only the automaton finds (left recursion, a grammar too large) is this field's 400 too
            ByteAutomaton.compile(grammar);
            return Optional.of(grammar);
        }
        catch (GrammarException e) {
            throw ApiError.invalid("invalid_value", body.path(name), body.path(name) + ": " + e.getMessage());
        }
    }

    /** The grammar of JSON valid against the schema {@code text}; {@code path} names it in the error when it is not JSON. */
    public static Grammar schema(String text, String path)
    {
        Object schema;
        try {
            schema = Json.parse(text, path);
        }
        catch (IllegalArgumentException e) {
            throw ApiError.invalid("invalid_value", path, path + " is not JSON: " + e.getMessage());
        }
        return JsonSchemaGrammar.compile(schema, "json_schema " + text);
    }
}
