package io.handoff.http.base;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;

import java.io.IOException;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.Iterator;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.TreeSet;

import static java.util.Objects.requireNonNull;

/**
 * A JSON object from a request body, read field by field with errors that name the field, what was
 * expected and what was seen. A field set to {@code null} counts as absent (OpenAI clients send nulls for
 * unset options).
 */
public final class JsonFields
{
    public static final ObjectMapper MAPPER = StrictJson.mapper(64);

    /** The fields every OpenAI response object starts with: {@code id}, {@code object}, {@code created}, {@code model}. */
    public static ObjectNode openAiEnvelope(String id, String object, long created, String model)
    {
        ObjectNode node = MAPPER.createObjectNode();
        node.put("id", id);
        node.put("object", object);
        node.put("created", created);
        node.put("model", model);
        return node;
    }

    private final ObjectNode node;
    private final String prefix;

    private JsonFields(ObjectNode node, String prefix)
    {
        this.node = requireNonNull(node, "node is null");
        this.prefix = requireNonNull(prefix, "prefix is null");
    }

    public static JsonFields parse(byte[] body)
    {
        JsonNode tree;
        try {
            tree = MAPPER.readTree(body);
        }
        catch (JsonProcessingException e) {
            String where = e.getLocation() == null ? "" : " at line " + e.getLocation().getLineNr() + ", column " + e.getLocation().getColumnNr();
            throw ApiError.invalid("invalid_json", null, "the request body is not valid JSON" + where + ": " + e.getOriginalMessage());
        }
        catch (IOException e) {
            throw ApiError.invalid("invalid_json", null, "the request body could not be read as JSON: " + e.getMessage());
        }
        if (tree == null || tree.isMissingNode()) {
            throw ApiError.invalid("invalid_json", null, "the request body is empty; send a JSON object");
        }
        if (!(tree instanceof ObjectNode object)) {
            throw ApiError.invalid("invalid_type", null, "the request body must be a JSON object, got " + describe(tree));
        }
        return new JsonFields(object, "");
    }

    /** The known fields of an API made of several groups (its own, the sampling fields, ...), for {@link #allowOnly}. */
    @SafeVarargs
    public static Set<String> fieldNames(Set<String>... groups)
    {
        Set<String> names = new HashSet<>();
        for (Set<String> group : groups) {
            names.addAll(group);
        }
        return Set.copyOf(names);
    }

    /** Reads {@code object} (a body already parsed, or a part of one) with the same rules. */
    public static JsonFields of(ObjectNode object)
    {
        return new JsonFields(object, "");
    }

    /** A copy of the whole object, for a caller that passes the body on rather than reading it. */
    public ObjectNode copy()
    {
        return node.deepCopy();
    }

    public String path(String name)
    {
        return prefix + name;
    }

    /** Refuses fields this API does not know: a misspelt option must not silently fall back to its default. */
    public void allowOnly(Set<String> known)
    {
        for (Iterator<String> names = node.fieldNames(); names.hasNext(); ) {
            String name = names.next();
            if (!known.contains(name)) {
                throw ApiError.invalid("unknown_field", path(name), "unknown field '" + path(name) + "'; known fields: "
                        + String.join(", ", new TreeSet<>(known)));
            }
        }
    }

    public boolean has(String name)
    {
        JsonNode value = node.get(name);
        return value != null && !value.isNull();
    }

    public Optional<JsonNode> raw(String name)
    {
        return has(name) ? Optional.of(node.get(name)) : Optional.empty();
    }

    public Optional<String> string(String name)
    {
        return raw(name).map(value -> {
            if (!value.isTextual()) {
                throw wrongType(name, "a string", value);
            }
            return value.textValue();
        });
    }

    public Optional<Boolean> bool(String name)
    {
        return raw(name).map(value -> {
            if (!value.isBoolean()) {
                throw wrongType(name, "true or false", value);
            }
            return value.booleanValue();
        });
    }

    public Optional<Long> integer(String name, long min, long max)
    {
        return raw(name).map(value -> {
            long number = integerValue(path(name), value);
            if (number < min || number > max) {
                throw outOfRange(path(name), min + ".." + max, value);
            }
            return number;
        });
    }

    /** A number in {@code [min, max]}, or in {@code (min, max]} when {@code minExclusive}. */
    public Optional<Double> number(String name, double min, boolean minExclusive, double max)
    {
        return raw(name).map(value -> {
            if (!value.isNumber()) {
                throw wrongType(name, "a number", value);
            }
            double number = value.doubleValue();
            if (!(minExclusive ? number > min : number >= min) || !(number <= max)) {
                throw outOfRange(path(name), (minExclusive ? "(" : "[") + min + ", " + max + "]", value);
            }
            return number;
        });
    }

