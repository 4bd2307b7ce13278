package io.handoff.core.grammar;

import io.handoff.core.json.JsonText;

import java.math.BigDecimal;
import java.util.ArrayList;
import java.util.IdentityHashMap;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

import static io.handoff.core.grammar.GrammarExpr.literal;
import static io.handoff.core.grammar.GrammarExpr.optional;
import static io.handoff.core.grammar.GrammarExpr.seq;

/**
 * JSON Schema as a byte grammar whose every sentence is JSON that validates: the types, {@code enum}, {@code const},
 * {@code properties} / {@code required} / {@code additionalProperties}, {@code items} (and draft 4 tuples),
 * {@code minItems} / {@code maxItems}, {@code minLength} / {@code maxLength}, {@code pattern}, integer and number
 * {@code minimum} / {@code maximum} (exclusive too), {@code anyOf}, {@code oneOf} over distinguishable branches,
 * {@code allOf} that merges, {@code $ref} within the document (recursion included) and a few {@code format}s.
 * Where a schema allows more than one spelling the grammar picks a subset that is still valid: properties in schema
 * order, no extra properties beside declared ones, numbers of at most 15 digits, at most {@value #MAX_WHITESPACE}
 * whitespace characters between tokens (so that a generation can end). A keyword it cannot enforce is refused with
 * its path ({@link GrammarException}), never ignored.
 *
 * <p>The schema is the tree {@link io.handoff.core.json.Json} parses: maps, lists, strings, {@link Long},
 * {@link BigDecimal}, {@link Boolean} and null.
 */
public final class JsonSchemaGrammar
{
    public static final int MAX_WHITESPACE = 12;
    private static final Set<String> UNSUPPORTED = Set.of("not", "multipleOf", "patternProperties", "dependencies", "dependentRequired",
            "dependentSchemas", "if", "then", "else", "propertyNames", "contains", "minContains", "maxContains", "unevaluatedProperties",
            "unevaluatedItems", "$dynamicRef", "$recursiveRef");
    static final Set<String> ANNOTATIONS = Set.of("title", "description", "default", "examples", "$schema", "$id", "id", "$comment",
            "readOnly", "writeOnly", "deprecated", "$defs", "definitions", "$anchor", "strict", "name");
    private static final Map<String, String> FORMATS = Map.of(
            "date", "[0-9]{4}-(0[1-9]|1[0-2])-(0[1-9]|1[0-9]|2[0-8])",
            "time", "([01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9](\\.[0-9]{1,3})?(Z|[+-]([01][0-9]|2[0-3]):[0-5][0-9])",
            "date-time", "[0-9]{4}-(0[1-9]|1[0-2])-(0[1-9]|1[0-9]|2[0-8])T([01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9](\\.[0-9]{1,3})?"
                    + "(Z|[+-]([01][0-9]|2[0-3]):[0-5][0-9])",
            "uuid", "[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}",
            "email", "[a-z0-9]([a-z0-9._-]{0,30}[a-z0-9])?@[a-z0-9]([a-z0-9-]{0,30}[a-z0-9])?\\.[a-z]{2,6}",
            "ipv4", "((25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])\\.){3}(25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])");

    private Object document;
    private final Map<String, GrammarExpr> rules = new LinkedHashMap<>();
    private final Map<Object, String> refRules = new IdentityHashMap<>();
    private int next;

