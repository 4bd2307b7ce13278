package io.handoff.testkit.transfer;

import io.handoff.spi.transfer.TransferContext;

import java.nio.file.Path;

import static java.util.Objects.requireNonNull;

/**
 * What the core gives a backend it opens: a host id and the folder for shared files. The core's hooks on the data
 * path are not the context's any more: see {@link RecordingHooks}.
 */
public record RecordingContext(String hostId, Path sharedMemoryDirectory)
        implements TransferContext
{
    public RecordingContext
    {
        requireNonNull(hostId, "hostId is null");
        requireNonNull(sharedMemoryDirectory, "sharedMemoryDirectory is null");
    }
}
