package io.handoff.core.grammar;

import java.math.BigDecimal;
import java.math.RoundingMode;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import static io.handoff.core.grammar.GrammarExpr.literal;
import static io.handoff.core.grammar.GrammarExpr.optional;
import static io.handoff.core.grammar.GrammarExpr.seq;

/**
 * Numbers as {@link JsonSchemaGrammar} writes them: integers in a range as the decimal spellings of exactly that range
 * (no leading zeros, no {@code -0}), numbers within bounds as those integers and fractions whose whole interval lies
 * within them, and any number with at most {@value #MAX_DIGITS} digits before and after the point.
 */
final class JsonNumbers
{
    static final int MAX_DIGITS = 15;
    private static final long MAX_INTEGER = 999_999_999_999_999L;

    private JsonNumbers() {}

    /** Any JSON number the grammar writes. */
    static GrammarExpr any()
    {
        return seq(optional(literal("-")), digits(0, MAX_INTEGER), fractionExpr());
    }

    static GrammarExpr integer(Map<String, Object> s, String path)
    {
        long[] bounds = integerBounds(s, path);
        return integerExpr(bounds[0], bounds[1]);
    }

    // [lo, hi] over the integers the schema allows, within what the grammar writes.
    private static long[] integerBounds(Map<String, Object> s, String path)
    {
        long lo = -MAX_INTEGER;
        long hi = MAX_INTEGER;
        // a draft 4 boolean exclusiveMinimum/Maximum makes minimum/maximum strict; a numeric one is a strict bound itself
        if (s.containsKey("minimum")) {
            lo = Math.max(lo, clamp(leastAbove(keyword(s, "minimum", path), Boolean.TRUE.equals(s.get("exclusiveMinimum")))));
        }
        if (s.get("exclusiveMinimum") instanceof Number) {
            lo = Math.max(lo, clamp(leastAbove(keyword(s, "exclusiveMinimum", path), true)));
        }
        if (s.containsKey("maximum")) {
            hi = Math.min(hi, clamp(leastAbove(keyword(s, "maximum", path).negate(), Boolean.TRUE.equals(s.get("exclusiveMaximum"))).negate()));
        }
        if (s.get("exclusiveMaximum") instanceof Number) {
            hi = Math.min(hi, clamp(leastAbove(keyword(s, "exclusiveMaximum", path).negate(), true).negate()));
        }
        if (lo > hi) {
            throw new GrammarException(path + ": no integer lies within its minimum and maximum (of at most 15 digits)");
        }
        return new long[] {lo, hi};
    }

    // The least integer at or above bound, or strictly above it.
    private static BigDecimal leastAbove(BigDecimal bound, boolean strictly)
    {
        BigDecimal ceiling = bound.setScale(0, RoundingMode.CEILING);
        return strictly && ceiling.compareTo(bound) == 0 ? ceiling.add(BigDecimal.ONE) : ceiling;
    }

    private static long clamp(BigDecimal value)
    {
        if (value.compareTo(BigDecimal.valueOf(MAX_INTEGER)) > 0) {
            return MAX_INTEGER;
        }
        if (value.compareTo(BigDecimal.valueOf(-MAX_INTEGER)) < 0) {
            return -MAX_INTEGER;
        }
        return value.longValueExact();
    }

    /** Numbers within the schema's bounds; {@code anyNumber} when it has none. */
    static GrammarExpr number(Map<String, Object> s, String path, GrammarExpr anyNumber)
    {
        if (!s.containsKey("minimum") && !s.containsKey("maximum") && !s.containsKey("exclusiveMinimum") && !s.containsKey("exclusiveMaximum")) {
            return anyNumber;
        }
        // Integers within the bounds, and i.fraction where all of [i, i + 1) (or (-(k + 1), -k] for -k.fraction) lies within them.
        long[] bounds = integerBounds(s, path);
        List<GrammarExpr> options = new ArrayList<>();
        options.add(integerExpr(bounds[0], bounds[1]));
        long fromPositive = Math.max(bounds[0], 0);
        long toPositive = bounds[1] - 1;
        GrammarExpr fraction = seq(literal("."), new GrammarExpr.Repeat(new GrammarExpr.ByteRange('0', '9'), 1, MAX_DIGITS));
        if (fromPositive <= toPositive) {
            options.add(seq(digits(fromPositive, toPositive), fraction));
        }
        long fromNegative = Math.max(-bounds[1], 0);
        long toNegative = -bounds[0] - 1;
        if (fromNegative <= toNegative) {
            options.add(seq(literal("-"), digits(fromNegative, toNegative), fraction));
        }
        return GrammarExpr.alt(options);
    }

