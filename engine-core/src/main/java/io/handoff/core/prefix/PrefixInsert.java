package io.handoff.core.prefix;

import static java.util.Objects.requireNonNull;

/**
 * The outcome of {@link PrefixCache#insert}.
 *
 * @param prefix the cached prefix now covering the inserted page-aligned tokens: the pages the cache
 *         holds for them (a running request should read these) and the node to lock
 * @param duplicates the caller's pages whose tokens the cache already held under other pages; the
 *         caller still owns them and should release them
 */
public record PrefixInsert(PrefixMatch prefix, int[] duplicates)
{
    public PrefixInsert
    {
        requireNonNull(prefix, "prefix is null");
        requireNonNull(duplicates, "duplicates is null");
    }
}
