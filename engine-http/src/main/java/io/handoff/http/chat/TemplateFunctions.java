package io.handoff.http.chat;

import io.handoff.http.chat.TemplateAst.Expr;
import io.handoff.http.chat.TemplateValues.Namespace;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import static io.handoff.http.chat.TemplateValues.UNDEFINED;
import static io.handoff.http.chat.TemplateValues.equal;
import static io.handoff.http.chat.TemplateValues.repr;
import static io.handoff.http.chat.TemplateValues.str;
import static io.handoff.http.chat.TemplateValues.truthy;
import static io.handoff.http.chat.TemplateValues.typeName;

/**
 * Evaluates expressions with Python's semantics: attribute access falls back to item access and yields
 * undefined when neither exists (only an attribute <em>of</em> undefined is an error, as in Jinja),
 * negative indexes and slices, {@code +} on strings, numbers and lists, {@code in} as substring or
 * membership. Calls go to {@link Callable}s (the globals) or to Python string and dict methods.
 */
final class TemplateFunctions
{
    /** A function a template may call. */
    @FunctionalInterface
    interface Callable
    {
        Object call(List<Object> args, Map<String, Object> kwargs);
    }

    /** {@code "text".strip} before its call. */
    record Method(Object self, String name) {}

    private final TemplateBuiltins builtins = new TemplateBuiltins();

    Object eval(Expr expr, TemplateRenderer scope)
    {
        return switch (expr) {
            case TemplateAst.Literal literal -> literal.value();
            case TemplateAst.Name name -> scope.lookup(name.name());
            case TemplateAst.Attr attr -> attribute(eval(attr.target(), scope), attr.name(), attr.target());
            case TemplateAst.Item item -> item(eval(item.target(), scope), eval(item.key(), scope), item.target());
            case TemplateAst.Slice slice -> slice(eval(slice.target(), scope), index(slice.start(), scope), index(slice.stop(), scope),
                    index(slice.step(), scope));
            case TemplateAst.Call call -> call(eval(call.callee(), scope), values(call.args(), scope), kwargs(call.kwargs(), scope));
            case TemplateAst.Filter filter -> builtins.filter(filter.name(), eval(filter.value(), scope), values(filter.args(), scope),
                    kwargs(filter.kwargs(), scope));
            case TemplateAst.Test test -> test.negated() != builtins.test(test.name(), eval(test.value(), scope), values(test.args(), scope));
            case TemplateAst.Unary unary -> unary(unary.op(), eval(unary.operand(), scope));
            case TemplateAst.Binary binary -> binary(binary, scope);
            case TemplateAst.Cond cond -> truthy(eval(cond.condition(), scope)) ? eval(cond.then(), scope)
                    : cond.otherwise() == null ? UNDEFINED : eval(cond.otherwise(), scope);
            case TemplateAst.ListOf list -> values(list.items(), scope);
            case TemplateAst.DictOf dict -> {
                Map<String, Object> map = new LinkedHashMap<>();
                for (int i = 0; i < dict.keys().size(); i++) {
                    map.put(str(eval(dict.keys().get(i), scope)), eval(dict.values().get(i), scope));
                }
                yield map;
            }
        };
    }

    List<Object> iterate(Object value)
    {
        return switch (value) {
            case List<?> list -> new ArrayList<>(list);
            case Map<?, ?> map -> new ArrayList<>(map.keySet());
            case String s -> new ArrayList<>(s.codePoints().mapToObj(Character::toString).toList());
            default -> {
                if (value == UNDEFINED) {
                    yield List.of();
                }
                throw new ChatTemplateException("chat template: cannot loop over " + typeName(value) + " " + repr(value));
            }
        };
    }

    private List<Object> values(List<Expr> exprs, TemplateRenderer scope)
    {
        List<Object> values = new ArrayList<>();
        exprs.forEach(e -> values.add(eval(e, scope)));
        return values;
    }

    private Map<String, Object> kwargs(Map<String, Expr> exprs, TemplateRenderer scope)
    {
        Map<String, Object> values = new LinkedHashMap<>();
        exprs.forEach((k, e) -> values.put(k, eval(e, scope)));
        return values;
    }