    /** @param document the schema that {@code $ref}s of the form {@code #/...} point into */
    public JsonSchemaGrammar(Object document)
    {
        this.document = document;
        rules.put("ws", new GrammarExpr.Repeat(new GrammarExpr.Alt(List.of(literal(" "), literal("\n"), literal("\t"))), 0, MAX_WHITESPACE));
        CodePoints plain = CodePoints.ALL.minus(CodePoints.single('"')).minus(CodePoints.single('\\')).minus(CodePoints.of(0, 0x1F));
        GrammarExpr hex = new GrammarExpr.Alt(List.of(new GrammarExpr.ByteRange('0', '9'), new GrammarExpr.ByteRange('a', 'f'),
                new GrammarExpr.ByteRange('A', 'F')));
        // \\u escapes of every scalar value but the surrogates, which alone are not text
        GrammarExpr notSurrogate = GrammarExpr.alt(List.of(seq(GrammarExpr.alt(List.of(new GrammarExpr.ByteRange('0', '9'),
                        new GrammarExpr.ByteRange('a', 'c'), new GrammarExpr.ByteRange('A', 'C'), new GrammarExpr.ByteRange('e', 'f'),
                        new GrammarExpr.ByteRange('E', 'F'))), hex, hex, hex),
                seq(GrammarExpr.alt(List.of(literal("d"), literal("D"))), new GrammarExpr.ByteRange('0', '7'), hex, hex)));
        rules.put("json-char", GrammarExpr.alt(List.of(plain.utf8(), seq(literal("\\"), GrammarExpr.alt(List.of(
                GrammarExpr.alt(List.of(literal("\""), literal("\\"), literal("/"), literal("b"), literal("f"), literal("n"), literal("r"),
                        literal("t"))), seq(literal("u"), notSurrogate)))))));
        rules.put("json-string", seq(literal("\""), new GrammarExpr.Repeat(ref("json-char"), 0, GrammarExpr.Repeat.UNBOUNDED), literal("\"")));
        rules.put("json-number", JsonNumbers.any());
        rules.put("json-value", GrammarExpr.alt(List.of(ref("json-object"), ref("json-array"), ref("json-string"), ref("json-number"),
                literal("true"), literal("false"), literal("null"))));
        GrammarExpr member = seq(ref("json-string"), ref("ws"), literal(":"), ref("ws"), ref("json-value"));
        rules.put("json-object", seq(literal("{"), ref("ws"), optional(seq(member, new GrammarExpr.Repeat(seq(ref("ws"), literal(","), ref("ws"),
                member), 0, GrammarExpr.Repeat.UNBOUNDED))), ref("ws"), literal("}")));
        rules.put("json-array", seq(literal("["), ref("ws"), optional(seq(ref("json-value"), new GrammarExpr.Repeat(seq(ref("ws"), literal(","),
                ref("ws"), ref("json-value")), 0, GrammarExpr.Repeat.UNBOUNDED))), ref("ws"), literal("]")));
    }

    /** The grammar of JSON text valid against {@code schema}. */
    public static Grammar compile(Object schema, String source)
    {
        JsonSchemaGrammar compiler = new JsonSchemaGrammar(schema);
        return compiler.grammar(compiler.schema(schema, "#"), source);
    }

    /** Any JSON object ({@code response_format: json_object}). */
    public static Grammar anyObject()
    {
        JsonSchemaGrammar compiler = new JsonSchemaGrammar(Map.of());
        return compiler.grammar(ref("json-object"), "json_object");
    }

    /** A grammar whose root is {@code root}, with the rules the schemas compiled so far need. */
    public Grammar grammar(GrammarExpr root, String source)
    {
        Map<String, GrammarExpr> all = new LinkedHashMap<>();
        all.put("root", root);
        all.putAll(rules);
        return new Grammar("root", all, source);
    }

    /** The expression of JSON valid against {@code schema}, whose {@code $ref}s point into it (not into this grammar's document). */
    public GrammarExpr document(Object schema, String path)
    {
        Object outer = document;
        document = schema;
        try {
            return schema(schema, path);
        }
        finally {
            document = outer;
        }
    }

    /** Adds rules of the caller's (their names must not start with {@code json-}, {@code object-}, {@code ref-} or be {@code ws}). */
    public void addRules(Map<String, GrammarExpr> extra)
    {
        extra.forEach((name, expr) -> {
            if (rules.containsKey(name)) {
                throw new IllegalArgumentException("rule '" + name + "' is already defined");
            }
            rules.put(name, expr);
        });
    }

    /** Whitespace between JSON tokens. */
    public GrammarExpr whitespace()
    {
        return ref("ws");
    }

