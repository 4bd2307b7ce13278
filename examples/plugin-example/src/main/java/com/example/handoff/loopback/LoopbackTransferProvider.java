package com.example.handoff.loopback;

import io.handoff.spi.Availability;
import io.handoff.spi.PluginSettings;
import io.handoff.spi.transfer.TransferBackendProvider;
import io.handoff.spi.transfer.TransferCapability;

import java.util.EnumSet;
import java.util.Set;

/**
 * A third-party transfer backend in one class: the template for writing your own. It moves pages
 * within one process, so it declares SAME_HOST and nothing else; a capability is a promise the core
 * relies on for safety, so declare only what your tests prove.
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
        return "template plugin: in-process loopback (there is no data-path SPI yet; copy this to start a backend)";
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