    public Optional<JsonFields> object(String name)
    {
        return raw(name).map(value -> {
            if (!(value instanceof ObjectNode object)) {
                throw wrongType(name, "an object", value);
            }
            return new JsonFields(object, path(name) + ".");
        });
    }

    /** A string or an array of at most {@code maxCount} non-empty strings (how both APIs take {@code stop}). */
    public List<String> strings(String name, int maxCount)
    {
        Optional<JsonNode> raw = raw(name);
        if (raw.isEmpty()) {
            return List.of();
        }
        JsonNode value = raw.get();
        List<JsonNode> items = new ArrayList<>();
        if (value.isArray()) {
            value.forEach(items::add);
        }
        else {
            items.add(value);
        }
        if (items.size() > maxCount) {
            throw ApiError.invalid("invalid_value", path(name), path(name) + " takes at most " + maxCount + " strings, got " + items.size());
        }
        List<String> strings = new ArrayList<>();
        for (JsonNode item : items) {
            if (!item.isTextual()) {
                throw wrongType(name, "a string or an array of strings", value);
            }
            if (item.textValue().isEmpty()) {
                throw ApiError.invalid("invalid_value", path(name), path(name) + " must not contain an empty string");
            }
            strings.add(item.textValue());
        }
        return List.copyOf(strings);
    }

    /** An array of integers in {@code [min, max)}. */
    public Optional<int[]> intArray(String name, int min, int max)
    {
        return raw(name).map(value -> {
            if (!value.isArray()) {
                throw wrongType(name, "an array of integers", value);
            }
            return intArray(path(name), value, min, max);
        });
    }

    public static int[] intArray(String path, JsonNode array, int min, int max)
    {
        int[] ids = new int[array.size()];
        for (int i = 0; i < ids.length; i++) {
            JsonNode item = array.get(i);
            if (!isInteger(item)) {
                throw ApiError.invalid("invalid_type", path, path + "[" + i + "] must be an integer, got " + describe(item));
            }
            long id = item.longValue();
            if (id < min || id >= max) {
                throw ApiError.invalid("invalid_value", path, path + "[" + i + "] = " + id + " is outside [" + min + ", " + max + ")");
            }
            ids[i] = (int) id;
        }
        return ids;
    }

    /**
     * Accepts an option this server does not implement only at the value that means "off"; with a null
     * {@code neutral}, only when absent (or null).
     */
    public void onlyNeutral(String name, JsonNode neutral, String what)
    {
        raw(name).ifPresent(value -> {
            boolean same = neutral != null
                    && (value.isNumber() && neutral.isNumber() ? value.doubleValue() == neutral.doubleValue() : value.equals(neutral));
            if (!same) {
                throw ApiError.invalid("unsupported", path(name), path(name) + " = " + value + " is not supported (" + what
                        + "); leave it out" + (neutral == null ? "" : " or set it to " + neutral));
            }
        });
    }

    static boolean isInteger(JsonNode value)
    {
        return value.isIntegralNumber() && value.canConvertToLong()
                || value.isFloatingPointNumber() && value.doubleValue() == Math.rint(value.doubleValue()) && Math.abs(value.doubleValue()) < 0x1p53;
    }

    private static long integerValue(String path, JsonNode value)
    {
        if (!isInteger(value)) {
            throw ApiError.invalid("invalid_type", path, path + " must be an integer, got " + describe(value));
        }
        return value.longValue();
    }

    private ApiError wrongType(String name, String expected, JsonNode value)
    {
        return ApiError.invalid("invalid_type", path(name), path(name) + " must be " + expected + ", got " + describe(value));
    }

    private static ApiError outOfRange(String path, String range, JsonNode value)
    {
        return ApiError.invalid("invalid_value", path, path + " must be in " + range + ", got " + value);
    }

    public static String describe(JsonNode value)
    {
        String text = value.toString();
        String shown = text.length() > 40 ? text.substring(0, 37) + "..." : text;
        return switch (value.getNodeType()) {
            case STRING -> "the string " + shown;
            case NUMBER -> "the number " + shown;
            case BOOLEAN -> shown;
            case NULL -> "null";
            case ARRAY -> "an array";
            case OBJECT -> "an object";
            default -> shown;
        };
    }
}
