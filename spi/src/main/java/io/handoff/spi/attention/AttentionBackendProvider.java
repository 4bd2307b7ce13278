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

    /**
     * Binds kernels to a model's geometry and a KV pool. Called only when {@link #availability} said
     * available and {@link #capabilities} cover the layout, page size and dtype.
     */
    AttentionBackend create(AttentionGeometry geometry, KvCacheView kv, PluginSettings settings);

    @Override
    default List<String> capabilityNames(PluginSettings settings)
    {
        return capabilities(settings).names();
    }
}
