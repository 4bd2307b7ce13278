package io.handoff.spi.transfer;

import java.nio.file.Path;
import java.util.Optional;

import static java.util.Objects.requireNonNull;

/**
 * A receiver's KV pool as {@link TransferContext#describePool} described it to senders: the receiver's host, the
 * pool's shared file when it has one, and its page geometry. A sender reads it with {@link TransferContext#readPool}
 * (and maps the pool with {@link TransferContext#mapSharedPool} when it shares the receiver's host).
 */
public record PoolDescription(String hostId, Optional<Path> sharedFile, PageGeometry geometry)
{
    public PoolDescription
    {
        requireNonNull(hostId, "hostId is null");
        requireNonNull(sharedFile, "sharedFile is null");
        requireNonNull(geometry, "geometry is null");
    }
}
