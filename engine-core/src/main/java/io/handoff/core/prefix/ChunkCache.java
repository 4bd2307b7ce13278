package io.handoff.core.prefix;

import java.util.Arrays;

import static java.util.Objects.requireNonNull;

/**
 * The prefix cache when radix caching is disabled: nothing is shared between requests, so a new request
 * never matches anything. A running request's own finished chunks still become its prefix under chunked
 * prefill ({@link #insert} hands its own pages back as the prefix). That keeps one code path for the
 * scheduler, and it is why early send of the cached prefix fires on nearly every chunked request even
 * with no cache at all (seed 000).
 */
public final class ChunkCache
        implements PrefixCache
{
    private static final PrefixNode NONE = new PrefixNode() {};
    private static final int[] NO_PAGES = new int[0];

    private final int pageSize;

    public ChunkCache(int pageSize)
    {
        if (pageSize < 1) {
            throw new IllegalArgumentException("page size must be >= 1, was " + pageSize);
        }
        this.pageSize = pageSize;
    }

    @Override
    public int pageSize()
    {
        return pageSize;
    }

    @Override
    public PrefixMatch match(int[] tokens, int length)
    {
        requireNonNull(tokens, "tokens is null");
        return new PrefixMatch(0, NO_PAGES, NONE);
    }

    @Override
    public PrefixInsert insert(int[] tokens, int length, int[] pages)
    {
        requireNonNull(tokens, "tokens is null");
        requireNonNull(pages, "pages is null");
        if (length < 0 || length > tokens.length) {
            throw new IllegalArgumentException("length " + length + " outside tokens of length " + tokens.length);
        }
        int alignedPages = length / pageSize;
        if (pages.length < alignedPages) {
            throw new IllegalArgumentException(pages.length + " pages cannot hold " + length + " tokens of page size " + pageSize);
        }
        return new PrefixInsert(new PrefixMatch(alignedPages * pageSize, Arrays.copyOf(pages, alignedPages), NONE), NO_PAGES);
    }

    @Override
    public void lock(PrefixNode node)
    {
        checkOwn(node);
    }

    @Override
    public void unlock(PrefixNode node)
    {
        checkOwn(node);
    }

    @Override
    public int evict(int pages)
    {
        return 0;
    }

    @Override
    public int evictUntilFree(int freePages)
    {
        return 0;
    }

    @Override
    public int cachedPages()
    {
        return 0;
    }

    @Override
    public int lockedPages()
    {
        return 0;
    }

    private static void checkOwn(PrefixNode node)
    {
        if (requireNonNull(node, "node is null") != NONE) {
            throw new IllegalArgumentException("node " + node + " does not come from this chunk cache");
        }
    }
}
