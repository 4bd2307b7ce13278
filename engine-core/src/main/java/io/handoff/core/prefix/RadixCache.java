package io.handoff.core.prefix;

import io.handoff.core.kv.PagePool;
import io.handoff.core.kv.PageState;

import java.util.ArrayDeque;
import java.util.Arrays;
import java.util.Comparator;
import java.util.HashMap;
import java.util.Map;
import java.util.TreeSet;

import static java.util.Objects.requireNonNull;

/**
 * A page-aligned radix tree over token ids. Each edge holds a whole number of pages of tokens and the
 * KV pages that hold them; children are keyed by their first page of tokens. The cache holds one
 * reference (in the {@link PagePool}) on every page it caches, so a page a running request also reads
 * has refcount 2 and stays valid whatever the cache does.
 *
 * <p>Lock refs run along the path to the root: a node is locked while any request reads it or a
 * descendant. Eviction drops unlocked leaves, least recently used first, by a logical clock that ticks
 * once per access (never wall time, so runs and tests are reproducible; ties go to the older node).
 * The unlocked leaves are kept in an ordered set, so eviction never walks the tree.
 *
 * <p>Not thread-safe: the scheduler thread owns it.
 */
public final class RadixCache
        implements PrefixCache
{
    private static final Comparator<Node> LEAST_RECENTLY_USED = Comparator.<Node>comparingLong(node -> node.lastAccess)
            .thenComparingLong(node -> node.id);

    private final int pageSize;
    private final PagePool pool;
    private final Node root;
    // exactly the unlocked leaves other than the root; a node's lastAccess changes only while it is out of the set
    private final TreeSet<Node> evictable = new TreeSet<>(LEAST_RECENTLY_USED);
    private long clock;
    private long nextNodeId;
    private int cachedPages;
    private int lockedPages;

    public RadixCache(int pageSize, PagePool pool)
    {
        if (pageSize < 1) {
            throw new IllegalArgumentException("page size must be >= 1, was " + pageSize);
        }
        this.pageSize = pageSize;
        this.pool = requireNonNull(pool, "pool is null");
        this.root = new Node(null, new int[0], new int[0]);
    }

    @Override
    public int pageSize()
    {
        return pageSize;
    }

    @Override
    public PrefixMatch match(int[] tokens, int length)
    {
        checkTokens(tokens, length);
        long tick = ++clock;
        int limit = length / pageSize * pageSize;
        int[] pages = new int[limit / pageSize];
        Node node = root;
        int position = 0;
        while (position < limit) {
            Node child = node.children.get(new PageKey(tokens, position, pageSize));
            if (child == null) {
                break;
            }
            int matched = matchingPages(child, tokens, position, limit);
            if (matched < child.pages.length) {
                child = split(child, matched);
            }
            touch(child, tick);
            System.arraycopy(child.pages, 0, pages, position / pageSize, matched);
            position += matched * pageSize;
            node = child;
        }
        return new PrefixMatch(position, Arrays.copyOf(pages, position / pageSize), node);
    }

    @Override
    public PrefixInsert insert(int[] tokens, int length, int[] pages)
    {
        checkTokens(tokens, length);
        requireNonNull(pages, "pages is null");
        int alignedPages = length / pageSize;
        int limit = alignedPages * pageSize;
        if (pages.length < alignedPages) {
            throw new IllegalArgumentException(pages.length + " pages cannot hold " + length + " tokens of page size " + pageSize);
        }
        long tick = ++clock;
        int[] canonical = new int[alignedPages];
        int[] duplicates = new int[alignedPages];
        int duplicateCount = 0;
        Node node = root;
        int position = 0;
        while (position < limit) {
            int page = position / pageSize;
            Node child = node.children.get(new PageKey(tokens, position, pageSize));
            if (child == null) {
                node = addLeaf(node, Arrays.copyOfRange(tokens, position, limit), Arrays.copyOfRange(pages, page, alignedPages), tick);
                System.arraycopy(node.pages, 0, canonical, page, node.pages.length);
                break;
            }
            int matched = matchingPages(child, tokens, position, limit);
            if (matched < child.pages.length) {
                child = split(child, matched);
            }
            touch(child, tick);
            for (int i = 0; i < matched; i++) {
                canonical[page + i] = child.pages[i];
                if (pages[page + i] != child.pages[i]) {
                    duplicates[duplicateCount++] = pages[page + i];
                }
            }
            position += matched * pageSize;
            node = child;
        }
        return new PrefixInsert(new PrefixMatch(limit, canonical, node), Arrays.copyOf(duplicates, duplicateCount));
    }

    @Override
    public void lock(PrefixNode handle)
    {
        Node node = own(handle);
        for (Node n = node; n != root; n = n.parent) {
            if (n.lockRef++ == 0) {
                lockedPages += n.pages.length;
                evictable.remove(n);
            }
        }
    }

    @Override
    public void unlock(PrefixNode handle)
    {
        Node node = own(handle);
        if (node != root && node.lockRef == 0) {
            throw new IllegalStateException("unlock without a matching lock on a prefix of " + node.depthPages() + " pages");
        }
        for (Node n = node; n != root; n = n.parent) {
            if (--n.lockRef == 0) {
                lockedPages -= n.pages.length;
                refreshEvictable(n);
            }
        }
    }

    @Override
    public int evict(int pages)
    {
        int evicted = 0;
        while (evicted < pages && !evictable.isEmpty()) {
            evicted += drop(evictable.first());
        }
        return evicted;
    }

    @Override
    public int evictUntilFree(int freePages)
    {
        int evicted = 0;
        while (pool.freePages() < freePages && !evictable.isEmpty()) {
            evicted += drop(evictable.first());
        }
        return evicted;
    }

    @Override
    public int cachedPages()
    {
        return cachedPages;
    }

    @Override
    public int lockedPages()
    {
        return lockedPages;
    }

    /** The ids of every cached page, ascending. O(cached pages); for probes and tests. */
    public int[] cachedPageIds()
    {
        int[] ids = new int[cachedPages];
        int count = 0;
        ArrayDeque<Node> pending = new ArrayDeque<>(root.children.values());
        while (!pending.isEmpty()) {
            Node node = pending.pop();
            System.arraycopy(node.pages, 0, ids, count, node.pages.length);
            count += node.pages.length;
            pending.addAll(node.children.values());
        }
        Arrays.sort(ids);
        return ids;
    }

    /**
     * Checks the tree's invariants and throws {@link IllegalStateException} naming the first violation:
     * edges are whole pages keyed by their first page, parent links and page counts agree, a node's lock
     * count covers its children's, the evictable set is exactly the unlocked leaves, and every cached page
     * appears once and is owned in the pool. O(cached pages); for tests and probes.
     */
    public void checkInvariants()
    {
        int pages = 0;
        int locked = 0;
        int leaves = 0;
        int[] ids = cachedPageIds();
        for (int i = 1; i < ids.length; i++) {
            if (ids[i] == ids[i - 1]) {
                throw new IllegalStateException("page " + ids[i] + " is cached twice");
            }
        }
        ArrayDeque<Node> pending = new ArrayDeque<>(root.children.values());
        while (!pending.isEmpty()) {
            Node node = pending.pop();
            if (node.pages.length < 1 || node.tokens.length != node.pages.length * pageSize) {
                throw new IllegalStateException("node " + node.id + " holds " + node.tokens.length + " tokens in " + node.pages.length + " pages");
            }
            if (node.parent.children.get(new PageKey(node.tokens, 0, pageSize)) != node) {
                throw new IllegalStateException("node " + node.id + " is not under its first page in its parent");
            }
            int childLocks = 0;
            for (Node child : node.children.values()) {
                if (child.parent != node) {
                    throw new IllegalStateException("node " + child.id + " has a wrong parent link");
                }
                childLocks += child.lockRef;
            }
            if (node.lockRef < childLocks) {
                throw new IllegalStateException("node " + node.id + " has " + node.lockRef + " locks but its children hold " + childLocks);
            }
            boolean shouldBeEvictable = node.children.isEmpty() && node.lockRef == 0;
            if (evictable.contains(node) != shouldBeEvictable) {
                throw new IllegalStateException("node " + node.id + " evictable set membership is wrong (lockRef " + node.lockRef + ")");
            }
            leaves += shouldBeEvictable ? 1 : 0;
            pages += node.pages.length;
            locked += node.lockRef > 0 ? node.pages.length : 0;
            for (int page : node.pages) {
                if (pool.state(page) != PageState.OWNED) {
                    throw new IllegalStateException("cached page " + page + " is " + pool.state(page) + " in the pool");
                }
            }
            pending.addAll(node.children.values());
        }
        if (pages != cachedPages || locked != lockedPages || leaves != evictable.size()) {
            throw new IllegalStateException("counts drifted: cached " + cachedPages + " vs " + pages + ", locked " + lockedPages + " vs " + locked
                    + ", evictable leaves " + evictable.size() + " vs " + leaves);
        }
    }

    private Node addLeaf(Node parent, int[] tokens, int[] pages, long tick)
    {
        // the pool refuses pages that are not owned (or repeated) before the tree changes
        pool.retain(pages);
        Node leaf = new Node(parent, tokens, pages);
        leaf.lastAccess = tick;
        parent.children.put(new PageKey(tokens, 0, pageSize), leaf);
        evictable.remove(parent);
        evictable.add(leaf);
        cachedPages += pages.length;
        return leaf;
    }

    // splits node after its first `pages` pages; returns the new upper node, which takes node's place
    private Node split(Node node, int pages)
    {
        int tokens = pages * pageSize;
        Node parent = node.parent;
        parent.children.remove(new PageKey(node.tokens, 0, pageSize));
        Node upper = new Node(parent, Arrays.copyOf(node.tokens, tokens), Arrays.copyOf(node.pages, pages));
        // every lock on node is a lock through upper; the pages only move between the two
        upper.lockRef = node.lockRef;
        upper.lastAccess = node.lastAccess;
        node.tokens = Arrays.copyOfRange(node.tokens, tokens, node.tokens.length);
        node.pages = Arrays.copyOfRange(node.pages, pages, node.pages.length);
        node.parent = upper;
        upper.children.put(new PageKey(node.tokens, 0, pageSize), node);
        parent.children.put(new PageKey(upper.tokens, 0, pageSize), upper);
        return upper;
    }

    private int drop(Node leaf)
    {
        evictable.remove(leaf);
        pool.release(leaf.pages);
        Node parent = leaf.parent;
        parent.children.remove(new PageKey(leaf.tokens, 0, pageSize));
        leaf.parent = null;
        cachedPages -= leaf.pages.length;
        refreshEvictable(parent);
        return leaf.pages.length;
    }

    private void touch(Node node, long tick)
    {
        boolean inSet = evictable.remove(node);
        node.lastAccess = tick;
        if (inSet) {
            evictable.add(node);
        }
    }

    private void refreshEvictable(Node node)
    {
        if (node != root && node.lockRef == 0 && node.children.isEmpty()) {
            evictable.add(node);
        }
        else {
            evictable.remove(node);
        }
    }

    // how many whole pages of node's edge equal tokens[position ..], within limit
    private int matchingPages(Node node, int[] tokens, int position, int limit)
    {
        int pages = 0;
        while (pages < node.pages.length && position + (pages + 1) * pageSize <= limit) {
            int from = pages * pageSize;
            if (!Arrays.equals(node.tokens, from, from + pageSize, tokens, position + from, position + from + pageSize)) {
                break;
            }
            pages++;
        }
        return pages;
    }

    private Node own(PrefixNode handle)
    {
        requireNonNull(handle, "node is null");
        if (!(handle instanceof Node node) || node.owner() != this) {
            throw new IllegalArgumentException("node " + handle + " does not come from this radix cache");
        }
        if (node != root && node.parent == null) {
            throw new IllegalStateException("the prefix of node " + node.id + " was evicted; match again before locking");
        }
        return node;
    }

    private static void checkTokens(int[] tokens, int length)
    {
        requireNonNull(tokens, "tokens is null");
        if (length < 0 || length > tokens.length) {
            throw new IllegalArgumentException("length " + length + " outside tokens of length " + tokens.length);
        }
    }

    private final class Node
            implements PrefixNode
    {
        final long id = nextNodeId++;
        final Map<PageKey, Node> children = new HashMap<>();
        Node parent;
        int[] tokens;
        int[] pages;
        int lockRef;
        long lastAccess;

        Node(Node parent, int[] tokens, int[] pages)
        {
            this.parent = parent;
            this.tokens = tokens;
            this.pages = pages;
        }

        RadixCache owner()
        {
            return RadixCache.this;
        }

        int depthPages()
        {
            int depth = 0;
            for (Node n = this; n != null; n = n.parent) {
                depth += n.pages.length;
            }
            return depth;
        }

        @Override
        public String toString()
        {
            return "RadixNode[" + id + ", " + pages.length + " pages, lockRef " + lockRef + "]";
        }
    }

    /** One page of tokens inside some array, compared by content without copying it. */
    private static final class PageKey
    {
        private final int[] tokens;
        private final int offset;
        private final int length;
        private final int hash;

        PageKey(int[] tokens, int offset, int length)
        {
            this.tokens = tokens;
            this.offset = offset;
            this.length = length;
            int h = 1;
            for (int i = offset; i < offset + length; i++) {
                h = 31 * h + tokens[i];
            }
            this.hash = h;
        }

        @Override
        public boolean equals(Object o)
        {
            return o instanceof PageKey other && hash == other.hash && length == other.length
                    && Arrays.equals(tokens, offset, offset + length, other.tokens, other.offset, other.offset + length);
        }

        @Override
        public int hashCode()
        {
            return hash;
        }
    }
}