    /** The expression of JSON values valid against {@code schema}; {@code path} names it in errors. */
    public GrammarExpr schema(Object schema, String path)
    {
        if (schema instanceof Boolean b) {
            if (!b) {
                throw new GrammarException(path + ": the schema false matches nothing");
            }
            return ref("json-value");
        }
        if (!(schema instanceof Map<?, ?> raw)) {
            throw new GrammarException(path + ": a schema must be an object or a boolean");
        }
        @SuppressWarnings("unchecked")
        Map<String, Object> s = (Map<String, Object>) raw;
        for (String key : s.keySet()) {
            if (UNSUPPORTED.contains(key)) {
                throw new GrammarException(path + ": the keyword '" + key + "' cannot be enforced by this engine; remove it");
            }
        }
        if (Boolean.TRUE.equals(s.get("uniqueItems"))) {
            throw new GrammarException(path + ": uniqueItems: true cannot be enforced by this engine; remove it");
        }
        if (s.containsKey("minProperties") && JsonNumbers.keyword(s, "minProperties", path).intValue() > (s.get("required") instanceof List<?> r ? r.size() : 0)) {
            throw new GrammarException(path + ": minProperties cannot be enforced by this engine; list that many properties in 'required'");
        }
        if (s.get("$ref") instanceof String pointer) {
            return ref(refRule(pointer, path));
        }
        if (s.containsKey("const")) {
            return literal(JsonText.write(s.get("const")));
        }
        if (s.containsKey("enum")) {
            if (!(s.get("enum") instanceof List<?> values) || values.isEmpty()) {
                throw new GrammarException(path + ".enum: must be a non-empty array");
            }
            Set<String> types = types(s, path);
            List<GrammarExpr> options = new ArrayList<>();
            for (Object value : new LinkedHashSet<>(values)) {
                if (types.contains(jsonType(value)) || jsonType(value).equals("integer") && types.contains("number")) {
                    options.add(literal(JsonText.write(value)));
                }
            }
            if (options.isEmpty()) {
                throw new GrammarException(path + ".enum: no value has the schema's type");
            }
            return GrammarExpr.alt(options);
        }
        if (s.containsKey("allOf")) {
            return schema(SchemaMerge.allOf(s, path, this::resolve), path);
        }
        if (s.containsKey("anyOf") || s.containsKey("oneOf")) {
            return union(s, path);
        }
        List<GrammarExpr> options = new ArrayList<>();
        for (String type : types(s, path)) {
            options.add(typed(s, type, path));
        }
        return GrammarExpr.alt(options);
    }

    private GrammarExpr union(Map<String, Object> s, String path)
    {
        String keyword = s.containsKey("anyOf") ? "anyOf" : "oneOf";
        if (s.containsKey("anyOf") && s.containsKey("oneOf")) {
            throw new GrammarException(path + ": anyOf together with oneOf cannot be enforced by this engine; write one of them");
        }
        if (!(s.get(keyword) instanceof List<?> listed) || listed.isEmpty()) {
            throw new GrammarException(path + "." + keyword + ": must be a non-empty array of schemas");
        }
        // keywords beside the union hold in every branch: merged into each
        Map<String, Object> beside = new LinkedHashMap<>(s);
        beside.remove(keyword);
        beside.keySet().removeAll(ANNOTATIONS);
        List<Object> branches = new ArrayList<>();
        for (int i = 0; i < listed.size(); i++) {
            branches.add(beside.isEmpty() ? listed.get(i) : SchemaMerge.merge(beside, listed.get(i), path + "." + keyword + "[" + i + "]", this::resolve));
        }
        if (keyword.equals("oneOf")) {
            // exactly one branch must hold: only branches that no value can satisfy twice (different types, or distinct literals)
            List<Set<String>> seen = new ArrayList<>();
            for (int i = 0; i < branches.size(); i++) {
                Set<String> kinds = kinds(branches.get(i), path + ".oneOf[" + i + "]");
                for (int j = 0; j < seen.size(); j++) {
                    for (String kind : kinds) {
                        if (seen.get(j).contains(kind)) {
                            throw new GrammarException(path + ".oneOf: branches " + j + " and " + i + " can both match a "
                                    + kind.replace("=", " ") + ", and that exactly one holds cannot be enforced by this engine; oneOf is "
                                    + "taken over branches of different types or values (use anyOf if more than one may match)");
                        }
                    }
                }
                seen.add(kinds);
            }
        }
        List<GrammarExpr> options = new ArrayList<>();
        for (int i = 0; i < branches.size(); i++) {
            options.add(schema(branches.get(i), path + "." + keyword + "[" + i + "]"));
        }
        return GrammarExpr.alt(options);
    }

