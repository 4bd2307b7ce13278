package io.handoff.testkit.transfer;

import io.handoff.core.transfer.PoolDescriptions;
import io.handoff.spi.transfer.MemoryRegion;
import io.handoff.spi.transfer.PoolDescription;
import io.handoff.spi.transfer.SharedPoolMapping;
import io.handoff.spi.transfer.TransferContext;

import java.nio.file.Path;
import java.util.List;

import static java.util.Objects.requireNonNull;

/**
 * What the core gives a backend it opens: a host id, the folder for shared files, and the core's own pool plumbing
 * (the engine's {@link PoolDescriptions}, not a copy). The core's hooks on the data path are not the context's: see
 * {@link RecordingHooks}.
 */
public record RecordingContext(String hostId, Path sharedMemoryDirectory)
        implements TransferContext
{
    public RecordingContext
    {
        requireNonNull(hostId, "hostId is null");
        requireNonNull(sharedMemoryDirectory, "sharedMemoryDirectory is null");
    }

    @Override
    public byte[] describePool(List<MemoryRegion> regions, Path sharedFile)
    {
        return PoolDescriptions.describe(hostId, regions, sharedFile);
    }

    @Override
    public PoolDescription readPool(byte[] description)
    {
        return PoolDescriptions.read(description);
    }

    @Override
    public SharedPoolMapping mapSharedPool(byte[] description)
    {
        // the test's folder stands in for the engine's run directory: pool files are mapped only from inside it
        return PoolDescriptions.map(hostId, description, sharedMemoryDirectory);
    }
}
