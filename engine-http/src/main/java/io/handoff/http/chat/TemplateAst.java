package io.handoff.http.chat;

import java.util.List;
import java.util.Map;

/** The parsed form of a chat template: statements ({@link Node}) over expressions ({@link Expr}). */
final class TemplateAst
{
    private TemplateAst() {}

    sealed interface Expr
            permits Literal, Name, Attr, Item, Slice, Call, Filter, Test, Unary, Binary, Cond, ListOf, DictOf {}

    record Literal(Object value) implements Expr {}

    record Name(String name) implements Expr {}

    record Attr(Expr target, String name) implements Expr {}

    record Item(Expr target, Expr key) implements Expr {}

    /** {@code target[start:stop:step]}; absent parts are null. */
    record Slice(Expr target, Expr start, Expr stop, Expr step) implements Expr {}

    record Call(Expr callee, List<Expr> args, Map<String, Expr> kwargs) implements Expr {}

    record Filter(Expr value, String name, List<Expr> args, Map<String, Expr> kwargs) implements Expr {}

    record Test(Expr value, String name, List<Expr> args, boolean negated) implements Expr {}

    /** {@code not} or unary {@code -}/{@code +}. */
    record Unary(String op, Expr operand) implements Expr {}

    /** Arithmetic, {@code ~}, comparisons, {@code in}/{@code not in}, {@code and}/{@code or}. */
    record Binary(String op, Expr left, Expr right) implements Expr {}

    /** {@code then if condition else otherwise}; {@code otherwise} null means undefined. */
    record Cond(Expr condition, Expr then, Expr otherwise) implements Expr {}

    record ListOf(List<Expr> items) implements Expr {}

    record DictOf(List<Expr> keys, List<Expr> values) implements Expr {}

    sealed interface Node
            permits Text, Output, If, For, Set, SetBlock, Break, Continue {}

    record Text(String text) implements Node {}

    record Output(Expr value) implements Node {}

    record Branch(Expr condition, List<Node> body) {}

    record If(List<Branch> branches, List<Node> otherwise) implements Node {}

    /** {@code for a[, b] in iterable [if filter]}, with an optional {@code else} body for an empty loop. */
    record For(List<String> targets, Expr iterable, Expr filter, List<Node> body, List<Node> otherwise) implements Node {}

    /** {@code set name = value} or {@code set namespace.attribute = value} ({@code attribute} null for the first). */
    record Set(String name, String attribute, Expr value) implements Node {}

    record SetBlock(String name, List<Node> body) implements Node {}

    record Break() implements Node {}

    record Continue() implements Node {}
}
