package io.handoff.http.chat;

import io.handoff.core.json.JsonText;

import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;

/**
 * Python's semantics for the values a template sees (strings, longs, doubles, booleans, null for
 * {@code None}, lists, maps, {@link #UNDEFINED}): truthiness, {@code str()}, {@code ==}, and
 * transformers' {@code tojson} ({@code json.dumps} with {@code ensure_ascii=False}).
 */
final class TemplateValues
{
    /** Jinja's {@code Undefined}: prints as nothing, is false, iterates as empty; any attribute of it is an error. */
    static final Object UNDEFINED = new Object()
    {
        @Override
        public String toString()
        {
            return "Undefined";
        }
    };

    /** {@code namespace(...)}: the one mutable value, so a loop body can carry state out of the loop. */
    record Namespace(Map<String, Object> attributes) {}

    private TemplateValues() {}

    static boolean truthy(Object value)
    {
        return switch (value) {
            case null -> false;
            case Boolean b -> b;
            case Long l -> l != 0;
            case Double d -> d != 0;
            case String s -> !s.isEmpty();
            case Collection<?> c -> !c.isEmpty();
            case Map<?, ?> m -> !m.isEmpty();
            default -> value != UNDEFINED;
        };
    }

    /** Python's {@code str()}, which {@code {{ }}} and {@code ~} use. */
    static String str(Object value)
    {
        if (value == UNDEFINED) {
            return "";
        }
        return value instanceof String s ? s : repr(value);
    }

    static String repr(Object value)
    {
        return switch (value) {
            case null -> "None";
            case Boolean b -> b ? "True" : "False";
            case Double d -> pythonFloat(d);
            case String s -> "'" + s.replace("\\", "\\\\").replace("'", "\\'").replace("\n", "\\n") + "'";
            case List<?> list -> {
                List<String> items = new ArrayList<>();
                list.forEach(item -> items.add(repr(item)));
                yield "[" + String.join(", ", items) + "]";
            }
            case Map<?, ?> map -> {
                List<String> items = new ArrayList<>();
                map.forEach((k, v) -> items.add(repr(k) + ": " + repr(v)));
                yield "{" + String.join(", ", items) + "}";
            }
            default -> value == UNDEFINED ? "" : value.toString();
        };
    }

    private static String pythonFloat(double d)
    {
        if (d == Math.rint(d) && !Double.isInfinite(d) && Math.abs(d) < 1e16) {
            return (long) d + ".0";
        }
        return Double.toString(d);
    }

    static boolean equal(Object a, Object b)
    {
        if (a instanceof Number x && b instanceof Number y) {
            return x.doubleValue() == y.doubleValue();
        }
        if (a instanceof Boolean x && b instanceof Number y) {
            return (x ? 1 : 0) == y.doubleValue();
        }
        if (a instanceof Number && b instanceof Boolean) {
            return equal(b, a);
        }
        if (a instanceof List<?> x && b instanceof List<?> y) {
            if (x.size() != y.size()) {
                return false;
            }
            for (int i = 0; i < x.size(); i++) {
                if (!equal(x.get(i), y.get(i))) {
                    return false;
                }
            }
            return true;
        }
        return a == null ? b == null : a.equals(b);
    }

    static String typeName(Object value)
    {
        return switch (value) {
            case null -> "None";
            case String s -> "string";
            case Long l -> "integer";
            case Double d -> "float";
            case Boolean b -> "boolean";
            case List<?> l -> "list";
            case Map<?, ?> m -> "mapping";
            case Namespace n -> "namespace";
            default -> value == UNDEFINED ? "undefined" : value.getClass().getSimpleName();
        };
    }

    /** {@code json.dumps(value, ensure_ascii=False, indent=indent)}; {@code indent} null for one line. */
    /** A JSON value as templates see it: maps (in order), lists, strings, {@link Long}, {@link Double}, booleans, null. */
    static Object fromJson(com.fasterxml.jackson.databind.JsonNode node)
    {
        if (node == null || node.isNull()) {
            return null;
        }
        if (node.isObject()) {
            Map<String, Object> map = new java.util.LinkedHashMap<>();
            node.properties().forEach(e -> map.put(e.getKey(), fromJson(e.getValue())));
            return map;
        }
        if (node.isArray()) {
            List<Object> list = new ArrayList<>();
            node.forEach(item -> list.add(fromJson(item)));
            return list;
        }
        if (node.isTextual()) {
            return node.textValue();
        }
        if (node.isBoolean()) {
            return node.booleanValue();
        }
        if (node.isIntegralNumber() && node.canConvertToLong()) {
            return node.longValue();
        }
        return node.doubleValue();
    }

    static String toJson(Object value, Integer indent)
    {
        StringBuilder out = new StringBuilder();
        json(out, value, indent, 0);
        return out.toString();
    }

    private static void json(StringBuilder out, Object value, Integer indent, int depth)
    {
        switch (value) {
            case null -> out.append("null");
            case Boolean b -> out.append(b);
            case Long l -> out.append(l);
            case Double d -> out.append(Double.isNaN(d) ? "NaN" : Double.isInfinite(d) ? (d > 0 ? "Infinity" : "-Infinity") : pythonFloat(d));
            case String s -> JsonText.string(s, out);
            case List<?> list -> container(out, '[', ']', list.size(), indent, depth, i -> json(out, list.get(i), indent, depth + 1));
            case Map<?, ?> map -> {
                List<? extends Map.Entry<?, ?>> entries = List.copyOf(map.entrySet());
                container(out, '{', '}', entries.size(), indent, depth, i -> {
                    JsonText.string(String.valueOf(entries.get(i).getKey()), out);
                    out.append(": ");
                    json(out, entries.get(i).getValue(), indent, depth + 1);
                });
            }
            default -> {
                if (value == UNDEFINED) {
                    throw new ChatTemplateException("chat template: tojson of an undefined value");
                }
                throw new ChatTemplateException("chat template: tojson cannot serialise a " + typeName(value));
            }
        }
    }

    private static void container(StringBuilder out, char open, char close, int size, Integer indent, int depth,
            java.util.function.IntConsumer item)
    {
        out.append(open);
        if (size == 0) {
            out.append(close);
            return;
        }
        for (int i = 0; i < size; i++) {
            if (i > 0) {
                out.append(indent == null ? ", " : ",");
            }
            if (indent != null) {
                out.append('\n').append(" ".repeat(indent * (depth + 1)));
            }
            item.accept(i);
        }
        if (indent != null) {
            out.append('\n').append(" ".repeat(indent * depth));
        }
        out.append(close);
    }
}
