package io.handoff.core.prefix;

import static java.util.Objects.requireNonNull;

/**
 * A page-aligned prefix: its first {@code length} tokens live in {@code pages}
 * ({@code length == pages.length * pageSize}), and {@code node} is the handle to lock while a request
 * reads them.
 */
public record PrefixMatch(int length, int[] pages, PrefixNode node)
{
    public PrefixMatch
    {
        requireNonNull(pages, "pages is null");
        requireNonNull(node, "node is null");
        if (length < 0 || (pages.length == 0) != (length == 0) || (pages.length > 0 && length % pages.length != 0)) {
            throw new IllegalArgumentException("a prefix of " + length + " tokens cannot fill " + pages.length + " whole pages");
        }
    }

    public int pageCount()
    {
        return pages.length;
    }
}
