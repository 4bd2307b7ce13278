package io.handoff.http.chat;

import io.handoff.http.chat.ExprTokens.Kind;
import io.handoff.http.chat.ExprTokens.Token;
import io.handoff.http.chat.TemplateAst.Attr;
import io.handoff.http.chat.TemplateAst.Binary;
import io.handoff.http.chat.TemplateAst.Branch;
import io.handoff.http.chat.TemplateAst.Call;
import io.handoff.http.chat.TemplateAst.Cond;
import io.handoff.http.chat.TemplateAst.DictOf;
import io.handoff.http.chat.TemplateAst.Expr;
import io.handoff.http.chat.TemplateAst.Filter;
import io.handoff.http.chat.TemplateAst.Item;
import io.handoff.http.chat.TemplateAst.ListOf;
import io.handoff.http.chat.TemplateAst.Literal;
import io.handoff.http.chat.TemplateAst.Name;
import io.handoff.http.chat.TemplateAst.Node;
import io.handoff.http.chat.TemplateAst.Slice;
import io.handoff.http.chat.TemplateAst.Test;
import io.handoff.http.chat.TemplateAst.Unary;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * Parses the Jinja subset Hugging Face chat templates use: {@code if/elif/else}, {@code for} (with
 * {@code else}, an {@code if} filter, tuple targets, {@code break}/{@code continue}), {@code set} (also
 * {@code ns.attr} and block form), and Jinja's expression grammar with its precedence (filters and tests
 * bind tighter than arithmetic, {@code ~} between {@code +} and {@code *}). Anything else (macros,
 * includes, blocks) is refused with the tag and line, rather than rendered wrongly.
 */
final class TemplateParser
{
    private static final Set<String> COMPARISONS = Set.of("==", "!=", "<", ">", "<=", ">=");

    private final List<TemplateLexer.Piece> pieces;
    private int next;
    private String ended;

    private TemplateParser(List<TemplateLexer.Piece> pieces)
    {
        this.pieces = pieces;
    }

    static List<Node> parse(String template)
    {
        TemplateParser parser = new TemplateParser(TemplateLexer.split(template));
        return parser.body(Set.of()); // a stray end tag at the top level fails in statement()
    }

    /** Statements up to one of {@code terminators} (left in {@link #ended} with its tokens in {@link #endTokens}). */
    private ExprTokens endTokens;

    private List<Node> body(Set<String> terminators)
    {
        List<Node> nodes = new ArrayList<>();
        ended = null;
        while (next < pieces.size()) {
            switch (pieces.get(next++)) {
                case TemplateLexer.Text text -> nodes.add(new TemplateAst.Text(text.text()));
                case TemplateLexer.Output output -> {
                    ExprTokens tokens = new ExprTokens(output.source(), output.line());
                    Expr value = expression(tokens);
                    tokens.expectEnd();
                    nodes.add(new TemplateAst.Output(value));
                }
                case TemplateLexer.Tag tag -> {
                    ExprTokens tokens = new ExprTokens(tag.source(), tag.line());
                    String keyword = tokens.name();
                    if (terminators.contains(keyword)) {
                        ended = keyword;
                        endTokens = tokens;
                        return nodes;
                    }
                    nodes.add(statement(keyword, tokens));
                }
            }
        }
        if (!terminators.isEmpty()) {
            throw new ChatTemplateException("chat template ends inside a block: expected one of " + terminators);
        }
        return nodes;
    }

    private Node statement(String keyword, ExprTokens tokens)
    {
        return switch (keyword) {
            case "if" -> ifStatement(tokens);
            case "for" -> forStatement(tokens);
            case "set" -> setStatement(tokens);
            case "break" -> {
                tokens.expectEnd();
                yield new TemplateAst.Break();
            }
            case "continue" -> {
                tokens.expectEnd();
                yield new TemplateAst.Continue();
            }
            case "endif", "endfor", "endset", "elif", "else" -> throw tokens.error("'" + keyword + "' without a matching opening tag");
            default -> throw tokens.error("the tag '" + keyword + "' is not supported by this chat template renderer "
                    + "(supported: if, elif, else, for, set, break, continue)");
        };
    }

    private Node ifStatement(ExprTokens tokens)
    {
        List<Branch> branches = new ArrayList<>();
        Expr condition = expression(tokens);
        tokens.expectEnd();
        while (true) {
            List<Node> body = body(Set.of("elif", "else", "endif"));
            branches.add(new Branch(condition, body));
            switch (ended) {
                case "elif" -> {
                    condition = expression(endTokens);
                    endTokens.expectEnd();
                }
                case "else" -> {
                    endTokens.expectEnd();
                    List<Node> otherwise = body(Set.of("endif"));
                    endTokens.expectEnd();
                    return new TemplateAst.If(branches, otherwise);
                }
                default -> {
                    endTokens.expectEnd();
                    return new TemplateAst.If(branches, List.of());
                }
            }
        }
    }