    // What values a branch can match, coarsely: a type name, or type=literal for const and enum branches.
    private Set<String> kinds(Object branch, String path)
    {
        if (branch instanceof Map<?, ?> map) {
            @SuppressWarnings("unchecked")
            Map<String, Object> s = (Map<String, Object>) map;
            if (s.get("$ref") instanceof String pointer) {
                return kinds(resolve(pointer, path), path);
            }
            Set<String> kinds = new LinkedHashSet<>();
            if (s.containsKey("const")) {
                kinds.add("value=" + JsonText.write(s.get("const")));
                return kinds;
            }
            if (s.get("enum") instanceof List<?> values) {
                values.forEach(v -> kinds.add("value=" + JsonText.write(v)));
                return kinds;
            }
            if (!s.containsKey("anyOf") && !s.containsKey("oneOf") && !s.containsKey("allOf")) {
                types(s, path).forEach(t -> kinds.add(t.equals("integer") ? "number" : t));
                return kinds;
            }
        }
        return Set.of("string", "number", "boolean", "null", "object", "array");
    }

    private Set<String> types(Map<String, Object> s, String path)
    {
        Object type = s.get("type");
        Set<String> types = new LinkedHashSet<>();
        if (type instanceof String t) {
            types.add(t);
        }
        else if (type instanceof List<?> list) {
            for (Object t : list) {
                if (!(t instanceof String name)) {
                    throw new GrammarException(path + ".type: must hold type names");
                }
                types.add(name);
            }
        }
        else if (type != null) {
            throw new GrammarException(path + ".type: must be a type name or an array of them");
        }
        else {
            // no type: a value of any type validates, so generating only the types the keywords describe stays valid
            if (has(s, "properties", "required", "additionalProperties", "minProperties")) {
                types.add("object");
            }
            if (has(s, "items", "prefixItems", "minItems", "maxItems", "additionalItems")) {
                types.add("array");
            }
            if (has(s, "minLength", "maxLength", "pattern", "format")) {
                types.add("string");
            }
            if (has(s, "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum")) {
                types.add("number");
            }
            if (types.isEmpty()) {
                types.addAll(List.of("object", "array", "string", "number", "boolean", "null"));
            }
        }
        for (String t : types) {
            if (!Set.of("object", "array", "string", "number", "integer", "boolean", "null").contains(t)) {
                throw new GrammarException(path + ".type: unknown type '" + t + "'");
            }
        }
        if (types.contains("number")) {
            types.remove("integer");
        }
        return types;
    }

    private static boolean has(Map<String, Object> s, String... keys)
    {
        for (String key : keys) {
            if (s.containsKey(key)) {
                return true;
            }
        }
        return false;
    }

    private GrammarExpr typed(Map<String, Object> s, String type, String path)
    {
        return switch (type) {
            case "null" -> literal("null");
            case "boolean" -> GrammarExpr.alt(List.of(literal("true"), literal("false")));
            case "integer" -> JsonNumbers.integer(s, path);
            case "number" -> JsonNumbers.number(s, path, ref("json-number"));
            case "string" -> string(s, path);
            case "array" -> array(s, path);
            case "object" -> object(s, path);
            default -> throw new IllegalStateException(type);
        };
    }

