package io.handoff.dist.inprocess;

import io.handoff.spi.Availability;
import io.handoff.spi.PluginSettings;
import io.handoff.spi.transfer.TransferBackend;
import io.handoff.spi.transfer.TransferBackendProvider;
import io.handoff.spi.transfer.TransferCapability;
import io.handoff.spi.transfer.TransferContext;

import java.util.EnumSet;
import java.util.Set;

/**
 * A test-only transfer backend for a prefill and a decode in one JVM: the sender copies pages straight from its pool
 * into the receiver's. Its {@code behaviour} setting makes it keep the transfer protocol or break it in one named way,
 * so the tests can show what the core does about each (see {@link Behaviour}); {@code connection-capabilities}, set on
 * the decode, is what a connection to that decode reports, which may be narrower than this declaration.
 */
public final class InProcessProvider
        implements TransferBackendProvider
{
    public static final String ID = "test-inprocess";

    @Override
    public String id()
    {
        return ID;
    }

    @Override
    public String version()
    {
        return "test";
    }

    @Override
    public String description()
    {
        return "test-only in-process page copies that keep or break the transfer protocol on purpose";
    }

    @Override
    public Set<TransferCapability> capabilities(PluginSettings settings)
    {
        return EnumSet.of(TransferCapability.FORWARD_SYNC, TransferCapability.DRAIN_ACK, TransferCapability.SAME_HOST);
    }

    @Override
    public Availability availability(PluginSettings settings)
    {
        return Availability.AVAILABLE;
    }

    @Override
    public TransferBackend open(TransferContext context, PluginSettings settings)
    {
        return new InProcessBackend(Behaviour.valueOf(settings.getString("behaviour").toUpperCase(java.util.Locale.ROOT).replace('-', '_')),
                settings.getString("connection-capabilities"));
    }
}
