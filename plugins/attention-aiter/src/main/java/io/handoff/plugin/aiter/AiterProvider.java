package io.handoff.plugin.aiter;

import io.handoff.math.VectorApi;
import io.handoff.spi.Availability;
import io.handoff.spi.PluginSettings;
import io.handoff.spi.attention.AttentionBackend;
import io.handoff.spi.attention.AttentionBackendProvider;
import io.handoff.spi.attention.AttentionCapabilities;
import io.handoff.spi.attention.AttentionGeometry;
import io.handoff.spi.attention.KvCacheView;
import io.handoff.spi.attention.KvDtype;
import io.handoff.spi.attention.KvLayout;

import java.util.EnumSet;

import static java.util.Objects.requireNonNull;

/**
 * Attention backend "aiter": MLA only (absorbed: the query is in latent space, one latent KV head, V is
 * the latent prefix of the key row), decode and extend, F32, BF16 or F16 KV, pure Java on the Vector API.
 * Query heads are padded with zero heads to a multiple of 16; decode runs an explicit work/reduce
 * schedule of (request, split) items balanced over workers by key count.
 *
 * <p>Splits: {@code num_kv_splits(seq_len) = ceil(seq_len / 128)}, split {@code k} holding positions
 * {@code [128k, 128(k+1))}; extend uses the same boundaries per query. Results are deterministic and
 * batch- and chunk-invariant to the bit, independent of the worker count, and decode of position
 * {@code p} equals extend of position {@code p}. Against
 * the test kit's {@code ReferenceAttention} (double precision) the tests bound the max
 * absolute error by {@code 2e-6} for F32, BF16 and F16 KV alike, for KV in [-1, 1] and queries in [-2, 2].
 * The KV pool must be readable from any thread (a shared or global arena).
 */
public final class AiterProvider
        implements AttentionBackendProvider
{
    private static final AttentionCapabilities CAPABILITIES = new AttentionCapabilities(
            EnumSet.of(KvLayout.MLA), 1, 256, EnumSet.of(KvDtype.F32, KvDtype.BF16, KvDtype.F16), true, true);

    @Override
    public String id()
    {
        return "aiter";
    }

    @Override
    public String description()
    {
        return "MLA decode and extend, query heads padded to 16, explicit work/reduce schedule, num_kv_splits = ceil(seq_len / 128)";
    }

    @Override
    public AttentionCapabilities capabilities(PluginSettings settings)
    {
        return CAPABILITIES;
    }

    @Override
    public Availability availability(PluginSettings settings)
    {
        return VectorApi.missing().map(Availability::unavailable).orElse(Availability.AVAILABLE);
    }

    @Override
    public AttentionBackend create(AttentionGeometry geometry, KvCacheView kv, PluginSettings settings)
    {
        return create(geometry, kv, settings, Runtime.getRuntime().availableProcessors());
    }

    /** As {@link #create(AttentionGeometry, KvCacheView, PluginSettings)} with {@code workers} schedule workers. */
    AttentionBackend create(AttentionGeometry geometry, KvCacheView kv, PluginSettings settings, int workers)
    {
        requireNonNull(geometry, "geometry is null");
        requireNonNull(kv, "kv is null");
        if (geometry.layout() != KvLayout.MLA) {
            throw new IllegalArgumentException("attention backend 'aiter' supports only the MLA layout, not " + geometry.layout()
                    + ": use attention backend 'triton' for " + geometry.layout());
        }
        CAPABILITIES.refusal(id(), geometry.layout(), kv.pageSize(), kv.dtype()).ifPresent(reason -> {
            throw new IllegalArgumentException(reason);
        });
        if (!kv.valuesInKeyRow()) {
            throw new IllegalArgumentException("MLA needs a KV pool whose values are the latent prefix of the key row (valuesInKeyRow), but this pool stores V separately");
        }
        if (kv.keyRowElements() != geometry.qkDim() || kv.valueRowElements() != geometry.vDim()) {
            throw new IllegalArgumentException("the KV pool's latent rows are " + kv.keyRowElements() + " elements with a " + kv.valueRowElements()
                    + "-element value prefix, but the geometry needs kv_lora_rank + rope = " + geometry.qkDim() + " with a " + geometry.vDim() + "-element prefix");
        }
        Availability availability = availability(settings);
        if (!availability.available()) {
            throw new IllegalStateException(availability.reason());
        }
        return new AiterAttention(geometry, kv, workers);
    }
}
