package io.handoff.core.prefix;

/**
 * Token-prefix -> KV pages, page-aligned: only whole pages are ever shared.
 *
 * <p>Protocol for a request (the same for every implementation):
 * <ol>
 * <li>Admission: {@code m = match(tokens, tokens.length - 1)}; retain {@code m.pages()} in the
 * {@link io.handoff.core.kv.PagePool} and {@code lock(m.node())}; allocate pages for the rest.</li>
 * <li>After each chunk of chunked prefill: {@code r = insert(tokens, computed, pages)}; release
 * {@code r.duplicates()} and retain the prefix pages that replaced them; {@code unlock} the old node and
 * {@code lock(r.prefix().node())}. The request's prefix is now {@code r.prefix()}: pages that are
 * final, which is what early send of the cached prefix may send before the next chunk's forward ends.</li>
 * <li>Finish: {@code insert} once more, release the duplicates, unlock, release every page the request holds.</li>
 * </ol>
 * Locked prefixes are never evicted. Not thread-safe: the scheduler thread owns it.
 */
public interface PrefixCache
{
    int pageSize();

    /** The longest cached page-aligned prefix of {@code tokens[0, length)}. Counts as an access for LRU. */
    PrefixMatch match(int[] tokens, int length);

    default PrefixMatch match(int[] tokens)
    {
        return match(tokens, tokens.length);
    }

    /**
     * Offers the page-aligned part of {@code tokens[0, length)}, whose KV is in {@code pages} (the
     * request's page list from position 0), to the cache. The caller's references are untouched.
     */
    PrefixInsert insert(int[] tokens, int length, int[] pages);

    /** Protects the prefix ending at {@code node} from eviction until a matching {@link #unlock}. */
    void lock(PrefixNode node);

    void unlock(PrefixNode node);

    /**
     * Drops least recently used, unlocked prefixes until at least {@code pages} cached pages are gone
     * or nothing is evictable, releasing the cache's references in the page pool.
     *
     * @return how many cached pages were dropped (whole nodes, so possibly more than asked)
     */
    int evict(int pages);

    /**
     * Drops least recently used, unlocked prefixes until the page pool has at least {@code freePages}
     * free pages or nothing is evictable.
     *
     * @return how many cached pages were dropped
     */
    int evictUntilFree(int freePages);

    /** Pages the cache holds a reference on. */
    int cachedPages();

    /** Cached pages under some lock. */
    int lockedPages();

    /** Cached pages no lock protects: what eviction can eventually return. */
    default int evictablePages()
    {
        return cachedPages() - lockedPages();
    }
}
