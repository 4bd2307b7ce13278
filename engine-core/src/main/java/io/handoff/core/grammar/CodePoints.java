package io.handoff.core.grammar;

import java.util.ArrayList;
import java.util.List;

/**
 * A set of Unicode scalar values as sorted, disjoint, non-adjacent ranges, and its UTF-8 encodings as byte
 * alternatives: a character class of a regular expression or GBNF becomes the bytes that spell its members.
 * Surrogates (U+D800..U+DFFF) are never members: UTF-8 cannot encode them.
 */
public final class CodePoints
{
    public static final int MAX = 0x10FFFF;
    public static final CodePoints ALL = new CodePoints(new int[] {0, MAX}).minus(of(0xD800, 0xDFFF));

    // pairs: lo0, hi0, lo1, hi1, ...
    private final int[] ranges;

    private CodePoints(int[] ranges)
    {
        this.ranges = ranges;
    }

    public static CodePoints of(int lo, int hi)
    {
        if (lo > hi) {
            return new CodePoints(new int[0]);
        }
        return new CodePoints(new int[] {lo, hi});
    }

    public static CodePoints single(int codePoint)
    {
        return of(codePoint, codePoint);
    }

    public boolean isEmpty()
    {
        return ranges.length == 0;
    }

    public boolean isSingle()
    {
        return ranges.length == 2 && ranges[0] == ranges[1];
    }

    /** The smallest member. */
    public int first()
    {
        return ranges[0];
    }

    public boolean contains(int codePoint)
    {
        for (int i = 0; i < ranges.length; i += 2) {
            if (codePoint >= ranges[i] && codePoint <= ranges[i + 1]) {
                return true;
            }
        }
        return false;
    }

    public CodePoints union(CodePoints other)
    {
        List<int[]> all = new ArrayList<>();
        for (int i = 0; i < ranges.length; i += 2) {
            all.add(new int[] {ranges[i], ranges[i + 1]});
        }
        for (int i = 0; i < other.ranges.length; i += 2) {
            all.add(new int[] {other.ranges[i], other.ranges[i + 1]});
        }
        all.sort((a, b) -> Integer.compare(a[0], b[0]));
        List<Integer> merged = new ArrayList<>();
        for (int[] range : all) {
            int n = merged.size();
            if (n > 0 && range[0] <= merged.get(n - 1) + 1) {
                merged.set(n - 1, Math.max(merged.get(n - 1), range[1]));
            }
            else {
                merged.add(range[0]);
                merged.add(range[1]);
            }
        }
        return new CodePoints(merged.stream().mapToInt(Integer::intValue).toArray());
    }

    public CodePoints complement()
    {
        List<Integer> out = new ArrayList<>();
        int next = 0;
        for (int i = 0; i < ranges.length; i += 2) {
            if (ranges[i] > next) {
                out.add(next);
                out.add(ranges[i] - 1);
            }
            next = ranges[i + 1] + 1;
        }
        if (next <= MAX) {
            out.add(next);
            out.add(MAX);
        }
        return new CodePoints(out.stream().mapToInt(Integer::intValue).toArray()).minus(of(0xD800, 0xDFFF));
    }

    public CodePoints minus(CodePoints other)
    {
        // a - b = not(not(a) or b), without the surrogate removal of complement() in between
        List<Integer> out = new ArrayList<>();
        for (int i = 0; i < ranges.length; i += 2) {
            int lo = ranges[i];
            int hi = ranges[i + 1];
            for (int j = 0; j < other.ranges.length && lo <= hi; j += 2) {
                int olo = other.ranges[j];
                int ohi = other.ranges[j + 1];
                if (ohi < lo || olo > hi) {
                    continue;
                }
                if (olo > lo) {
                    out.add(lo);
                    out.add(olo - 1);
                }
                lo = ohi + 1;
            }
            if (lo <= hi) {
                out.add(lo);
                out.add(hi);
            }
        }
        return new CodePoints(out.stream().mapToInt(Integer::intValue).toArray());
    }

    /** The UTF-8 byte sequences of every member, as alternatives of byte-range sequences. */
    public GrammarExpr utf8()
    {
        List<GrammarExpr> options = new ArrayList<>();
        for (int i = 0; i < ranges.length; i += 2) {
            split(ranges[i], ranges[i + 1], options);
        }
        if (options.isEmpty()) {
            throw new GrammarException("a character class matches no character");
        }
        return GrammarExpr.alt(options);
    }

    // Splits [lo, hi] at the UTF-8 length boundaries, then so that each piece is a product of byte ranges.
    private static void split(int lo, int hi, List<GrammarExpr> out)
    {
        int[] bounds = {0x7F, 0x7FF, 0xFFFF, MAX};
        for (int bound : bounds) {
            if (lo <= bound && hi > bound) {
                split(lo, bound, out);
                split(bound + 1, hi, out);
                return;
            }
        }
        if (hi <= 0x7F) {
            out.add(new GrammarExpr.ByteRange(lo, hi));
            return;
        }
        int length = hi <= 0x7FF ? 2 : hi <= 0xFFFF ? 3 : 4;
        for (int k = 1; k < length; k++) {
            int mask = (1 << (6 * k)) - 1;
            if ((lo & ~mask) != (hi & ~mask)) {
                if ((lo & mask) != 0) {
                    split(lo, lo | mask, out);
                    split((lo | mask) + 1, hi, out);
                    return;
                }
                if ((hi & mask) != mask) {
                    split(lo, (hi & ~mask) - 1, out);
                    split(hi & ~mask, hi, out);
                    return;
                }
            }
        }
        byte[] a = new String(Character.toChars(lo)).getBytes(java.nio.charset.StandardCharsets.UTF_8);
        byte[] b = new String(Character.toChars(hi)).getBytes(java.nio.charset.StandardCharsets.UTF_8);
        GrammarExpr[] items = new GrammarExpr[a.length];
        for (int i = 0; i < a.length; i++) {
            items[i] = new GrammarExpr.ByteRange(a[i] & 0xff, b[i] & 0xff);
        }
        out.add(GrammarExpr.seq(items));
    }
}
