package io.handoff.plugin.mori;

import io.handoff.spi.Availability;
import io.handoff.spi.PluginSettings;
import io.handoff.spi.transfer.TransferBackend;
import io.handoff.spi.transfer.TransferBackendProvider;
import io.handoff.spi.transfer.TransferCapability;
import io.handoff.spi.transfer.TransferContext;

import java.util.EnumSet;
import java.util.Set;

import static io.handoff.spi.transfer.TransferCapability.FORWARD_SYNC;
import static io.handoff.spi.transfer.TransferCapability.ONE_SIDED;
import static io.handoff.spi.transfer.TransferCapability.SAME_HOST;

/**
 * Transfer backend "mori": writes pages straight from the source KV pool into the peer's memory, with
 * no staging copy. That is only safe for early send if the transfer thread waits on the producing
 * forward's fence, so FORWARD_SYNC is declared exactly when {@code forward-sync} is on; with it off the
 * backend models the unfixed field bug (seed 000) and the core must keep early send off.
 */
public final class MoriProvider
        implements TransferBackendProvider
{
    @Override
    public String id()
    {
        return "mori";
    }

    @Override
    public String description()
    {
        return "direct one-sided page writes from the KV pool (shared memory; ibverbs RDMA when a device exists)";
    }

    @Override
    public Set<TransferCapability> capabilities(PluginSettings settings)
    {
        Set<TransferCapability> capabilities = EnumSet.of(ONE_SIDED, SAME_HOST);
        if (settings.getBoolean("forward-sync")) {
            capabilities.add(FORWARD_SYNC);
        }
        return capabilities;
    }

    @Override
    public Availability availability(PluginSettings settings)
    {
        return Availability.unavailable("the mori data path is not implemented in this version of Handoff");
    }

    @Override
    public TransferBackend open(TransferContext context, PluginSettings settings)
    {
        throw new UnsupportedOperationException(availability(settings).reason());
    }
}
