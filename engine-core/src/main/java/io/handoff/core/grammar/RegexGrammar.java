package io.handoff.core.grammar;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.function.Function;

/**
 * Regular expressions (the common subset of ECMAScript and Python {@code re}) as byte grammars: literals and escapes,
 * {@code .}, classes with ranges and negation, {@code \d \w \s} and their negations, groups (capturing, non-capturing,
 * named), alternation, and the quantifiers {@code * + ? {n} {n,} {n,m}} (lazy ones match the same strings).
 * {@code ^} and {@code $} are taken only at the ends. Backreferences, lookaround and word boundaries describe no
 * regular language of bytes this engine can enforce and are refused with the offset where they are.
 */
public final class RegexGrammar
{
    /** The largest count a {@code {n,m}} quantifier takes (each count is unrolled). */
    public static final int MAX_COUNT = 1000;
    /** The deepest nesting of groups taken. */
    public static final int MAX_NESTING = 100;

    private final String pattern;
    private final Function<CodePoints, GrammarExpr> characters;
    private int at;
    private int depth;
    boolean anchoredStart;
    boolean anchoredEnd;

    private RegexGrammar(String pattern, Function<CodePoints, GrammarExpr> characters)
    {
        this.pattern = pattern;
        this.characters = characters;
    }

    /** A grammar whose language is the strings {@code pattern} matches whole (as Python's {@code re.fullmatch}). */
    public static Grammar fullMatch(String pattern)
    {
        return new Grammar("root", Map.of("root", parse(pattern, CodePoints::utf8).expr), "regex " + pattern);
    }

    /** The parsed pattern, with what its characters become ({@code characters}) and whether it was anchored. */
    record Parsed(GrammarExpr expr, boolean anchoredStart, boolean anchoredEnd) {}

    static Parsed parse(String pattern, Function<CodePoints, GrammarExpr> characters)
    {
        RegexGrammar parser = new RegexGrammar(pattern, characters);
        if (parser.peek('^')) {
            parser.at++;
            parser.anchoredStart = true;
        }
        GrammarExpr expr = parser.alternation();
        if (parser.at < pattern.length()) {
            throw parser.error("unexpected '" + pattern.charAt(parser.at) + "'");
        }
        return new Parsed(expr, parser.anchoredStart, parser.anchoredEnd);
    }

    private GrammarExpr alternation()
    {
        List<GrammarExpr> options = new ArrayList<>();
        options.add(sequence());
        while (peek('|')) {
            at++;
            options.add(sequence());
        }
        return GrammarExpr.alt(options);
    }

    private GrammarExpr sequence()
    {
        List<GrammarExpr> items = new ArrayList<>();
        while (at < pattern.length() && !peek('|') && !peek(')')) {
            if (peek('$')) {
                at++;
                if (at != pattern.length()) {
                    throw error("'$' is only taken at the end of the pattern");
                }
                anchoredEnd = true;
                break;
            }
            if (peek('^')) {
                throw error("'^' is only taken at the start of the pattern");
            }
            items.add(quantified(atom()));
        }
        return items.size() == 1 ? items.getFirst() : new GrammarExpr.Seq(items);
    }

    private GrammarExpr quantified(GrammarExpr atom)
    {
        GrammarExpr expr = atom;
        while (at < pattern.length()) {
            char c = pattern.charAt(at);
            int min;
            int max;
            if (c == '*' || c == '+' || c == '?') {
                at++;
                min = c == '+' ? 1 : 0;
                max = c == '?' ? 1 : GrammarExpr.Repeat.UNBOUNDED;
            }
            else if (c == '{' && isCount()) {
                int open = at++;
                min = number();
                max = min;
                if (peek(',')) {
                    at++;
                    max = peek('}') ? GrammarExpr.Repeat.UNBOUNDED : number();
                }
                expect('}');
                if (min > MAX_COUNT || max > MAX_COUNT) {
                    throw error("the count " + pattern.substring(open, at) + " is over " + MAX_COUNT);
                }
                if (max != GrammarExpr.Repeat.UNBOUNDED && max < min) {
                    throw error("the count " + pattern.substring(open, at) + " has its maximum below its minimum");
                }
            }
            else {
                break;
            }
            if (peek('?')) {
                at++; // lazy: the same strings
            }
            else if (peek('+')) {
                throw error("possessive quantifiers are not supported");
            }
            expr = new GrammarExpr.Repeat(expr, min, max);
        }
        return expr;
    }

    private boolean isCount()
    {
        int i = at + 1;
        int digits = 0;
        while (i < pattern.length() && Character.isDigit(pattern.charAt(i))) {
            i++;
            digits++;
        }
        return digits > 0 && i < pattern.length() && (pattern.charAt(i) == '}' || pattern.charAt(i) == ',');
    }

    private int number()
    {
        int start = at;
        while (at < pattern.length() && Character.isDigit(pattern.charAt(at))) {
            at++;
        }
        if (start == at || at - start > 6) {
            throw error("expected a count");
        }
        return Integer.parseInt(pattern.substring(start, at));
    }

