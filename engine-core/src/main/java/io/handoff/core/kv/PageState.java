package io.handoff.core.kv;

/**
 * Where a page is in its life. {@code FREE -> OWNED -> (RECEIVING -> OWNED) -> FREE}, and
 * {@code OWNED | RECEIVING -> QUARANTINED -> FREE} when a remote writer may still write into the page
 * (invariant I2): a quarantined page is neither free nor usable until a {@link ReleaseProof} says no
 * write can land any more.
 */
public enum PageState
{
    /** In the free list, refcount 0; the next allocation may hand it out. */
    FREE,
    /** Held by one or more owners (a request, the prefix cache), refcount >= 1. */
    OWNED,
    /** Exclusively owned (refcount 1) and the destination of a transfer that has not committed yet. */
    RECEIVING,
    /** Owned by no one and not reusable: a write into it may still land. Refcount 0, not in the free list. */
    QUARANTINED
}
