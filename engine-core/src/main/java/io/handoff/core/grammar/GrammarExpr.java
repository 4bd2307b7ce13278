package io.handoff.core.grammar;

import java.util.List;

import static java.util.Objects.requireNonNull;

/**
 * A grammar's right-hand sides, over bytes: what regular expressions, GBNF and JSON Schema all compile to before
 * {@link ByteAutomaton} turns them into states. Text is UTF-8 by the time it is here ({@link CodePoints}).
 */
public sealed interface GrammarExpr
{
    GrammarExpr EMPTY = new Seq(List.of());

    /** One byte in {@code [lo, hi]} (unsigned). */
    record ByteRange(int lo, int hi)
            implements GrammarExpr
    {
        public ByteRange
        {
            if (lo < 0 || hi > 255 || lo > hi) {
                throw new IllegalArgumentException("byte range " + lo + ".." + hi + " is not within 0..255");
            }
        }
    }

    /**
     * The special token {@code id} (a control token such as Mistral's {@code [TOOL_CALLS]}), which has no text and so no
     * bytes: it is matched as a token of its own.
     */
    record Special(int id)
            implements GrammarExpr
    {
        public Special
        {
            if (id < 0) {
                throw new IllegalArgumentException("token id " + id + " is negative");
            }
        }
    }

    record Seq(List<GrammarExpr> items)
            implements GrammarExpr
    {
        public Seq
        {
            items = List.copyOf(items);
        }
    }

    record Alt(List<GrammarExpr> options)
            implements GrammarExpr
    {
        public Alt
        {
            options = List.copyOf(options);
        }
    }

    /** {@code body} at least {@code min} and at most {@code max} times; {@code max} {@link #UNBOUNDED}: no limit. */
    record Repeat(GrammarExpr body, int min, int max)
            implements GrammarExpr
    {
        public static final int UNBOUNDED = -1;

        public Repeat
        {
            requireNonNull(body, "body is null");
            if (min < 0 || (max != UNBOUNDED && max < min)) {
                throw new GrammarException("repetition {" + min + "," + max + "} is empty or negative");
            }
        }
    }

    /** The rule named {@code name} of the same {@link Grammar}. */
    record Ref(String name)
            implements GrammarExpr
    {
        public Ref
        {
            requireNonNull(name, "name is null");
        }
    }

    static GrammarExpr literal(String text)
    {
        return bytes(text.getBytes(java.nio.charset.StandardCharsets.UTF_8));
    }

    static GrammarExpr bytes(byte[] bytes)
    {
        GrammarExpr[] items = new GrammarExpr[bytes.length];
        for (int i = 0; i < bytes.length; i++) {
            items[i] = new ByteRange(bytes[i] & 0xff, bytes[i] & 0xff);
        }
        return items.length == 1 ? items[0] : new Seq(List.of(items));
    }

    static GrammarExpr seq(GrammarExpr... items)
    {
        return items.length == 1 ? items[0] : new Seq(List.of(items));
    }

    static GrammarExpr alt(List<GrammarExpr> options)
    {
        return options.size() == 1 ? options.getFirst() : new Alt(options);
    }

    static GrammarExpr optional(GrammarExpr body)
    {
        return new Repeat(body, 0, 1);
    }
}