    private GrammarExpr atom()
    {
        int c = pattern.codePointAt(at);
        switch (c) {
            case '(' -> {
                at++;
                if (peek('?')) {
                    if (pattern.startsWith("?:", at)) {
                        at += 2;
                    }
                    else if (pattern.startsWith("?<", at) && !pattern.startsWith("?<=", at) && !pattern.startsWith("?<!", at)
                            || pattern.startsWith("?P<", at)) {
                        int close = pattern.indexOf('>', at);
                        if (close < 0) {
                            throw error("unterminated group name");
                        }
                        at = close + 1;
                    }
                    else {
                        throw error("lookaround and inline flags ('(?" + (at + 1 < pattern.length() ? pattern.charAt(at + 1) : "")
                                + "') are not supported");
                    }
                }
                if (++depth > MAX_NESTING) {
                    throw error("groups nest deeper than " + MAX_NESTING);
                }
                GrammarExpr inner = alternation();
                expect(')');
                depth--;
                return inner;
            }
            case '[' -> {
                return characters.apply(characterClass());
            }
            case '.' -> {
                at++;
                return characters.apply(CodePoints.ALL.minus(CodePoints.single('\n')));
            }
            case '\\' -> {
                return escapeAtom();
            }
            case '*', '+', '?' -> throw error("nothing to repeat before '" + (char) c + "'");
            case ')' -> throw error("unbalanced ')'");
            default -> {
                at += Character.charCount(c);
                return characters.apply(CodePoints.single(c));
            }
        }
    }

    private GrammarExpr escapeAtom()
    {
        char e = pattern.charAt(at + 1 < pattern.length() ? at + 1 : at);
        if (at + 1 >= pattern.length()) {
            throw error("the pattern ends with a lone '\\'");
        }
        if (e >= '1' && e <= '9') {
            throw error("backreferences (\\" + e + ") are not supported");
        }
        if (e == 'b' || e == 'B' || e == 'A' || e == 'Z' || e == 'z' || e == 'G') {
            throw error("the anchor \\" + e + " is not supported");
        }
        return characters.apply(escape());
    }

    // At a backslash: the code points of one escape (class escapes included).
    private CodePoints escape()
    {
        at++;
        char e = pattern.charAt(at++);
        return switch (e) {
            case 'd' -> CodePoints.of('0', '9');
            case 'D' -> CodePoints.of('0', '9').complement();
            case 'w' -> word();
            case 'W' -> word().complement();
            case 's' -> space();
            case 'S' -> space().complement();
            case 't' -> CodePoints.single('\t');
            case 'n' -> CodePoints.single('\n');
            case 'r' -> CodePoints.single('\r');
            case 'f' -> CodePoints.single('\f');
            case 'v' -> CodePoints.single(0x0B);
            case '0' -> CodePoints.single(0);
            case 'x' -> CodePoints.single(hex(2));
            case 'u' -> {
                if (peek('{')) {
                    at++;
                    int close = pattern.indexOf('}', at);
                    if (close < 0 || close - at > 6 || close == at) {
                        throw error("bad \\u{...} escape");
                    }
                    int cp = Integer.parseInt(pattern.substring(at, close), 16);
                    at = close + 1;
                    yield CodePoints.single(cp);
                }
                yield CodePoints.single(hex(4));
            }
            default -> {
                if (Character.isLetterOrDigit(e)) {
                    at--;
                    throw error("the escape \\" + e + " is not supported");
                }
                yield CodePoints.single(e);
            }
        };
    }

    private int hex(int digits)
    {
        if (at + digits > pattern.length()) {
            throw error("expected " + digits + " hex digits");
        }
        try {
            int value = Integer.parseInt(pattern.substring(at, at + digits), 16);
            at += digits;
            return value;
        }
        catch (NumberFormatException e) {
            throw error("expected " + digits + " hex digits");
        }
    }

    private CodePoints characterClass()
    {
        int open = at++;
        boolean negated = peek('^');
        if (negated) {
            at++;
        }
        CodePoints set = CodePoints.of(1, 0);
        boolean first = true;
        while (at < pattern.length() && (first || !peek(']'))) {
            first = false;
            CodePoints item;
            int lo = -1;
            if (peek('\\')) {
                item = escape();
                if (item.isSingle()) {
                    lo = item.first();
                }
            }
            else if (pattern.startsWith("[:", at)) {
                throw error("POSIX classes ([:alpha:]) are not supported");
            }
            else {
                lo = pattern.codePointAt(at);
                at += Character.charCount(lo);
                item = CodePoints.single(lo);
            }
            if (lo >= 0 && peek('-') && at + 1 < pattern.length() && pattern.charAt(at + 1) != ']') {
                at++;
                int hi;
                if (peek('\\')) {
                    CodePoints end = escape();
                    if (!end.isSingle()) {
                        throw error("a range cannot end with a class escape");
                    }
                    hi = end.first();
                }
                else {
                    hi = pattern.codePointAt(at);
                    at += Character.charCount(hi);
                }
                if (hi < lo) {
                    throw error("the range ends below where it starts");
                }
                item = CodePoints.of(lo, hi).minus(CodePoints.of(0xD800, 0xDFFF));
            }
            set = set.union(item);
        }
        if (!peek(']')) {
            at = open;
            throw error("unterminated character class");
        }
        at++;
        CodePoints result = negated ? set.complement() : set;
        if (result.isEmpty()) {
            at = open;
            throw error("the character class matches no character");
        }
        return result;
    }

    private static CodePoints word()
    {
        return CodePoints.of('a', 'z').union(CodePoints.of('A', 'Z')).union(CodePoints.of('0', '9')).union(CodePoints.single('_'));
    }

    private static CodePoints space()
    {
        return CodePoints.of('\t', '\r').union(CodePoints.single(' '));
    }

    private boolean peek(char c)
    {
        return at < pattern.length() && pattern.charAt(at) == c;
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
        return new GrammarException("regular expression " + quoted(pattern) + " at offset " + at + ": " + what);
    }

    private static String quoted(String pattern)
    {
        String shown = pattern.length() > 60 ? pattern.substring(0, 57) + "..." : pattern;
        return "\"" + shown + "\"";
    }
}