    private GrammarExpr string(Map<String, Object> s, String path)
    {
        int min = s.containsKey("minLength") ? count(s, "minLength", path) : 0;
        int max = s.containsKey("maxLength") ? count(s, "maxLength", path) : GrammarExpr.Repeat.UNBOUNDED;
        if (max != GrammarExpr.Repeat.UNBOUNDED && max < min) {
            throw new GrammarException(path + ": maxLength " + max + " is below minLength " + min);
        }
        String pattern = null;
        if (s.containsKey("format")) {
            if (!(s.get("format") instanceof String format) || !FORMATS.containsKey(format)) {
                throw new GrammarException(path + ".format: '" + s.get("format") + "' cannot be enforced by this engine; the formats it "
                        + "takes are " + new java.util.TreeSet<>(FORMATS.keySet()));
            }
            pattern = "^" + FORMATS.get(format) + "$";
        }
        if (s.containsKey("pattern")) {
            if (pattern != null) {
                throw new GrammarException(path + ": pattern together with format is not supported");
            }
            if (!(s.get("pattern") instanceof String p)) {
                throw new GrammarException(path + ".pattern: must be a string");
            }
            pattern = p;
        }
        if (pattern != null) {
            if (s.containsKey("minLength") || s.containsKey("maxLength")) {
                throw new GrammarException(path + ": pattern (or format) together with minLength/maxLength cannot be enforced; "
                        + "put the length into the pattern");
            }
            RegexGrammar.Parsed parsed;
            try {
                parsed = RegexGrammar.parse(pattern, JsonSchemaGrammar::jsonChars);
            }
            catch (GrammarException e) {
                throw new GrammarException(path + ".pattern: " + e.getMessage());
            }
            // a schema's pattern matches anywhere in the string unless anchored
            GrammarExpr any = new GrammarExpr.Repeat(ref("json-char"), 0, GrammarExpr.Repeat.UNBOUNDED);
            return seq(literal("\""), parsed.anchoredStart() ? GrammarExpr.EMPTY : any, parsed.expr(),
                    parsed.anchoredEnd() ? GrammarExpr.EMPTY : any, literal("\""));
        }
        if (min > RegexGrammar.MAX_COUNT || max > RegexGrammar.MAX_COUNT) {
            throw new GrammarException(path + ": minLength/maxLength over " + RegexGrammar.MAX_COUNT + " cannot be enforced by this engine");
        }
        return seq(literal("\""), new GrammarExpr.Repeat(ref("json-char"), min, max), literal("\""));
    }

    /** The JSON string spellings of {@code chars}: as themselves, or escaped where JSON requires it. */
    static GrammarExpr jsonChars(CodePoints chars)
    {
        CodePoints special = CodePoints.of(0, 0x1F).union(CodePoints.single('"')).union(CodePoints.single('\\'));
        List<GrammarExpr> options = new ArrayList<>();
        CodePoints plain = chars.minus(special);
        if (!plain.isEmpty()) {
            options.add(plain.utf8());
        }
        for (int c = 0; c <= '\\'; c++) {
            if (special.contains(c) && chars.contains(c)) {
                options.add(literal(JsonText.write(String.valueOf((char) c)).replaceAll("^\"|\"$", "")));
            }
        }
        return GrammarExpr.alt(options);
    }

