package io.handoff.core.grammar;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Free text that may end at any point, and that once it spells {@code trigger} must go on as {@code then}: how a model
 * that may answer or call a tool is held to the call's grammar only when it starts one. The text is followed byte by
 * byte with the trigger's KMP automaton (one rule per matched prefix length), so the trigger can never appear in the
 * text without the constraint taking over.
 */
public final class TriggeredText
{
    private TriggeredText() {}

    /**
     * The rules, named {@code prefix + "-" + k} for a matched prefix of length {@code k}; the text starts at
     * {@code prefix + "-0"}. {@code then} follows the whole trigger.
     */
    public static Map<String, GrammarExpr> rules(String prefix, String trigger, GrammarExpr then)
    {
        return rules(prefix, trigger, then, java.util.Optional.empty());
    }

    /** Like {@link #rules(String, String, GrammarExpr)}, where {@code orStart} (a special token and what follows it) may also end the text at any point. */
    public static Map<String, GrammarExpr> rules(String prefix, String trigger, GrammarExpr then, java.util.Optional<GrammarExpr> orStart)
    {
        byte[] t = trigger.getBytes(StandardCharsets.UTF_8);
        if (t.length == 0) {
            throw new IllegalArgumentException("the trigger is empty");
        }
        int m = t.length;
        int[] failure = new int[m];
        for (int i = 1, k = 0; i < m; i++) {
            while (k > 0 && t[i] != t[k]) {
                k = failure[k - 1];
            }
            if (t[i] == t[k]) {
                k++;
            }
            failure[i] = k;
        }
        Map<String, GrammarExpr> rules = new LinkedHashMap<>();
        for (int j = 0; j < m; j++) {
            int[] target = new int[256];
            for (int b = 0; b < 256; b++) {
                int k = j;
                while (k > 0 && (t[k] & 0xff) != b) {
                    k = failure[k - 1];
                }
                target[b] = (t[k] & 0xff) == b ? k + 1 : 0;
            }
            List<GrammarExpr> options = new ArrayList<>();
            options.add(GrammarExpr.EMPTY);
            orStart.ifPresent(options::add);
            int lo = 0;
            for (int b = 1; b <= 256; b++) {
                if (b == 256 || target[b] != target[lo]) {
                    GrammarExpr bytes = new GrammarExpr.ByteRange(lo, b - 1);
                    int to = target[lo];
                    options.add(to == m ? GrammarExpr.seq(bytes, then) : GrammarExpr.seq(bytes, new GrammarExpr.Ref(prefix + "-" + to)));
                    lo = b;
                }
            }
            rules.put(prefix + "-" + j, new GrammarExpr.Alt(options));
        }
        return rules;
    }
}
