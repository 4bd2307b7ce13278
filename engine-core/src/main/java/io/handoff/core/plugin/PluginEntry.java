package io.handoff.core.plugin;

import io.handoff.spi.HandoffProvider;

import java.util.List;
import java.util.Optional;

import static java.util.Objects.requireNonNull;

/**
 * One line of the plugin report: a provider that was found (available or not), or a JAR that could not
 * be loaded at all. Only an available entry carries a provider the engine may use.
 *
 * @param kind "transfer", "attention", or "unknown" for a JAR that failed before its providers were read
 * @param spiVersion the SPI version the provider reported, or null when it failed before reporting one (a JAR refused
 *        before its providers were read, a provider that could not be constructed or describe itself)
 * @param source "builtin", or the path of the JAR
 */
public record PluginEntry(
        String id,
        String kind,
        String version,
        Integer spiVersion,
        String source,
        boolean available,
        String reason,
        List<String> capabilities,
        String description,
        Optional<HandoffProvider> provider)
{
    public static final String BUILTIN = "builtin";

    public PluginEntry
    {
        requireNonNull(id, "id is null");
        requireNonNull(kind, "kind is null");
        requireNonNull(source, "source is null");
        capabilities = List.copyOf(capabilities);
        requireNonNull(provider, "provider is null");
        if (available && provider.isEmpty()) {
            throw new IllegalArgumentException("an available entry needs its provider");
        }
        if (!available && (reason == null || reason.isBlank())) {
            throw new IllegalArgumentException("an unavailable entry needs a reason");
        }
    }

    static PluginEntry failed(String id, String kind, String version, String source, String reason)
    {
        return new PluginEntry(id, kind, version == null ? "" : version, null, source, false, reason, List.of(), "", Optional.empty());
    }

    /** This entry, recording the SPI version its provider reported before it was found unusable. */
    PluginEntry withSpiVersion(Integer reported)
    {
        return new PluginEntry(id, kind, version, reported, source, available, reason, capabilities, description, provider);
    }

    public boolean builtin()
    {
        return BUILTIN.equals(source);
    }
}
