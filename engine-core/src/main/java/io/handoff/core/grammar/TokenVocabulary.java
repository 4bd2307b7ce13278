package io.handoff.core.grammar;

import io.handoff.core.model.tokenizer.Tokenizer;

import java.util.Arrays;
import java.util.Comparator;

/**
 * A model's tokens as the grammar sees them: the bytes of every token that has text, sorted, with each token's common
 * prefix with the one before it, so that a walk over them shares the work of common prefixes and skips every token
 * that starts with a prefix the grammar already refused. Special tokens and tokens without text are not here: a
 * grammar never allows them (an end id is allowed separately, where the grammar may end).
 */
public final class TokenVocabulary
{
    private final int rows;
    private final int[] ids;
    private final int[] offsets;
    private final byte[] bytes;
    private final int[] lcp;
    private final int maxLength;
    private final byte[][] byId;

    private TokenVocabulary(int rows, byte[][] byId)
    {
        this.rows = rows;
        this.byId = byId;
        Integer[] order = new Integer[byId.length];
        int count = 0;
        for (int id = 0; id < byId.length; id++) {
            if (byId[id] != null && byId[id].length > 0) {
                order[count++] = id;
            }
        }
        Integer[] sorted = Arrays.copyOf(order, count);
        Arrays.sort(sorted, Comparator.comparing((Integer id) -> byId[id], Arrays::compareUnsigned));
        this.ids = new int[count];
        this.offsets = new int[count + 1];
        this.lcp = new int[count];
        int total = 0;
        int longest = 0;
        for (int i = 0; i < count; i++) {
            ids[i] = sorted[i];
            total += byId[sorted[i]].length;
            longest = Math.max(longest, byId[sorted[i]].length);
        }
        this.maxLength = longest;
        this.bytes = new byte[total];
        int at = 0;
        for (int i = 0; i < count; i++) {
            byte[] token = byId[ids[i]];
            offsets[i] = at;
            System.arraycopy(token, 0, bytes, at, token.length);
            at += token.length;
            if (i > 0) {
                byte[] previous = byId[ids[i - 1]];
                int common = Arrays.mismatch(previous, token);
                lcp[i] = common < 0 ? token.length : common;
            }
        }
        offsets[count] = at;
    }

    /**
     * The tokens of {@code tokenizer} for a model whose logits have {@code rows} entries (a model may have more rows than
     * its tokenizer has tokens; those rows are never allowed).
     */
    public static TokenVocabulary of(Tokenizer tokenizer, int rows)
    {
        byte[][] byId = new byte[rows][];
        int known = Math.min(rows, tokenizer.vocabSize());
        for (int id = 0; id < known; id++) {
            if (!tokenizer.isSpecial(id)) {
                byId[id] = tokenizer.tokenBytes(id);
            }
        }
        return new TokenVocabulary(rows, byId);
    }

    /** For tests and benchmarks: token {@code i} is {@code tokens[i]} (null: a special token). */
    public static TokenVocabulary of(byte[][] tokens)
    {
        return new TokenVocabulary(tokens.length, tokens.clone());
    }

    /** The logits' length: token ids are below it. */
    public int rows()
    {
        return rows;
    }

    /** The bytes of token {@code id}; null for a special token or one with no text. */
    public byte[] bytes(int id)
    {
        byte[] token = id >= 0 && id < byId.length ? byId[id] : null;
        return token == null || token.length == 0 ? null : token;
    }

    int count()
    {
        return ids.length;
    }

    int id(int index)
    {
        return ids[index];
    }

    int offset(int index)
    {
        return offsets[index];
    }

    int length(int index)
    {
        return offsets[index + 1] - offsets[index];
    }

    int lcp(int index)
    {
        return lcp[index];
    }

    byte at(int position)
    {
        return bytes[position];
    }

    int maxLength()
    {
        return maxLength;
    }
}
