package io.handoff.http.chat;

import io.handoff.http.chat.TemplateAst.Expr;
import io.handoff.http.chat.TemplateAst.Node;
import io.handoff.http.chat.TemplateValues.Namespace;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import static io.handoff.http.chat.TemplateValues.UNDEFINED;
import static io.handoff.http.chat.TemplateValues.str;
import static io.handoff.http.chat.TemplateValues.truthy;

/**
 * Renders parsed template statements. Scoping follows Jinja: a {@code for} body has a scope of its own
 * per iteration (a {@code set} there does not leak out, which is why templates use {@code namespace()}),
 * an {@code if} body does not. Expressions are evaluated by {@link TemplateFunctions}.
 */
final class TemplateRenderer
{
    /** Thrown through the statements of a loop body by {@code break} and {@code continue}. */
    private static final class LoopControl
            extends RuntimeException
    {
        final boolean isBreak;

        LoopControl(boolean isBreak)
        {
            super(null, null, false, false);
            this.isBreak = isBreak;
        }
    }

    private final Deque<Map<String, Object>> scopes = new ArrayDeque<>();
    private final TemplateFunctions functions;

    TemplateRenderer(Map<String, Object> globals, TemplateFunctions functions)
    {
        scopes.push(new HashMap<>(globals));
        this.functions = functions;
    }

    String render(List<Node> nodes)
    {
        StringBuilder out = new StringBuilder();
        try {
            run(nodes, out);
        }
        catch (LoopControl e) {
            throw new ChatTemplateException("chat template: " + (e.isBreak ? "break" : "continue") + " outside a for loop");
        }
        return out.toString();
    }

    Object lookup(String name)
    {
        for (Map<String, Object> scope : scopes) {
            if (scope.containsKey(name)) {
                return scope.get(name);
            }
        }
        return UNDEFINED;
    }

    private void run(List<Node> nodes, StringBuilder out)
    {
        for (Node node : nodes) {
            switch (node) {
                case TemplateAst.Text text -> out.append(text.text());
                case TemplateAst.Output output -> out.append(str(eval(output.value())));
                case TemplateAst.If branches -> runIf(branches, out);
                case TemplateAst.For loop -> runFor(loop, out);
                case TemplateAst.Set set -> assign(set);
                case TemplateAst.SetBlock block -> {
                    StringBuilder captured = new StringBuilder();
                    run(block.body(), captured);
                    scopes.peek().put(block.name(), captured.toString());
                }
                case TemplateAst.Break ignored -> throw new LoopControl(true);
                case TemplateAst.Continue ignored -> throw new LoopControl(false);
            }
        }
    }

    private void runIf(TemplateAst.If node, StringBuilder out)
    {
        for (TemplateAst.Branch branch : node.branches()) {
            if (truthy(eval(branch.condition()))) {
                run(branch.body(), out);
                return;
            }
        }
        run(node.otherwise(), out);
    }

    private void assign(TemplateAst.Set set)
    {
        Object value = eval(set.value());
        if (set.attribute() == null) {
            scopes.peek().put(set.name(), value);
            return;
        }
        if (!(lookup(set.name()) instanceof Namespace namespace)) {
            throw new ChatTemplateException("chat template: cannot set '" + set.name() + "." + set.attribute() + "': '" + set.name()
                    + "' is not a namespace()");
        }
        namespace.attributes().put(set.attribute(), value);
    }

    private void runFor(TemplateAst.For loop, StringBuilder out)
    {
        List<Object> items = new ArrayList<>();
        for (Object item : functions.iterate(eval(loop.iterable()))) {
            if (loop.filter() == null || truthy(withTargets(loop.targets(), item, () -> eval(loop.filter())))) {
                items.add(item);
            }
        }
        if (items.isEmpty()) {
            run(loop.otherwise(), out);
            return;
        }
        for (int i = 0; i < items.size(); i++) {
            Map<String, Object> scope = new HashMap<>();
            bind(loop.targets(), items.get(i), scope);
            scope.put("loop", loopVariable(items, i));
            scopes.push(scope);
            try {
                run(loop.body(), out);
            }
            catch (LoopControl control) {
                if (control.isBreak) {
                    return;
                }
            }
            finally {
                scopes.pop();
            }
        }
    }

    private Object withTargets(List<String> targets, Object item, java.util.function.Supplier<Object> body)
    {
        Map<String, Object> scope = new HashMap<>();
        bind(targets, item, scope);
        scopes.push(scope);
        try {
            return body.get();
        }
        finally {
            scopes.pop();
        }
    }

    private static void bind(List<String> targets, Object item, Map<String, Object> scope)
    {
        if (targets.size() == 1) {
            scope.put(targets.getFirst(), item);
            return;
        }
        if (!(item instanceof List<?> values) || values.size() != targets.size()) {
            throw new ChatTemplateException("chat template: cannot unpack " + TemplateValues.repr(item) + " into " + targets);
        }
        for (int i = 0; i < targets.size(); i++) {
            scope.put(targets.get(i), values.get(i));
        }
    }

    private static Map<String, Object> loopVariable(List<Object> items, int i)
    {
        Map<String, Object> loop = new LinkedHashMap<>();
        int n = items.size();
        loop.put("index", (long) i + 1);
        loop.put("index0", (long) i);
        loop.put("revindex", (long) (n - i));
        loop.put("revindex0", (long) (n - i - 1));
        loop.put("first", i == 0);
        loop.put("last", i == n - 1);
        loop.put("length", (long) n);
        loop.put("previtem", i > 0 ? items.get(i - 1) : UNDEFINED);
        loop.put("nextitem", i + 1 < n ? items.get(i + 1) : UNDEFINED);
        return loop;
    }

    Object eval(Expr expr)
    {
        return functions.eval(expr, this);
    }
}
