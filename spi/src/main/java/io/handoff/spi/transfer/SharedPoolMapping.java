package io.handoff.spi.transfer;

import java.util.List;

/**
 * A same-host receiver's KV pool mapped into this process by the core ({@link TransferContext#mapSharedPool}): its
 * regions, writable, in the receiver's region order. Closing unmaps them; no segment may be used after that.
 */
public interface SharedPoolMapping
        extends AutoCloseable
{
    /** What the receiver described. */
    PoolDescription description();

    /** The receiver's regions, mapped here; region {@code i} is the receiver's region {@code i}. */
    List<MemoryRegion> regions();

    @Override
    void close();
}
