package io.handoff.plugin.mori;

import io.handoff.spi.PluginSettings;
import io.handoff.spi.transfer.TransferCapability;

import java.util.EnumSet;
import java.util.Set;

import static io.handoff.spi.transfer.TransferCapability.DRAIN_ACK;
import static io.handoff.spi.transfer.TransferCapability.FORWARD_SYNC;
import static io.handoff.spi.transfer.TransferCapability.ONE_SIDED;
import static io.handoff.spi.transfer.TransferCapability.SAME_HOST;

/**
 * The settings under {@code handoff.plugins.mori}, read once and checked. Every key is declared, with its
 * default and its schema line, in this module's {@code reference.conf}.
 *
 * @param forwardSync whether a connection waits on a plan's producer fence itself before reading its pages (and so
 *     declares FORWARD_SYNC); without it the core waits on the fence before it hands the plan over
 */
record MoriConfig(boolean forwardSync)
{
    static MoriConfig from(PluginSettings settings)
    {
        return new MoriConfig(settings.getBoolean("forward-sync"));
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
        Set<TransferCapability> capabilities = EnumSet.of(ONE_SIDED, SAME_HOST, DRAIN_ACK);
        if (forwardSync) {
            capabilities.add(FORWARD_SYNC);
        }
        return capabilities;
    }
}