    private Long index(Expr expr, TemplateRenderer scope)
    {
        if (expr == null) {
            return null;
        }
        Object value = eval(expr, scope);
        if (value == null) {
            return null;
        }
        if (!(value instanceof Long l)) {
            throw new ChatTemplateException("chat template: slice indexes must be integers, got " + repr(value));
        }
        return l;
    }

    private static Object attribute(Object target, String name, Expr source)
    {
        if (target == UNDEFINED) {
            throw new ChatTemplateException("chat template: '" + describe(source) + "' is undefined, so it has no attribute '" + name + "'");
        }
        if (target instanceof Namespace namespace) {
            return namespace.attributes().getOrDefault(name, UNDEFINED);
        }
        if (TemplateBuiltins.hasMethod(target, name)) {
            return new Method(target, name);
        }
        return target instanceof Map<?, ?> ? item(target, name, source) : UNDEFINED;
    }

    private static Object item(Object target, Object key, Expr source)
    {
        return switch (target) {
            case Map<?, ?> map -> map.containsKey(str(key)) ? map.get(str(key)) : UNDEFINED;
            case Namespace namespace -> namespace.attributes().getOrDefault(str(key), UNDEFINED);
            case List<?> list when key instanceof Long i -> {
                long at = i < 0 ? list.size() + i : i;
                yield at >= 0 && at < list.size() ? list.get((int) at) : UNDEFINED;
            }
            case String s when key instanceof Long i -> {
                long at = i < 0 ? s.length() + i : i;
                yield at >= 0 && at < s.length() ? String.valueOf(s.charAt((int) at)) : UNDEFINED;
            }
            default -> {
                if (target == UNDEFINED) {
                    throw new ChatTemplateException("chat template: '" + describe(source) + "' is undefined, so it has no item " + repr(key));
                }
                yield UNDEFINED;
            }
        };
    }

    /** Python's {@code target[start:stop:step]} for lists and strings. */
    private static Object slice(Object target, Long start, Long stop, Long step)
    {
        List<Object> items = switch (target) {
            case List<?> list -> new ArrayList<>(list);
            case String s -> new ArrayList<>(s.chars().mapToObj(c -> (Object) String.valueOf((char) c)).toList());
            default -> throw new ChatTemplateException("chat template: cannot slice " + typeName(target));
        };
        int n = items.size();
        long by = step == null ? 1 : step;
        if (by == 0) {
            throw new ChatTemplateException("chat template: slice step cannot be zero");
        }
        long from = start == null ? (by > 0 ? 0 : n - 1) : clamp(start < 0 ? start + n : start, by > 0 ? 0 : -1, by > 0 ? n : n - 1);
        long to = stop == null ? (by > 0 ? n : -1) : clamp(stop < 0 ? stop + n : stop, by > 0 ? 0 : -1, by > 0 ? n : n - 1);
        List<Object> out = new ArrayList<>();
        for (long i = from; by > 0 ? i < to : i > to; i += by) {
            out.add(items.get((int) i));
        }
        if (target instanceof String) {
            StringBuilder text = new StringBuilder();
            out.forEach(text::append);
            return text.toString();
        }
        return out;
    }

    private static long clamp(long value, long min, long max)
    {
        return Math.max(min, Math.min(max, value));
    }

    private Object call(Object callee, List<Object> args, Map<String, Object> kwargs)
    {
        return switch (callee) {
            case Callable function -> function.call(args, kwargs);
            case Method method -> builtins.method(method.self(), method.name(), args);
            default -> throw new ChatTemplateException("chat template: " + typeName(callee) + " " + repr(callee) + " is not callable");
        };
    }

    private static Object unary(String op, Object value)
    {
        return switch (op) {
            case "not" -> !truthy(value);
            case "-" -> switch (value) {
                case Long l -> -l;
                case Double d -> -d;
                default -> throw new ChatTemplateException("chat template: cannot negate " + typeName(value));
            };
            default -> value;
        };
    }

