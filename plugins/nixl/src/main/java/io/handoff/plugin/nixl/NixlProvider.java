package io.handoff.plugin.nixl;

import io.handoff.spi.Availability;
import io.handoff.spi.PluginSettings;
import io.handoff.spi.transfer.TransferBackend;
import io.handoff.spi.transfer.TransferBackendProvider;
import io.handoff.spi.transfer.TransferCapability;
import io.handoff.spi.transfer.TransferContext;

import java.util.EnumSet;
import java.util.Set;

import static io.handoff.spi.transfer.TransferCapability.DRAIN_ACK;
import static io.handoff.spi.transfer.TransferCapability.FORWARD_SYNC;
import static io.handoff.spi.transfer.TransferCapability.HEAD_SLICES;
import static io.handoff.spi.transfer.TransferCapability.ONE_SIDED;
import static io.handoff.spi.transfer.TransferCapability.REMOTE;
import static io.handoff.spi.transfer.TransferCapability.SAME_HOST;
import static io.handoff.spi.transfer.TransferCapability.STAGING;

/**
 * Transfer backend "nixl": puts a plan's pages into the decode's registered pool with UCX ({@code ucp_put_nbx} +
 * flush; ONE_SIDED: the decode's write guard is never asked). With {@code staging = true} the pages are gathered into a
 * registered staging buffer after the producing forward's fence and put from the copy (STAGING; FORWARD_SYNC is not
 * claimed: the source is read once, into the copy, after the fence); with {@code staging = false} the sender's
 * transfer thread waits on the fence itself and puts from the registered source pool (FORWARD_SYNC, not STAGING).
 * Puts leave only from a peer's transfer thread and a plan is reported only after its flush completed at the
 * receiver, so a room with no plan outstanding has no write in flight (DRAIN_ACK).
 */
public final class NixlProvider
        implements TransferBackendProvider
{
    private static final String DEFAULT_LIBRARY = "libucp.so.0";
    private static final Set<TransferCapability> STAGED = Set.copyOf(EnumSet.of(STAGING, ONE_SIDED, DRAIN_ACK, REMOTE, SAME_HOST, HEAD_SLICES));
    private static final Set<TransferCapability> DIRECT = Set.copyOf(EnumSet.of(FORWARD_SYNC, ONE_SIDED, DRAIN_ACK, REMOTE, SAME_HOST, HEAD_SLICES));

    @Override
    public String id()
    {
        return "nixl";
    }

    /** Names the UCX version the default library ({@value #DEFAULT_LIBRARY}, as in reference.conf) provides, or why none. */
    @Override
    public String description()
    {
        UcxLibrary.Probe probe = UcxLibrary.probe(DEFAULT_LIBRARY, System.getenv("UCX_ERROR_SIGNALS"));
        String ucx = probe.version().map(version -> "UCX " + version + " from " + DEFAULT_LIBRARY).orElse("UCX not loaded");
        return "UCX one-sided puts (libucp via FFM) from a staging buffer snapshotted after the forward's fence, or from the source pool "
                + "after the sender waited on the fence (staging = false); " + ucx;
    }

    @Override
    public Set<TransferCapability> capabilities(PluginSettings settings)
    {
        return capabilities(settings.getBoolean("staging"));
    }

    private static Set<TransferCapability> capabilities(boolean staging)
    {
        return staging ? STAGED : DIRECT;
    }

    @Override
    public Availability availability(PluginSettings settings)
    {
        NixlConfig config;
        try {
            config = NixlConfig.from(settings);
        }
        catch (IllegalArgumentException e) {
            return Availability.unavailable(e.getMessage());
        }
        UcxLibrary.Probe probe = UcxLibrary.probe(config.library(), System.getenv("UCX_ERROR_SIGNALS"));
        if (probe.version().isEmpty()) {
            return Availability.unavailable(probe.failure());
        }
        return Availability.AVAILABLE;
    }

    @Override
    public TransferBackend open(TransferContext context, PluginSettings settings)
    {
        NixlConfig config = NixlConfig.from(settings);
        UcxLibrary.Probe probe = UcxLibrary.probe(config.library(), System.getenv("UCX_ERROR_SIGNALS"));
        if (probe.version().isEmpty()) {
            throw new IllegalStateException("transfer backend 'nixl' cannot open: " + probe.failure());
        }
        return new NixlBackend(context, config, capabilities(config.staging()), Ucp.load(config.library()));
    }
}
