package io.handoff.core.grammar;

import java.util.ArrayDeque;
import java.util.Deque;
import java.util.LinkedHashMap;
import java.util.Map;

import static java.util.Objects.requireNonNull;

/**
 * Named rules over bytes with a root: what a request's constraint is before it meets a vocabulary. Every
 * {@link GrammarExpr.Ref} names a rule of this grammar (checked here).
 *
 * @param source what the grammar was compiled from (kind and text), which names it in caches and messages
 */
public record Grammar(String root, Map<String, GrammarExpr> rules, String source)
{
    public Grammar
    {
        requireNonNull(root, "root is null");
        rules = java.util.Collections.unmodifiableMap(new LinkedHashMap<>(requireNonNull(rules, "rules is null")));
        requireNonNull(source, "source is null");
        if (!rules.containsKey(root)) {
            throw new GrammarException("the grammar has no rule '" + root + "' to start from");
        }
        for (Map.Entry<String, GrammarExpr> rule : rules.entrySet()) {
            checkRefs(rule.getKey(), rule.getValue(), rules);
        }
    }

    private static void checkRefs(String rule, GrammarExpr expr, Map<String, GrammarExpr> rules)
    {
        Deque<GrammarExpr> pending = new ArrayDeque<>();
        pending.push(expr);
        while (!pending.isEmpty()) {
            switch (pending.pop()) {
                case GrammarExpr.Ref ref -> {
                    if (!rules.containsKey(ref.name())) {
                        throw new GrammarException("rule '" + rule + "' refers to '" + ref.name() + "', which is not defined");
                    }
                }
                case GrammarExpr.Seq seq -> seq.items().forEach(pending::push);
                case GrammarExpr.Alt alt -> alt.options().forEach(pending::push);
                case GrammarExpr.Repeat repeat -> pending.push(repeat.body());
                case GrammarExpr.ByteRange ignored -> {}
                case GrammarExpr.Special ignored -> {}
            }
        }
    }
}
