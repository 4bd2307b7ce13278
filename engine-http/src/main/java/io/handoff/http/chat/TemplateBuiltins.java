package io.handoff.http.chat;

import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;

import static io.handoff.http.chat.TemplateValues.UNDEFINED;
import static io.handoff.http.chat.TemplateValues.equal;
import static io.handoff.http.chat.TemplateValues.repr;
import static io.handoff.http.chat.TemplateValues.str;
import static io.handoff.http.chat.TemplateValues.truthy;
import static io.handoff.http.chat.TemplateValues.typeName;

/** The filters, tests and Python methods ({@code str.strip}, {@code dict.items}, ...) chat templates call. */
final class TemplateBuiltins
{
    private static final Set<String> STRING_METHODS = Set.of("strip", "lstrip", "rstrip", "startswith", "endswith", "split", "upper",
            "lower", "replace", "title", "capitalize", "find", "count", "join");
    private static final Set<String> MAP_METHODS = Set.of("items", "keys", "values", "get");

    static boolean hasMethod(Object target, String name)
    {
        return (target instanceof String && STRING_METHODS.contains(name)) || (target instanceof Map<?, ?> && MAP_METHODS.contains(name));
    }

    Object method(Object self, String name, List<Object> args)
    {
        if (self instanceof Map<?, ?> map) {
            return switch (name) {
                case "items" -> map.entrySet().stream().map(e -> (Object) java.util.Arrays.asList(e.getKey(), e.getValue())).toList();
                case "keys" -> List.copyOf(map.keySet());
                case "values" -> new ArrayList<Object>(map.values());
                default -> map.containsKey(str(arg(args, 0, "get"))) ? map.get(str(args.getFirst())) : args.size() > 1 ? args.get(1) : null;
            };
        }
        String s = (String) self;
        return switch (name) {
            case "strip" -> strip(s, args, true, true);
            case "lstrip" -> strip(s, args, true, false);
            case "rstrip" -> strip(s, args, false, true);
            case "startswith" -> affix(s, arg(args, 0, name), true);
            case "endswith" -> affix(s, arg(args, 0, name), false);
            case "split" -> split(s, args.isEmpty() ? null : args.get(0), args.size() > 1 ? ((Long) args.get(1)).intValue() : -1);
            case "upper" -> s.toUpperCase(Locale.ROOT);
            case "lower" -> s.toLowerCase(Locale.ROOT);
            case "replace" -> s.replace(str(arg(args, 0, name)), str(arg(args, 1, name)));
            case "title" -> title(s);
            case "capitalize" -> s.isEmpty() ? s : s.substring(0, 1).toUpperCase(Locale.ROOT) + s.substring(1).toLowerCase(Locale.ROOT);
            case "find" -> (long) s.indexOf(str(arg(args, 0, name)));
            case "count" -> (long) count(s, str(arg(args, 0, name)));
            default -> join(s, arg(args, 0, name));
        };
    }

