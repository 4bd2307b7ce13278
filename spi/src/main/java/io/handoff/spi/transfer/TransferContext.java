package io.handoff.spi.transfer;

import java.nio.file.Path;

/** What the core gives a backend when it opens one: identity and where shared files go. */
public interface TransferContext
{
    /** An identifier of this host; equal on two processes exactly when they share memory. */
    String hostId();

    /** A folder for shared-memory files (e.g. under /dev/shm). */
    Path sharedMemoryDirectory();
}
