package io.handoff.router.prefix;

import java.util.Arrays;

/**
 * What the router can read of a request to route it: the start of its prompt as symbols (a text's UTF-16 chars, or
 * token ids when the client sent {@code input_ids}; the router has no tokenizer), the whole prompt's length in the
 * same symbols, and the new tokens it asks for. The first symbol says which kind the rest are, so a text and a list of
 * ids never share a prefix.
 *
 * @param symbols the prompt's first symbols, bounded ({@code handoff.router.cache-aware.key-chars}), kind symbol first
 * @param promptLength the whole prompt's length in symbols, kind symbol excluded
 * @param maxNewTokens the new tokens asked for, or the servers' default when the request names none
 */
public record RouteKey(int[] symbols, long promptLength, int maxNewTokens)
{
    /** Leads a key of text chars. */
    static final int TEXT = -1;
    /** Leads a key of token ids. */
    static final int IDS = -2;
    /** The servers' {@code max_new_tokens} when a request names none (GenerateApi's default). */
    static final int DEFAULT_MAX_NEW_TOKENS = 128;

    /** A request whose prompt the router cannot read: it matches no prefix. */
    public static final RouteKey NONE = new RouteKey(new int[0], 0, DEFAULT_MAX_NEW_TOKENS);

    public RouteKey
    {
        symbols = symbols.clone();
        if (promptLength < 0 || maxNewTokens < 0) {
            throw new IllegalArgumentException("promptLength and maxNewTokens must not be negative, were " + promptLength + " and " + maxNewTokens);
        }
    }

    @Override
    public int[] symbols()
    {
        return symbols.clone();
    }

    /** The symbols without a copy, for the prefix trees (which never change them). */
    public int[] shared()
    {
        return symbols;
    }

    /**
     * The KV pages a decode holds for this request while it runs: {@code ceil((prompt + max new tokens) / pageSize)}
     * per generation. The prompt's length is in chars for a text, an overestimate of its tokens for most tokenizers.
     */
    public long pages(int pageSize, int generations)
    {
        if (pageSize < 1 || generations < 1) {
            throw new IllegalArgumentException("pageSize and generations must be at least 1, were " + pageSize + " and " + generations);
        }
        long tokens = promptLength + maxNewTokens;
        return Math.multiplyExact((tokens + pageSize - 1) / pageSize, (long) generations);
    }

    @Override
    public boolean equals(Object other)
    {
        return other instanceof RouteKey key && Arrays.equals(symbols, key.symbols) && promptLength == key.promptLength
                && maxNewTokens == key.maxNewTokens;
    }

    @Override
    public int hashCode()
    {
        return 31 * (31 * Arrays.hashCode(symbols) + Long.hashCode(promptLength)) + maxNewTokens;
    }

    @Override
    public String toString()
    {
        return "RouteKey[" + symbols.length + " symbols of " + promptLength + ", max new tokens " + maxNewTokens + "]";
    }
}
