package io.handoff.core.transfer;

import io.handoff.spi.transfer.RoomKey;

/**
 * The core's points on a backend's data path, called through {@link io.handoff.spi.transfer.PlanWork}: the transfer
 * path's fault-injection points and transfer timing. In production they cost nothing.
 */
public interface TransferHooks
{
    TransferHooks NONE = new TransferHooks() {};

    /** On the transfer thread, immediately before the source pages of {@code chunk} are read. */
    default void beforeReadingChunk(RoomKey room, int chunk)
    {
    }

    /** After the page at room-relative {@code pageIndex} was read (and, for direct writes, written). */
    default void afterPage(RoomKey room, int pageIndex)
    {
    }

    /**
     * Whether {@link #afterPage} of this page may do something that depends on what was written (fail, park, look at
     * memory): a backend that writes pages in batches then ends a batch at it.
     */
    default boolean watchesPage(RoomKey room, int pageIndex)
    {
        return false;
    }
}