    private Object binary(TemplateAst.Binary binary, TemplateRenderer scope)
    {
        Object left = eval(binary.left(), scope);
        switch (binary.op()) {
            case "and" -> {
                return truthy(left) ? eval(binary.right(), scope) : left;
            }
            case "or" -> {
                return truthy(left) ? left : eval(binary.right(), scope);
            }
            default -> {}
        }
        Object right = eval(binary.right(), scope);
        return switch (binary.op()) {
            case "~" -> str(left) + str(right);
            case "==" -> equal(left, right);
            case "!=" -> !equal(left, right);
            case "in" -> contains(right, left);
            case "<", ">", "<=", ">=" -> compare(binary.op(), left, right);
            case "+" -> plus(left, right);
            default -> arithmetic(binary.op(), left, right);
        };
    }

    private static boolean contains(Object container, Object item)
    {
        return switch (container) {
            case String s when item instanceof String part -> s.contains(part);
            case List<?> list -> list.stream().anyMatch(x -> equal(x, item));
            case Map<?, ?> map -> map.containsKey(str(item));
            default -> {
                if (container == UNDEFINED) {
                    throw new ChatTemplateException("chat template: 'in' an undefined value");
                }
                throw new ChatTemplateException("chat template: cannot test " + repr(item) + " in " + typeName(container));
            }
        };
    }

    private static boolean compare(String op, Object left, Object right)
    {
        int order;
        if (left instanceof Number a && right instanceof Number b) {
            order = Double.compare(a.doubleValue(), b.doubleValue());
        }
        else if (left instanceof String a && right instanceof String b) {
            order = a.compareTo(b);
        }
        else {
            throw new ChatTemplateException("chat template: cannot compare " + typeName(left) + " " + op + " " + typeName(right));
        }
        return switch (op) {
            case "<" -> order < 0;
            case ">" -> order > 0;
            case "<=" -> order <= 0;
            default -> order >= 0;
        };
    }

    private static Object plus(Object left, Object right)
    {
        if (left instanceof String a && right instanceof String b) {
            return a + b;
        }
        if (left instanceof List<?> a && right instanceof List<?> b) {
            List<Object> joined = new ArrayList<>(a);
            joined.addAll(b);
            return joined;
        }
        return arithmetic("+", left, right);
    }

    private static Object arithmetic(String op, Object left, Object right)
    {
        if (!(left instanceof Number a) || !(right instanceof Number b) || left instanceof Boolean || right instanceof Boolean) {
            throw new ChatTemplateException("chat template: cannot apply '" + op + "' to " + typeName(left) + " " + repr(left) + " and "
                    + typeName(right) + " " + repr(right));
        }
        if (a instanceof Long x && b instanceof Long y && !op.equals("/")) {
            return switch (op) {
                case "+" -> x + y;
                case "-" -> x - y;
                case "*" -> x * y;
                case "//" -> Math.floorDiv(x, nonZero(y));
                case "%" -> Math.floorMod(x, nonZero(y));
                default -> (long) Math.pow(x, y);
            };
        }
        double x = a.doubleValue();
        double y = b.doubleValue();
        return switch (op) {
            case "+" -> x + y;
            case "-" -> x - y;
            case "*" -> x * y;
            case "/" -> x / nonZero(y);
            case "//" -> Math.floor(x / nonZero(y));
            case "%" -> x - Math.floor(x / nonZero(y)) * y;
            default -> Math.pow(x, y);
        };
    }

    private static long nonZero(long y)
    {
        if (y == 0) {
            throw new ChatTemplateException("chat template: division by zero");
        }
        return y;
    }

    private static double nonZero(double y)
    {
        if (y == 0) {
            throw new ChatTemplateException("chat template: division by zero");
        }
        return y;
    }

    private static String describe(Expr expr)
    {
        return switch (expr) {
            case TemplateAst.Name name -> name.name();
            case TemplateAst.Attr attr -> describe(attr.target()) + "." + attr.name();
            case TemplateAst.Item item -> describe(item.target()) + "[" + (item.key() instanceof TemplateAst.Literal l ? repr(l.value()) : "…") + "]";
            default -> "the value";
        };
    }
}