    private static GrammarExpr fractionExpr()
    {
        GrammarExpr digits = new GrammarExpr.Repeat(new GrammarExpr.ByteRange('0', '9'), 1, MAX_DIGITS);
        GrammarExpr exponent = seq(GrammarExpr.alt(List.of(literal("e"), literal("E"))), optional(GrammarExpr.alt(List.of(literal("+"),
                literal("-")))), new GrammarExpr.Repeat(new GrammarExpr.ByteRange('0', '9'), 1, 2));
        return seq(optional(seq(literal("."), digits)), optional(exponent));
    }

    /** The decimal integers in [lo, hi], as JSON writes them (no leading zeros, no "-0"). */
    static GrammarExpr integerExpr(long lo, long hi)
    {
        List<GrammarExpr> options = new ArrayList<>();
        if (lo < 0) {
            options.add(seq(literal("-"), digits(Math.max(1, -Math.min(hi, -1)), -lo)));
        }
        if (hi >= 0) {
            options.add(digits(Math.max(lo, 0), hi));
        }
        return GrammarExpr.alt(options);
    }

    // The decimal spellings of [lo, hi], 0 <= lo <= hi, without leading zeros.
    private static GrammarExpr digits(long lo, long hi)
    {
        List<GrammarExpr> options = new ArrayList<>();
        long from = lo;
        while (from <= hi) {
            int length = Long.toString(from).length();
            long top = length >= 18 ? Long.MAX_VALUE : Math.min(hi, (long) Math.pow(10, length) - 1);
            options.add(sameLength(Long.toString(from), Long.toString(top)));
            if (top == hi) {
                break;
            }
            from = top + 1;
        }
        return GrammarExpr.alt(options);
    }

    // Strings of digits of one length between a and b (inclusive).
    private static GrammarExpr sameLength(String a, String b)
    {
        if (a.isEmpty()) {
            return GrammarExpr.EMPTY;
        }
        if (a.chars().allMatch(c -> c == '0') && b.chars().allMatch(c -> c == '9')) {
            return new GrammarExpr.Repeat(new GrammarExpr.ByteRange('0', '9'), a.length(), a.length());
        }
        char x = a.charAt(0);
        char y = b.charAt(0);
        String restA = a.substring(1);
        String restB = b.substring(1);
        if (x == y) {
            return seq(literal(String.valueOf(x)), sameLength(restA, restB));
        }
        List<GrammarExpr> options = new ArrayList<>();
        options.add(seq(literal(String.valueOf(x)), sameLength(restA, "9".repeat(restA.length()))));
        if (y - x > 1) {
            options.add(seq(new GrammarExpr.ByteRange(x + 1, y - 1), new GrammarExpr.Repeat(new GrammarExpr.ByteRange('0', '9'),
                    restA.length(), restA.length())));
        }
        options.add(seq(literal(String.valueOf(y)), sameLength("0".repeat(restB.length()), restB)));
        return GrammarExpr.alt(options);
    }

    /** A numeric keyword's value. */
    static BigDecimal keyword(Map<String, Object> s, String key, String path)
    {
        Object value = s.get(key);
        if (value instanceof Long l) {
            return BigDecimal.valueOf(l);
        }
        if (value instanceof BigDecimal d) {
            return d;
        }
        throw new GrammarException(path + "." + key + ": must be a number");
    }
}