    Object filter(String name, Object value, List<Object> args, Map<String, Object> kwargs)
    {
        return switch (name) {
            case "trim" -> strip(str(value), args, true, true);
            case "tojson" -> TemplateValues.toJson(value, kwargs.get("indent") instanceof Long i ? i.intValue()
                    : !args.isEmpty() && args.getFirst() instanceof Long i ? i.intValue() : null);
            case "length", "count" -> (long) length(value);
            case "upper", "lower", "title", "capitalize" -> method(str(value), name, List.of());
            case "default", "d" -> {
                boolean falsy = args.size() > 1 ? truthy(args.get(1)) : truthy(kwargs.getOrDefault("boolean", false));
                yield value == UNDEFINED || (falsy && !truthy(value)) ? (args.isEmpty() ? "" : args.getFirst()) : value;
            }
            case "first" -> list(value, name).isEmpty() ? UNDEFINED : list(value, name).getFirst();
            case "last" -> list(value, name).isEmpty() ? UNDEFINED : list(value, name).getLast();
            case "join" -> join(args.isEmpty() ? "" : str(args.getFirst()), kwargs.containsKey("attribute")
                    ? attributes(list(value, name), str(kwargs.get("attribute"))) : value);
            case "string", "safe", "e", "escape" -> name.equals("string") ? str(value) : value;
            case "int" -> value instanceof Number n ? (Object) n.longValue() : parseLong(str(value));
            case "float" -> value instanceof Number n ? (Object) n.doubleValue() : Double.parseDouble(str(value).strip());
            case "list" -> list(value, name);
            case "reverse" -> value instanceof String s ? new StringBuilder(s).reverse().toString() : list(value, name).reversed();
            case "items" -> method(value instanceof Map<?, ?> ? value : Map.of(), "items", List.of());
            case "replace" -> str(value).replace(str(args.get(0)), str(args.get(1)));
            case "abs" -> value instanceof Long l ? (Object) Math.abs(l) : Math.abs(((Number) value).doubleValue());
            case "map" -> kwargs.containsKey("attribute") ? attributes(list(value, name), str(kwargs.get("attribute")))
                    : list(value, name).stream().map(v -> filter(str(args.getFirst()), v, args.subList(1, args.size()), Map.of())).toList();
            case "selectattr", "rejectattr" -> list(value, name).stream().filter(item -> {
                Object attribute = item instanceof Map<?, ?> m && m.containsKey(str(args.getFirst())) ? m.get(str(args.getFirst())) : UNDEFINED;
                boolean pass = args.size() > 1 ? test(str(args.get(1)), attribute, args.subList(2, args.size())) : truthy(attribute);
                return pass == name.equals("selectattr");
            }).toList();
            case "select", "reject" -> list(value, name).stream().filter(item -> {
                boolean pass = args.isEmpty() ? truthy(item) : test(str(args.getFirst()), item, args.subList(1, args.size()));
                return pass == name.equals("select");
            }).toList();
            case "unique" -> new ArrayList<>(new LinkedHashSet<>(list(value, name)));
            default -> throw new ChatTemplateException("chat template: the filter '" + name + "' is not supported by this renderer");
        };
    }

    boolean test(String name, Object value, List<Object> args)
    {
        return switch (name) {
            case "defined" -> value != UNDEFINED;
            case "undefined" -> value == UNDEFINED;
            case "none" -> value == null;
            case "string" -> value instanceof String;
            case "number" -> value instanceof Long || value instanceof Double;
            case "integer" -> value instanceof Long;
            case "float" -> value instanceof Double;
            case "boolean" -> value instanceof Boolean;
            case "true" -> Boolean.TRUE.equals(value);
            case "false" -> Boolean.FALSE.equals(value);
            case "mapping" -> value instanceof Map<?, ?>;
            case "iterable" -> value instanceof List<?> || value instanceof Map<?, ?> || value instanceof String;
            case "sequence" -> value instanceof List<?> || value instanceof String || value instanceof Map<?, ?>;
            case "callable" -> value instanceof TemplateFunctions.Callable || value instanceof TemplateFunctions.Method;
            case "odd" -> value instanceof Long l && l % 2 != 0;
            case "even" -> value instanceof Long l && l % 2 == 0;
            case "eq", "equalto", "==" -> equal(value, arg(args, 0, name));
            case "ne", "!=" -> !equal(value, arg(args, 0, name));
            case "in" -> arg(args, 0, name) instanceof List<?> list ? list.stream().anyMatch(x -> equal(x, value))
                    : str(args.getFirst()).contains(str(value));
            default -> throw new ChatTemplateException("chat template: the test 'is " + name + "' is not supported by this renderer");
        };
    }

    private static Object arg(List<Object> args, int index, String function)
    {
        if (index >= args.size()) {
            throw new ChatTemplateException("chat template: " + function + "() needs at least " + (index + 1) + " argument(s)");
        }
        return args.get(index);
    }

