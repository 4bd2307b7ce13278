package io.handoff.plugin.mori;

import io.handoff.spi.PluginSettings;
import io.handoff.spi.transfer.TransferCapability;

import java.util.EnumSet;
import java.util.Set;

import static io.handoff.spi.transfer.TransferCapability.DRAIN_ACK;
import static io.handoff.spi.transfer.TransferCapability.FORWARD_SYNC;
import static io.handoff.spi.transfer.TransferCapability.ONE_SIDED;
import static io.handoff.spi.transfer.TransferCapability.SAME_HOST;
import static io.handoff.spi.transfer.TransferCapability.HEAD_SLICES;

/**
 * The settings under {@code handoff.plugins.mori}, read once and checked. Every key is declared, with its
 * default and its schema line, in this module's {@code reference.conf}.
 *
 * @param forwardSync whether a connection waits on a plan's producer fence itself before reading its pages (and so
 *     declares FORWARD_SYNC); without it the core waits on the fence before it hands the plan over
 * @param maxCopyBytes the most bytes of one region that one copy of a run's pages moves (whole pages, at least one)
 */
record MoriConfig(boolean forwardSync, long maxCopyBytes)
{
    static final long MIN_COPY_BYTES = 4096;
    static final long MAX_COPY_BYTES = 1L << 30;

    MoriConfig
    {
        if (maxCopyBytes < MIN_COPY_BYTES || maxCopyBytes > MAX_COPY_BYTES) {
            throw new IllegalArgumentException("handoff.plugins.mori.max-copy-bytes = " + maxCopyBytes + ": allowed "
                    + MIN_COPY_BYTES + " (4KiB) .. " + MAX_COPY_BYTES + " (1GiB)");
        }
    }

    static MoriConfig from(PluginSettings settings)
    {
        return new MoriConfig(settings.getBoolean("forward-sync"), settings.getBytes("max-copy-bytes"));
    }

    /**
     * What the shared-memory path guarantees: writes land without the receiver (ONE_SIDED), copies are
     * synchronous on the transfer thread so a reported plan has nothing in flight (DRAIN_ACK), and
     * FORWARD_SYNC exactly when the connection waits on the fence itself. Never STAGING: pages go straight from the pool.
     */
    Set<TransferCapability> sharedMemoryCapabilities()
    {
        return sharedMemoryCapabilities(forwardSync);
    }

    static Set<TransferCapability> sharedMemoryCapabilities(boolean forwardSync)
    {
        Set<TransferCapability> capabilities = EnumSet.of(ONE_SIDED, SAME_HOST, DRAIN_ACK, HEAD_SLICES);
        if (forwardSync) {
            capabilities.add(FORWARD_SYNC);
        }
        return capabilities;
    }
}
