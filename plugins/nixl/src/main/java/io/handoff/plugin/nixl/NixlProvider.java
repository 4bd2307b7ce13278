package io.handoff.plugin.nixl;

import io.handoff.spi.Availability;
import io.handoff.spi.PluginSettings;
import io.handoff.spi.transfer.TransferBackend;
import io.handoff.spi.transfer.TransferBackendProvider;
import io.handoff.spi.transfer.TransferCapability;
import io.handoff.spi.transfer.TransferContext;

import java.util.EnumSet;
import java.util.Set;

import static io.handoff.spi.transfer.TransferCapability.ONE_SIDED;
import static io.handoff.spi.transfer.TransferCapability.REMOTE;
import static io.handoff.spi.transfer.TransferCapability.SAME_HOST;
import static io.handoff.spi.transfer.TransferCapability.STAGING;

/**
 * Transfer backend "nixl": gathers pages into a registered staging buffer after the producing
 * forward's fence and puts them to the peer with UCX ({@code ucp_put_nbx} + flush).
 */
public final class NixlProvider
        implements TransferBackendProvider
{
    @Override
    public String id()
    {
        return "nixl";
    }

    @Override
    public String description()
    {
        return "UCX one-sided puts (libucp via FFM) from a staging buffer snapshotted after the forward's fence";
    }

    @Override
    public Set<TransferCapability> capabilities(PluginSettings settings)
    {
        return EnumSet.of(STAGING, ONE_SIDED, REMOTE, SAME_HOST);
    }

    @Override
    public Availability availability(PluginSettings settings)
    {
        UcxLibrary.Probe probe = UcxLibrary.probe(settings.getString("library"), System.getenv("UCX_ERROR_SIGNALS"));
        if (probe.version().isEmpty()) {
            return Availability.unavailable(probe.failure());
        }
        return Availability.unavailable("UCX " + probe.version().get() + " found, but the nixl data path is not "
                + "implemented in this version of Handoff");
    }

    @Override
    public TransferBackend open(TransferContext context, PluginSettings settings)
    {
        throw new UnsupportedOperationException(availability(settings).reason());
    }
}
