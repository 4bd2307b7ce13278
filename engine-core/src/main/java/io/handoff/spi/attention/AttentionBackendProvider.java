package io.handoff.spi.attention;

import io.handoff.spi.HandoffProvider;
import io.handoff.spi.PluginSettings;
import io.handoff.spi.ProviderKind;

import java.util.List;

/** An attention-kernel backend: decode and extend (prefill) attention over the paged KV pool. */
public interface AttentionBackendProvider
        extends HandoffProvider
{
    @Override
    default ProviderKind kind()
    {
        return ProviderKind.ATTENTION;
    }

    AttentionCapabilities capabilities(PluginSettings settings);

    @Override
    default List<String> capabilityNames(PluginSettings settings)
    {
        return capabilities(settings).names();
    }
}
