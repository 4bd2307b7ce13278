package io.handoff.core.kv;

/**
 * A snapshot of how many pages are in each {@link PageState}. Admission control reads it: only
 * {@link #free()} pages can be handed out; quarantined and receiving pages are memory in use even though
 * no running request may own them.
 */
public record PageAccounting(int total, int free, int owned, int receiving, int quarantined)
{
    public PageAccounting
    {
        if (free < 0 || owned < 0 || receiving < 0 || quarantined < 0 || free + owned + receiving + quarantined != total) {
            throw new IllegalArgumentException("page counts do not add up: total=" + total + " free=" + free + " owned=" + owned
                    + " receiving=" + receiving + " quarantined=" + quarantined);
        }
    }

    /** Pages not free: owned, receiving or quarantined. */
    public int used()
    {
        return total - free;
    }
}
