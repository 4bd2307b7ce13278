package io.handoff.plugin.triton;

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

/** Attention backend "triton": two-stage split-KV flash-decoding over paged KV, MLA and GQA. */
public final class TritonProvider
        implements AttentionBackendProvider
{
    @Override
    public String id()
    {
        return "triton";
    }

    @Override
    public String description()
    {
        return "split-KV flash-decoding (kv_indptr / kv_indices / num_kv_splits) and extend attention";
    }

    @Override
    public AttentionCapabilities capabilities(PluginSettings settings)
    {
        return new AttentionCapabilities(EnumSet.of(KvLayout.MLA, KvLayout.GQA), 1, 256,
                EnumSet.of(KvDtype.F32, KvDtype.BF16), true, true);
    }

    @Override
    public Availability availability(PluginSettings settings)
    {
        return Availability.unavailable("the triton kernels are not implemented in this version of Handoff");
    }

    @Override
    public AttentionBackend create(AttentionGeometry geometry, KvCacheView kv, PluginSettings settings)
    {
        throw new UnsupportedOperationException(availability(settings).reason());
    }
}