    private GrammarExpr array(Map<String, Object> s, String path)
    {
        int min = s.containsKey("minItems") ? count(s, "minItems", path) : 0;
        int max = s.containsKey("maxItems") ? count(s, "maxItems", path) : GrammarExpr.Repeat.UNBOUNDED;
        if (max != GrammarExpr.Repeat.UNBOUNDED && max < min) {
            throw new GrammarException(path + ": maxItems " + max + " is below minItems " + min);
        }
        if (min > RegexGrammar.MAX_COUNT || max > RegexGrammar.MAX_COUNT) {
            throw new GrammarException(path + ": minItems/maxItems over " + RegexGrammar.MAX_COUNT + " cannot be enforced by this engine");
        }
        GrammarExpr separator = seq(ref("ws"), literal(","), ref("ws"));
        List<GrammarExpr> positional = new ArrayList<>();
        Object items = s.get("items");
        Object prefix = s.get("prefixItems");
        Object rest = items;
        if (items instanceof List<?> tuple) {
            prefix = tuple;
            rest = s.containsKey("additionalItems") ? s.get("additionalItems") : Boolean.TRUE;
        }
        if (prefix instanceof List<?> tuple) {
            for (int i = 0; i < tuple.size(); i++) {
                positional.add(schema(tuple.get(i), path + ".items[" + i + "]"));
            }
        }
        GrammarExpr item = rest == null ? ref("json-value") : Boolean.FALSE.equals(rest) ? null : schema(rest, path + ".items");
        // the array's items: the positional ones in order (an array may stop after any of them), then more of `item`
        List<GrammarExpr> ways = new ArrayList<>();
        int fixed = positional.size();
        for (int count = 0; count <= fixed; count++) {
            List<GrammarExpr> parts = new ArrayList<>();
            for (int i = 0; i < count; i++) {
                if (i > 0) {
                    parts.add(separator);
                }
                parts.add(positional.get(i));
            }
            boolean withinMax = max == GrammarExpr.Repeat.UNBOUNDED || count <= max;
            if (count < fixed || item == null) {
                if (count >= min && withinMax) {
                    ways.add(new GrammarExpr.Seq(parts));
                }
                continue;
            }
            if (!withinMax) {
                continue;
            }
            int moreMin = Math.max(0, min - count);
            int moreMax = max == GrammarExpr.Repeat.UNBOUNDED ? max : max - count;
            if (moreMax == 0) {
                ways.add(new GrammarExpr.Seq(parts));
                continue;
            }
            GrammarExpr more;
            if (count == 0) {
                more = seq(item, new GrammarExpr.Repeat(seq(separator, item), Math.max(0, moreMin - 1),
                        moreMax == GrammarExpr.Repeat.UNBOUNDED ? moreMax : moreMax - 1));
                if (moreMin == 0) {
                    more = optional(more);
                }
            }
            else {
                more = new GrammarExpr.Repeat(seq(separator, item), moreMin, moreMax);
            }
            parts.add(more);
            ways.add(new GrammarExpr.Seq(parts));
        }
        if (ways.isEmpty()) {
            throw new GrammarException(path + ": no array satisfies its items and minItems/maxItems");
        }
        return seq(literal("["), ref("ws"), GrammarExpr.alt(ways), ref("ws"), literal("]"));
    }

    private GrammarExpr object(Map<String, Object> s, String path)
    {
        Map<String, Object> properties = new LinkedHashMap<>();
        if (s.get("properties") instanceof Map<?, ?> declared) {
            declared.forEach((k, v) -> properties.put((String) k, v));
        }
        else if (s.containsKey("properties")) {
            throw new GrammarException(path + ".properties: must be an object");
        }
        Set<String> required = new LinkedHashSet<>();
        if (s.get("required") instanceof List<?> names) {
            names.forEach(n -> required.add(String.valueOf(n)));
        }
        Object additional = s.getOrDefault("additionalProperties", Boolean.TRUE);
        for (String name : required) {
            if (!properties.containsKey(name)) {
                if (Boolean.FALSE.equals(additional)) {
                    throw new GrammarException(path + ": '" + name + "' is required but additionalProperties is false and it is not declared");
                }
                properties.put(name, additional);
            }
        }
        List<String> names = new ArrayList<>(properties.keySet());
        List<GrammarExpr> members = new ArrayList<>();
        for (String name : names) {
            members.add(seq(literal(JsonText.write(name)), ref("ws"), literal(":"), ref("ws"),
                    schema(properties.get(name), path + ".properties." + name)));
        }
        boolean extra = properties.isEmpty() && !Boolean.FALSE.equals(additional);
        int maxProperties = s.containsKey("maxProperties") ? count(s, "maxProperties", path) : GrammarExpr.Repeat.UNBOUNDED;
        if (maxProperties != GrammarExpr.Repeat.UNBOUNDED && names.size() > maxProperties) {
            throw new GrammarException(path + ": maxProperties " + maxProperties + " below the " + names.size() + " declared properties cannot be "
                    + "enforced by this engine; declare at most that many");
        }
        if (maxProperties == 0) {
            extra = false;
        }
        GrammarExpr extraMember = extra ? seq(ref("json-string"), ref("ws"), literal(":"), ref("ws"),
                schema(additional, path + ".additionalProperties")) : null;
        GrammarExpr separator = seq(ref("ws"), literal(","), ref("ws"));
        // tail(i): properties i.. after one was written (each starts with a comma); head(i): before any was written
        String id = "object-" + next++;
        for (int i = names.size(); i >= 0; i--) {
            GrammarExpr tail;
            GrammarExpr head;
            if (i == names.size()) {
                // (extra members come only without declared ones; maxProperties bounds them, duplicate names only count once)
                tail = extra ? new GrammarExpr.Repeat(seq(separator, extraMember), 0, maxProperties == GrammarExpr.Repeat.UNBOUNDED
                        ? GrammarExpr.Repeat.UNBOUNDED : maxProperties - 1) : GrammarExpr.EMPTY;
                head = extra ? optional(seq(extraMember, ref(id + "-tail-" + i))) : GrammarExpr.EMPTY;
            }
            else {
                boolean must = required.contains(names.get(i));
                GrammarExpr present = seq(separator, members.get(i), ref(id + "-tail-" + (i + 1)));
                tail = must ? present : GrammarExpr.alt(List.of(present, ref(id + "-tail-" + (i + 1))));
                GrammarExpr first = seq(members.get(i), ref(id + "-tail-" + (i + 1)));
                head = must ? first : GrammarExpr.alt(List.of(first, ref(id + "-head-" + (i + 1))));
            }
            rules.put(id + "-tail-" + i, tail);
            rules.put(id + "-head-" + i, head);
        }
        return seq(literal("{"), ref("ws"), ref(id + "-head-0"), ref("ws"), literal("}"));
    }