    private Node forStatement(ExprTokens tokens)
    {
        List<String> targets = new ArrayList<>();
        do {
            targets.add(tokens.name());
        }
        while (tokens.accept(","));
        tokens.expect("in");
        Expr iterable = condition(tokens, false);
        Expr filter = tokens.accept("if") ? condition(tokens, false) : null;
        tokens.expectEnd();
        List<Node> body = body(Set.of("else", "endfor"));
        List<Node> otherwise = List.of();
        endTokens.expectEnd();
        if (ended.equals("else")) {
            otherwise = body(Set.of("endfor"));
            endTokens.expectEnd();
        }
        return new TemplateAst.For(targets, iterable, filter, body, otherwise);
    }

    private Node setStatement(ExprTokens tokens)
    {
        String name = tokens.name();
        String attribute = tokens.accept(".") ? tokens.name() : null;
        if (attribute == null && tokens.atEnd()) {
            List<Node> body = body(Set.of("endset"));
            endTokens.expectEnd();
            return new TemplateAst.SetBlock(name, body);
        }
        tokens.expect("=");
        Expr value = expression(tokens);
        tokens.expectEnd();
        return new TemplateAst.Set(name, attribute, value);
    }

    // Expressions, lowest precedence first, as Jinja's parser has them.

    static Expr expression(ExprTokens tokens)
    {
        Expr first = condition(tokens, true);
        if (tokens.peek().text().equals(",") && tokens.peek().kind() == Kind.OP) {
            List<Expr> items = new ArrayList<>(List.of(first));
            while (tokens.accept(",") && !tokens.atEnd()) {
                items.add(condition(tokens, true));
            }
            return new ListOf(items);
        }
        return first;
    }

    private static Expr condition(ExprTokens tokens, boolean allowIf)
    {
        Expr value = or(tokens);
        while (allowIf && tokens.accept("if")) {
            Expr test = or(tokens);
            Expr otherwise = tokens.accept("else") ? condition(tokens, true) : null;
            value = new Cond(test, value, otherwise);
        }
        return value;
    }

    private static Expr or(ExprTokens tokens)
    {
        Expr left = and(tokens);
        while (tokens.accept("or")) {
            left = new Binary("or", left, and(tokens));
        }
        return left;
    }

    private static Expr and(ExprTokens tokens)
    {
        Expr left = not(tokens);
        while (tokens.accept("and")) {
            left = new Binary("and", left, not(tokens));
        }
        return left;
    }

    private static Expr not(ExprTokens tokens)
    {
        if (tokens.peek().kind() == Kind.NAME && tokens.peek().text().equals("not") && !tokens.peek(1).text().equals("in")) {
            tokens.take();
            return new Unary("not", not(tokens));
        }
        return compare(tokens);
    }

    private static Expr compare(ExprTokens tokens)
    {
        Expr left = sum(tokens);
        while (true) {
            Token token = tokens.peek();
            if (token.kind() == Kind.OP && COMPARISONS.contains(token.text())) {
                tokens.take();
                left = new Binary(token.text(), left, sum(tokens));
            }
            else if (tokens.accept("in")) {
                left = new Binary("in", left, sum(tokens));
            }
            else if (token.kind() == Kind.NAME && token.text().equals("not") && tokens.peek(1).text().equals("in")) {
                tokens.take();
                tokens.take();
                left = new Unary("not", new Binary("in", left, sum(tokens)));
            }
            else {
                return left;
            }
        }
    }

    private static Expr sum(ExprTokens tokens)
    {
        Expr left = concat(tokens);
        while (tokens.peek().kind() == Kind.OP && (tokens.peek().text().equals("+") || tokens.peek().text().equals("-"))) {
            left = new Binary(tokens.take().text(), left, concat(tokens));
        }
        return left;
    }

    private static Expr concat(ExprTokens tokens)
    {
        Expr left = product(tokens);
        while (tokens.accept("~")) {
            left = new Binary("~", left, product(tokens));
        }
        return left;
    }

    private static Expr product(ExprTokens tokens)
    {
        Expr left = power(tokens);
        while (tokens.peek().kind() == Kind.OP && Set.of("*", "/", "//", "%").contains(tokens.peek().text())) {
            left = new Binary(tokens.take().text(), left, power(tokens));
        }
        return left;
    }

    private static Expr power(ExprTokens tokens)
    {
        Expr left = unary(tokens);
        while (tokens.accept("**")) {
            left = new Binary("**", left, unary(tokens));
        }
        return left;
    }

    private static Expr unary(ExprTokens tokens)
    {
        if (tokens.peek().kind() == Kind.OP && (tokens.peek().text().equals("-") || tokens.peek().text().equals("+"))) {
            String op = tokens.take().text();
            return new Unary(op, unary(tokens));
        }
        return filters(tokens, postfix(tokens, primary(tokens)));
    }

