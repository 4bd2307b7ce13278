package com.example.handoff.loopback;

import io.handoff.spi.Availability;
import io.handoff.spi.PluginSettings;
import io.handoff.spi.transfer.TransferBackendProvider;
import io.handoff.spi.transfer.TransferCapability;

import java.util.EnumSet;
import java.util.Set;

/**
 * A third-party transfer provider in one class, for the engine's own tests of loading plugin JARs. It has no
 * data path (it keeps {@link TransferBackendProvider#open}'s default, which the core refuses to use for
 * transfers); {@code handoff sdk new-plugin --kind transfer} writes a project with a working backend. It
 * declares SAME_HOST and nothing else: a capability is a promise the core relies on for safety.
 */
public final class LoopbackTransferProvider
        implements TransferBackendProvider
{
    @Override
    public String id()
    {
        return "example-loopback";
    }

    @Override
    public String description()
    {
        return "example: a capability-only transfer provider with no data path (start a real backend with handoff sdk new-plugin)";
    }

    @Override
    public Set<TransferCapability> capabilities(PluginSettings settings)
    {
        return EnumSet.of(TransferCapability.SAME_HOST);
    }

    @Override
    public Availability availability(PluginSettings settings)
    {
        // Nothing native to probe: an in-process loopback runs wherever the JVM does. A real backend
        // checks its libraries and devices here and says what is missing, e.g.
        // Availability.unavailable("libfoo.so.1 not found: install libfoo1").
        return Availability.AVAILABLE;
    }
}