    private String refRule(String pointer, String path)
    {
        Object target = resolve(pointer, path);
        String known = refRules.get(target);
        if (known != null) {
            return known;
        }
        String name = "ref-" + next++;
        refRules.put(target, name);
        rules.put(name, GrammarExpr.EMPTY); // placeholder while the target compiles (it may refer to itself)
        rules.put(name, schema(target, pointer));
        return name;
    }

    private Object resolve(String pointer, String path)
    {
        if (!pointer.startsWith("#")) {
            throw new GrammarException(path + ".$ref: '" + pointer + "' is outside this schema; only references within it (#/...) are supported");
        }
        Object at = document;
        String rest = pointer.substring(1);
        if (rest.isEmpty()) {
            return at;
        }
        if (!rest.startsWith("/")) {
            throw new GrammarException(path + ".$ref: '" + pointer + "' is not a JSON pointer (#/...)");
        }
        for (String raw : rest.substring(1).split("/", -1)) {
            String token = java.net.URLDecoder.decode(raw.replace("+", "%2B"), java.nio.charset.StandardCharsets.UTF_8)
                    .replace("~1", "/").replace("~0", "~");
            if (at instanceof Map<?, ?> map && map.containsKey(token)) {
                at = map.get(token);
            }
            else if (at instanceof List<?> list && token.matches("[0-9]+") && Integer.parseInt(token) < list.size()) {
                at = list.get(Integer.parseInt(token));
            }
            else {
                throw new GrammarException(path + ".$ref: '" + pointer + "' points to nothing in this schema");
            }
        }
        return at;
    }

    private static int count(Map<String, Object> s, String key, String path)
    {
        BigDecimal value = JsonNumbers.keyword(s, key, path);
        if (value.signum() < 0 || value.stripTrailingZeros().scale() > 0 || value.compareTo(BigDecimal.valueOf(Integer.MAX_VALUE)) > 0) {
            throw new GrammarException(path + "." + key + ": must be a non-negative integer");
        }
        return value.intValue();
    }

    /** The JSON Schema type of a value ({@code integer} for integral numbers). */
    private static String jsonType(Object value)
    {
        return switch (value) {
            case null -> "null";
            case String ignored -> "string";
            case Boolean ignored -> "boolean";
            case Long ignored -> "integer";
            case BigDecimal d -> d.stripTrailingZeros().scale() <= 0 ? "integer" : "number";
            case Map<?, ?> ignored -> "object";
            case List<?> ignored -> "array";
            default -> throw new IllegalArgumentException("not a JSON value: " + value.getClass().getSimpleName());
        };
    }

    private static GrammarExpr ref(String name)
    {
        return new GrammarExpr.Ref(name);
    }
}
