package io.handoff.core.grammar;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.BiFunction;

/**
 * Schemas that must hold together, written as one where they can be: {@code allOf} branches, and the keywords beside
 * an {@code anyOf} or {@code oneOf} merged into each branch. What cannot be merged is refused, naming where.
 */
final class SchemaMerge
{
    private SchemaMerge() {}

    /** {@code s} with its {@code allOf} branches merged into it. */
    static Map<String, Object> allOf(Map<String, Object> s, String path, BiFunction<String, String, Object> resolve)
    {
        if (!(s.get("allOf") instanceof List<?> branches) || branches.isEmpty()) {
            throw new GrammarException(path + ".allOf: must be a non-empty array of schemas");
        }
        Map<String, Object> merged = new LinkedHashMap<>(s);
        merged.remove("allOf");
        for (int i = 0; i < branches.size(); i++) {
            merged = merge(merged, branches.get(i), path + ".allOf[" + i + "]", resolve);
        }
        return merged;
    }

    /**
     * One schema that holds exactly where both hold, when the two can be written as one: their keywords side by side,
     * {@code properties} and {@code required} joined, and any other keyword in both only with the same value.
     */
    static Map<String, Object> merge(Map<String, Object> base, Object other, String path, BiFunction<String, String, Object> resolve)
    {
        if (other instanceof Map<?, ?> map && map.get("$ref") instanceof String pointer && map.size() == 1) {
            other = resolve.apply(pointer, path);
        }
        if (!(other instanceof Map<?, ?> map)) {
            throw new GrammarException(path + ": must be an object schema to be merged with the keywords beside it");
        }
        Map<String, Object> merged = new LinkedHashMap<>(base);
        for (Map.Entry<?, ?> entry : map.entrySet()) {
            String key = (String) entry.getKey();
            Object value = entry.getValue();
            if (JsonSchemaGrammar.ANNOTATIONS.contains(key) || !merged.containsKey(key) || merged.get(key).equals(value)) {
                if (!JsonSchemaGrammar.ANNOTATIONS.contains(key)) {
                    merged.put(key, value);
                }
                continue;
            }
            if (key.equals("properties") && merged.get(key) instanceof Map<?, ?> mine && value instanceof Map<?, ?> theirs) {
                Map<Object, Object> joined = new LinkedHashMap<>(mine);
                for (Map.Entry<?, ?> property : theirs.entrySet()) {
                    Object known = joined.putIfAbsent(property.getKey(), property.getValue());
                    if (known != null && !known.equals(property.getValue())) {
                        throw new GrammarException(path + ": property '" + property.getKey() + "' has two different schemas to hold at once, "
                                + "which cannot be enforced by this engine; write it once");
                    }
                }
                merged.put(key, joined);
            }
            else if (key.equals("required") && merged.get(key) instanceof List<?> mine && value instanceof List<?> theirs) {
                Set<Object> joined = new LinkedHashSet<>(mine);
                joined.addAll(theirs);
                merged.put(key, new ArrayList<>(joined));
            }
            else {
                throw new GrammarException(path + ": '" + key + "' appears twice with different values to hold at once, which cannot be "
                        + "enforced by this engine; write one schema");
            }
        }
        return merged;
    }
}