    private static Expr filters(ExprTokens tokens, Expr value)
    {
        while (true) {
            if (tokens.accept("|")) {
                String name = tokens.name();
                List<Expr> args = new ArrayList<>();
                Map<String, Expr> kwargs = new LinkedHashMap<>();
                if (tokens.accept("(")) {
                    arguments(tokens, args, kwargs);
                }
                value = new Filter(value, name, args, kwargs);
            }
            else if (tokens.accept("is")) {
                boolean negated = tokens.accept("not");
                String name = tokens.name();
                List<Expr> args = new ArrayList<>();
                if (tokens.accept("(")) {
                    arguments(tokens, args, new LinkedHashMap<>());
                }
                else if (!tokens.atEnd() && startsPrimary(tokens.peek())) {
                    args.add(primary(tokens));
                }
                value = new Test(value, name, args, negated);
            }
            else {
                return value;
            }
        }
    }

    private static boolean startsPrimary(Token token)
    {
        return switch (token.kind()) {
            case STRING, INTEGER, FLOAT -> true;
            case NAME -> !Set.of("and", "or", "if", "else", "not", "in", "is").contains(token.text());
            default -> false;
        };
    }

    private static Expr postfix(ExprTokens tokens, Expr value)
    {
        while (true) {
            if (tokens.accept(".")) {
                Token name = tokens.take();
                value = name.kind() == Kind.INTEGER ? new Item(value, new Literal(Long.parseLong(name.text()))) : new Attr(value, name.text());
            }
            else if (tokens.accept("[")) {
                value = subscript(tokens, value);
            }
            else if (tokens.accept("(")) {
                List<Expr> args = new ArrayList<>();
                Map<String, Expr> kwargs = new LinkedHashMap<>();
                arguments(tokens, args, kwargs);
                value = new Call(value, args, kwargs);
            }
            else {
                return value;
            }
        }
    }

    private static Expr subscript(ExprTokens tokens, Expr target)
    {
        Expr[] parts = new Expr[3];
        int part = 0;
        boolean slice = false;
        while (!tokens.accept("]")) {
            if (tokens.accept(":")) {
                slice = true;
                part++;
                if (part > 2) {
                    throw tokens.error("a slice has at most three parts");
                }
            }
            else {
                parts[part] = condition(tokens, true);
            }
        }
        if (!slice) {
            if (parts[0] == null) {
                throw tokens.error("empty subscript []");
            }
            return new Item(target, parts[0]);
        }
        return new Slice(target, parts[0], parts[1], parts[2]);
    }

    /** Arguments after an opening parenthesis, through the closing one. */
    private static void arguments(ExprTokens tokens, List<Expr> args, Map<String, Expr> kwargs)
    {
        while (!tokens.accept(")")) {
            if (tokens.peek().kind() == Kind.NAME && tokens.peek(1).text().equals("=")) {
                String name = tokens.take().text();
                tokens.take();
                kwargs.put(name, condition(tokens, true));
            }
            else {
                args.add(condition(tokens, true));
            }
            if (!tokens.accept(",")) {
                tokens.expect(")");
                return;
            }
        }
    }

    private static Expr primary(ExprTokens tokens)
    {
        Token token = tokens.take();
        return switch (token.kind()) {
            case STRING -> {
                StringBuilder text = new StringBuilder(token.text());
                while (tokens.peek().kind() == Kind.STRING) {
                    text.append(tokens.take().text()); // adjacent literals concatenate, as in Python
                }
                yield new Literal(text.toString());
            }
            case INTEGER -> new Literal(Long.parseLong(token.text()));
            case FLOAT -> new Literal(Double.parseDouble(token.text()));
            case NAME -> switch (token.text()) {
                case "true", "True" -> new Literal(true);
                case "false", "False" -> new Literal(false);
                case "none", "None" -> new Literal(null);
                default -> new Name(token.text());
            };
            case OP -> switch (token.text()) {
                case "(" -> {
                    if (tokens.accept(")")) {
                        yield new ListOf(List.of());
                    }
                    Expr inner = expression(tokens);
                    tokens.expect(")");
                    yield inner;
                }
                case "[" -> {
                    List<Expr> items = new ArrayList<>();
                    while (!tokens.accept("]")) {
                        items.add(condition(tokens, true));
                        if (!tokens.accept(",")) {
                            tokens.expect("]");
                            break;
                        }
                    }
                    yield new ListOf(items);
                }
                case "{" -> {
                    List<Expr> keys = new ArrayList<>();
                    List<Expr> values = new ArrayList<>();
                    while (!tokens.accept("}")) {
                        keys.add(condition(tokens, true));
                        tokens.expect(":");
                        values.add(condition(tokens, true));
                        if (!tokens.accept(",")) {
                            tokens.expect("}");
                            break;
                        }
                    }
                    yield new DictOf(keys, values);
                }
                default -> throw tokens.error("unexpected '" + token.text() + "'");
            };
            case END -> throw tokens.error("the expression ends too soon");
        };
    }
}
