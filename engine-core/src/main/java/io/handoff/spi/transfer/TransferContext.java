package io.handoff.spi.transfer;

import java.nio.file.Path;

/**
 * What the core gives a backend when it opens one: identity, where shared files go, and the hooks the
 * backend calls on its data path. The hooks are the transfer path's fault-injection points; in
 * production they do nothing and cost nothing.
 */
public interface TransferContext
{
    /** An identifier of this host; equal on two processes exactly when they share memory. */
    String hostId();

    /** A folder for shared-memory files (e.g. under /dev/shm). */
    Path sharedMemoryDirectory();

    /** Call on the transfer thread immediately before reading the source pages of {@code chunk}. */
    default void beforeReadingChunk(RoomKey room, int chunk)
    {
    }

    /** Call after the page at room-relative {@code pageIndex} was read (and, for direct writes, written). */
    default void afterPage(RoomKey room, int pageIndex)
    {
    }
}
