package io.handoff.core.grammar;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * EBNF grammars as llama.cpp writes them (GBNF): {@code name ::= alternatives}, one rule after another, starting at
 * {@code root}; {@code "literals"} with {@code \n \t \r \\ \" \xHH \\uHHHH \UHHHHHHHH} escapes, {@code [classes]} with
 * ranges and {@code ^}, {@code .} for any character, rule names, groups, {@code |}, and the quantifiers
 * {@code * + ? {m} {m,} {m,n}}; {@code #} starts a comment. Rules may span lines: a rule ends where the next
 * {@code name ::=} starts.
 */
public final class Gbnf
{
    private final String text;
    private int at;
    private int depth;

    private Gbnf(String text)
    {
        this.text = text;
    }

    public static Grammar parse(String text)
    {
        Gbnf parser = new Gbnf(text);
        Map<String, GrammarExpr> rules = new LinkedHashMap<>();
        parser.skipSpace();
        while (parser.at < text.length()) {
            String name = parser.name();
            parser.skipSpace();
            if (!text.startsWith("::=", parser.at)) {
                throw parser.error("expected '::=' after the rule name '" + name + "'");
            }
            parser.at += 3;
            if (rules.containsKey(name)) {
                throw parser.error("rule '" + name + "' is defined twice");
            }
            rules.put(name, parser.alternatives(false));
            parser.skipSpace();
        }
        if (!rules.containsKey("root")) {
            throw new GrammarException("EBNF grammar: no 'root' rule (the rule generation starts from)");
        }
        return new Grammar("root", rules, "ebnf " + text);
    }

    private GrammarExpr alternatives(boolean nested)
    {
        List<GrammarExpr> options = new ArrayList<>();
        options.add(sequence(nested));
        while (peek('|')) {
            at++;
            options.add(sequence(nested));
        }
        return GrammarExpr.alt(options);
    }

    private GrammarExpr sequence(boolean nested)
    {
        List<GrammarExpr> items = new ArrayList<>();
        while (true) {
            skipSpace();
            if (at >= text.length() || peek('|') || peek(')') || startsRule()) {
                break;
            }
            items.add(quantified(element(), nested));
        }
        return items.size() == 1 ? items.getFirst() : new GrammarExpr.Seq(items);
    }

    private boolean startsRule()
    {
        int save = at;
        try {
            if (!isNameChar(peekChar())) {
                return false;
            }
            name();
            skipSpace();
            return text.startsWith("::=", at);
        }
        finally {
            at = save;
        }
    }

    private GrammarExpr quantified(GrammarExpr element, boolean nested)
    {
        GrammarExpr expr = element;
        while (at < text.length()) {
            char c = text.charAt(at);
            if (c == '*' || c == '+' || c == '?') {
                at++;
                expr = new GrammarExpr.Repeat(expr, c == '+' ? 1 : 0, c == '?' ? 1 : GrammarExpr.Repeat.UNBOUNDED);
            }
            else if (c == '{') {
                at++;
                int min = count();
                int max = min;
                if (peek(',')) {
                    at++;
                    skipSpace();
                    max = peek('}') ? GrammarExpr.Repeat.UNBOUNDED : count();
                }
                skipSpace();
                expect('}');
                if (min > RegexGrammar.MAX_COUNT || max > RegexGrammar.MAX_COUNT) {
                    throw error("a count over " + RegexGrammar.MAX_COUNT);
                }
                if (max != GrammarExpr.Repeat.UNBOUNDED && max < min) {
                    throw error("the count's maximum is below its minimum");
                }
                expr = new GrammarExpr.Repeat(expr, min, max);
            }
            else {
                break;
            }
        }
        return expr;
    }

    private int count()
    {
        skipSpace();
        int start = at;
        while (at < text.length() && Character.isDigit(text.charAt(at))) {
            at++;
        }
        if (start == at || at - start > 6) {
            throw error("expected a count");
        }
        return Integer.parseInt(text.substring(start, at));
    }

    private GrammarExpr element()
    {
        char c = text.charAt(at);
        if (c == '"') {
            at++;
            List<GrammarExpr> chars = new ArrayList<>();
            while (!peek('"')) {
                if (at >= text.length()) {
                    throw error("unterminated string literal");
                }
                chars.add(CodePoints.single(character()).utf8());
            }
            at++;
            return chars.size() == 1 ? chars.getFirst() : new GrammarExpr.Seq(chars);
        }
        if (c == '[') {
            return characterClass();
        }
        if (c == '.') {
            at++;
            return CodePoints.ALL.utf8();
        }
        if (c == '(') {
            at++;
            if (++depth > RegexGrammar.MAX_NESTING) {
                throw error("groups nest deeper than " + RegexGrammar.MAX_NESTING);
            }
            GrammarExpr inner = alternatives(true);
            skipSpace();
            expect(')');
            depth--;
            return inner;
        }
        if (c == '<') {
            throw error("token references (<...>) are not supported; write the token's text as a literal");
        }
        if (isNameChar(c)) {
            return new GrammarExpr.Ref(name());
        }
        throw error("unexpected '" + c + "'");
    }

    private GrammarExpr characterClass()
    {
        int open = at++;
        boolean negated = peek('^');
        if (negated) {
            at++;
        }
        CodePoints set = CodePoints.of(1, 0);
        while (!peek(']')) {
            if (at >= text.length()) {
                at = open;
                throw error("unterminated character class");
            }
            int lo = character();
            int hi = lo;
            if (peek('-') && at + 1 < text.length() && text.charAt(at + 1) != ']') {
                at++;
                hi = character();
                if (hi < lo) {
                    throw error("the range ends below where it starts");
                }
            }
            set = set.union(CodePoints.of(lo, hi).minus(CodePoints.of(0xD800, 0xDFFF)));
        }
        at++;
        CodePoints result = negated ? set.complement() : set;
        if (result.isEmpty()) {
            throw error("the character class matches no character");
        }
        return result.utf8();
    }

    // One character of a literal or class, escapes decoded.
    private int character()
    {
        int c = text.codePointAt(at);
        at += Character.charCount(c);
        if (c != '\\') {
            return c;
        }
        if (at >= text.length()) {
            throw error("the grammar ends with a lone '\\'");
        }
        char e = text.charAt(at++);
        return switch (e) {
            case 'n' -> '\n';
            case 't' -> '\t';
            case 'r' -> '\r';
            case '\\', '"', '[', ']', '-', '^' -> e;
            case 'x' -> hex(2);
            case 'u' -> hex(4);
            case 'U' -> hex(8);
            default -> throw error("unknown escape \\" + e);
        };
    }

    private int hex(int digits)
    {
        if (at + digits > text.length()) {
            throw error("expected " + digits + " hex digits");
        }
        try {
            int value = Integer.parseInt(text.substring(at, at + digits), 16);
            at += digits;
            if (value > CodePoints.MAX || (value >= 0xD800 && value <= 0xDFFF)) {
                throw error("\\u" + Integer.toHexString(value) + " is not a Unicode scalar value");
            }
            return value;
        }
        catch (NumberFormatException e) {
            throw error("expected " + digits + " hex digits");
        }
    }

    private String name()
    {
        int start = at;
        while (at < text.length() && isNameChar(text.charAt(at))) {
            at++;
        }
        if (start == at) {
            throw error("expected a rule name");
        }
        return text.substring(start, at);
    }

    private static boolean isNameChar(char c)
    {
        return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_';
    }

    private char peekChar()
    {
        return at < text.length() ? text.charAt(at) : '\0';
    }

    private void skipSpace()
    {
        while (at < text.length()) {
            char c = text.charAt(at);
            if (c == '#') {
                while (at < text.length() && text.charAt(at) != '\n') {
                    at++;
                }
            }
            else if (Character.isWhitespace(c)) {
                at++;
            }
            else {
                break;
            }
        }
    }

    private boolean peek(char c)
    {
        return at < text.length() && text.charAt(at) == c;
    }

    private void expect(char c)
    {
        if (!peek(c)) {
            throw error("expected '" + c + "'");
        }
        at++;
    }

    private GrammarException error(String what)
    {
        int line = 1;
        int column = 1;
        for (int i = 0; i < Math.min(at, text.length()); i++) {
            if (text.charAt(i) == '\n') {
                line++;
                column = 1;
            }
            else {
                column++;
            }
        }
        return new GrammarException("EBNF grammar, line " + line + " column " + column + ": " + what);
    }
}