    private static String strip(String s, List<Object> args, boolean leading, boolean trailing)
    {
        String chars = args.isEmpty() || args.getFirst() == null ? null : str(args.getFirst());
        int from = 0;
        int to = s.length();
        while (leading && from < to && (chars == null ? Character.isWhitespace(s.charAt(from)) : chars.indexOf(s.charAt(from)) >= 0)) {
            from++;
        }
        while (trailing && to > from && (chars == null ? Character.isWhitespace(s.charAt(to - 1)) : chars.indexOf(s.charAt(to - 1)) >= 0)) {
            to--;
        }
        return s.substring(from, to);
    }

    private static boolean affix(String s, Object affix, boolean prefix)
    {
        if (affix instanceof List<?> options) {
            return options.stream().anyMatch(o -> affix(s, o, prefix));
        }
        return prefix ? s.startsWith(str(affix)) : s.endsWith(str(affix));
    }

    /** Python's {@code str.split}: on runs of whitespace when {@code separator} is None, else on each occurrence, keeping empty parts. */
    private static List<Object> split(String s, Object separator, int maxSplit)
    {
        List<Object> parts = new ArrayList<>();
        if (separator == null) {
            for (String part : s.strip().split("\\s+", maxSplit < 0 ? 0 : maxSplit + 1)) {
                if (!part.isEmpty()) {
                    parts.add(part);
                }
            }
            return parts;
        }
        String sep = str(separator);
        if (sep.isEmpty()) {
            throw new ChatTemplateException("chat template: split() with an empty separator");
        }
        int from = 0;
        for (int at = s.indexOf(sep); at >= 0 && (maxSplit < 0 || parts.size() < maxSplit); at = s.indexOf(sep, from)) {
            parts.add(s.substring(from, at));
            from = at + sep.length();
        }
        parts.add(s.substring(from));
        return parts;
    }

    private static String title(String s)
    {
        StringBuilder out = new StringBuilder();
        boolean start = true;
        for (char c : s.toCharArray()) {
            out.append(start ? Character.toUpperCase(c) : Character.toLowerCase(c));
            start = !Character.isLetter(c);
        }
        return out.toString();
    }

    private static int count(String s, String part)
    {
        if (part.isEmpty()) {
            return s.length() + 1;
        }
        int n = 0;
        for (int at = s.indexOf(part); at >= 0; at = s.indexOf(part, at + part.length())) {
            n++;
        }
        return n;
    }

    private String join(String separator, Object values)
    {
        List<String> parts = new ArrayList<>();
        list(values, "join").forEach(v -> parts.add(str(v)));
        return String.join(separator, parts);
    }

    private static List<Object> attributes(List<Object> items, String attribute)
    {
        return items.stream().map(item -> item instanceof Map<?, ?> m && m.containsKey(attribute) ? m.get(attribute) : UNDEFINED).toList();
    }

    private static long parseLong(String s)
    {
        try {
            return Long.parseLong(s.strip());
        }
        catch (NumberFormatException e) {
            return 0;
        }
    }

    private static int length(Object value)
    {
        return switch (value) {
            case String s -> s.codePointCount(0, s.length());
            case List<?> list -> list.size();
            case Map<?, ?> map -> map.size();
            default -> throw new ChatTemplateException("chat template: " + typeName(value) + " " + repr(value) + " has no length");
        };
    }

    private static List<Object> list(Object value, String filter)
    {
        return switch (value) {
            case List<?> list -> new ArrayList<>(list);
            case Map<?, ?> map -> new ArrayList<>(map.keySet());
            case String s -> new ArrayList<>(s.codePoints().mapToObj(Character::toString).toList());
            default -> {
                if (value == UNDEFINED) {
                    yield new ArrayList<>();
                }
                throw new ChatTemplateException("chat template: " + filter + " of " + typeName(value) + " " + repr(value));
            }
        };
    }
}
