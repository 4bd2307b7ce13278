package io.handoff.router.prefix;

import java.util.Arrays;
import java.util.Comparator;
import java.util.HashMap;
import java.util.Map;
import java.util.TreeSet;

/**
 * An approximate radix tree of the prompts this router has sent one prefill (as {@link RouteKey} symbols): what that
 * prefill probably still has in its prefix cache. Approximate because the router sees neither the server's own
 * evictions nor its page granularity. Bounded: past {@code capacity} symbols in all, the least recently inserted
 * leaves are evicted whole (a key longer than the capacity is kept as its first {@code capacity} symbols).
 * Thread-safe.
 */
public final class PrefixTree
{
    private static final class Node
    {
        final long serial;
        Node parent;
        int[] edge;
        final Map<Integer, Node> children = new HashMap<>();
        long stamp;

        Node(long serial, Node parent, int[] edge)
        {
            this.serial = serial;
            this.parent = parent;
            this.edge = edge;
        }
    }

    private final long capacity;
    private final Node root = new Node(0, null, new int[0]);
    // Every node without children but the root, least recently inserted first.
    private final TreeSet<Node> leaves = new TreeSet<>(Comparator.<Node>comparingLong(node -> node.stamp).thenComparingLong(node -> node.serial));
    private long clock;
    private long serials;
    private long size;

    public PrefixTree(long capacity)
    {
        if (capacity < 1) {
            throw new IllegalArgumentException("capacity must be at least 1 symbol, was " + capacity);
        }
        this.capacity = capacity;
    }

    /** How many of {@code key}'s first symbols this tree holds. */
    public synchronized int match(int[] key)
    {
        Node node = root;
        int matched = 0;
        while (matched < key.length) {
            Node child = node.children.get(key[matched]);
            if (child == null) {
                return matched;
            }
            int common = common(child.edge, key, matched);
            matched += common;
            if (common < child.edge.length) {
                return matched;
            }
            node = child;
        }
        return matched;
    }

    /** Adds {@code key} (its first {@code capacity} symbols), as the most recently used; evicts old leaves past the capacity. */
    public synchronized void insert(int[] key)
    {
        int length = (int) Math.min(key.length, capacity);
        Node node = root;
        int at = 0;
        while (at < length) {
            touch(node);
            Node child = node.children.get(key[at]);
            if (child == null) {
                Node leaf = new Node(++serials, node, Arrays.copyOfRange(key, at, length));
                adopt(node, leaf);
                leaf.stamp = ++clock;
                leaves.add(leaf);
                size += leaf.edge.length;
                node = leaf;
                break;
            }
            int common = common(child.edge, key, at, length);
            if (common < child.edge.length) {
                child = split(node, child, common);
            }
            at += common;
            node = child;
        }
        touch(node);
        while (size > capacity) {
            evict(leaves.first());
        }
    }

    /** Symbols held, over every edge. */
    public synchronized long size()
    {
        return size;
    }

    /** Distinct keys' ends held (leaves). */
    synchronized int leafCount()
    {
        return leaves.size();
    }

    /** Cuts {@code child}'s edge after {@code at} symbols: the first part becomes a new node between it and {@code parent}. */
    private Node split(Node parent, Node child, int at)
    {
        Node middle = new Node(++serials, parent, Arrays.copyOf(child.edge, at));
        middle.stamp = child.stamp;
        parent.children.put(middle.edge[0], middle);
        child.edge = Arrays.copyOfRange(child.edge, at, child.edge.length);
        child.parent = middle;
        middle.children.put(child.edge[0], child);
        return middle;
    }

    private void adopt(Node parent, Node child)
    {
        if (parent != root && parent.children.isEmpty()) {
            leaves.remove(parent);
        }
        parent.children.put(child.edge[0], child);
    }

    private void touch(Node node)
    {
        if (node == root) {
            return;
        }
        boolean leaf = node.children.isEmpty();
        if (leaf) {
            leaves.remove(node);
        }
        node.stamp = ++clock;
        if (leaf) {
            leaves.add(node);
        }
    }

    private void evict(Node leaf)
    {
        leaves.remove(leaf);
        Node parent = leaf.parent;
        parent.children.remove(leaf.edge[0]);
        size -= leaf.edge.length;
        if (parent != root && parent.children.isEmpty()) {
            leaves.add(parent);
        }
    }

    private static int common(int[] edge, int[] key, int from)
    {
        return common(edge, key, from, key.length);
    }

    private static int common(int[] edge, int[] key, int from, int to)
    {
        int n = Math.min(edge.length, to - from);
        int i = 0;
        while (i < n && edge[i] == key[from + i]) {
            i++;
        }
        return i;
    }
}
