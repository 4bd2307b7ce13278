package io.handoff.spi;

import java.util.List;

/**
 * What every plugin provider reports about itself. Providers are found with
 * {@link java.util.ServiceLoader}: built-ins through {@code provides} in their {@code module-info},
 * third-party JARs through {@code META-INF/services}. A provider must be cheap to construct; anything
 * that touches native libraries or devices belongs in {@link #availability}.
 */
public interface HandoffProvider
{
    /** Stable identifier, lower case, used in configuration ({@code handoff.plugins.<id>}) and on the command line. */
    String id();

    ProviderKind kind();

    /**
     * The provider's own version: by default its module's version, else its JAR manifest's
     * {@code Implementation-Version}.
     */
    default String version()
    {
        Module module = getClass().getModule();
        if (module.isNamed() && module.getDescriptor().rawVersion().isPresent()) {
            return module.getDescriptor().rawVersion().get();
        }
        String implementation = getClass().getPackage().getImplementationVersion();
        return implementation != null ? implementation : "unversioned";
    }

    /** The SPI version the provider was built against. */
    default int spiVersion()
    {
        return Spi.VERSION;
    }

    /** One line saying what this provider is. */
    default String description()
    {
        return "";
    }

    /**
     * The capabilities the provider declares under these settings, as names from the SPI's
     * vocabulary. Capabilities are promises the core relies on for safety decisions: declare one only
     * if the provider's tests prove it.
     */
    List<String> capabilityNames(PluginSettings settings);

    /** Probes the machine (native libraries, devices) and says whether the provider can run. May be slow; called once. */
    Availability availability(PluginSettings settings);
}
