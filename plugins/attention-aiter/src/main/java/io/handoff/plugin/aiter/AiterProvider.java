package io.handoff.plugin.aiter;

import io.handoff.spi.Availability;
import io.handoff.spi.PluginSettings;
import io.handoff.spi.attention.AttentionBackend;
import io.handoff.spi.attention.AttentionBackendProvider;
import io.handoff.spi.attention.AttentionCapabilities;
import io.handoff.spi.attention.AttentionGeometry;
import io.handoff.spi.attention.KvDtype;
import io.handoff.spi.attention.KvCacheView;
import io.handoff.spi.attention.KvLayout;

import java.util.EnumSet;

/** Attention backend "aiter": MLA absorbed decode with head padding and a precomputed work/reduce schedule. */
public final class AiterProvider
        implements AttentionBackendProvider
{
    @Override
    public String id()
    {
        return "aiter";
    }

    @Override
    public String description()
    {
        return "MLA decode, query heads padded to 16, explicit work/reduce schedule";
    }

    @Override
    public AttentionCapabilities capabilities(PluginSettings settings)
    {
        return new AttentionCapabilities(EnumSet.of(KvLayout.MLA), 1, 256, EnumSet.of(KvDtype.F32, KvDtype.BF16), true, true);
    }

    @Override
    public Availability availability(PluginSettings settings)
    {
        return Availability.unavailable("the aiter kernels are not implemented in this version of Handoff");
    }

    @Override
    public AttentionBackend create(AttentionGeometry geometry, KvCacheView kv, PluginSettings settings)
    {
        throw new UnsupportedOperationException(availability(settings).reason());
    }
}
