package io.handoff.plugin.triton;

import io.handoff.math.VectorApi;
import io.handoff.spi.Availability;
import io.handoff.spi.PluginSettings;
import io.handoff.spi.attention.AttentionArithmetic;
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
 * Attention backend "triton": two-stage split-KV flash-decoding and tiled extend over paged KV, for
 * MLA (absorbed: one latent KV head, V is the latent prefix of the key row), GQA and MHA, with F32,
 * BF16 or F16 KV. Pure Java on the Vector API.
 *
 * <p>Splits: {@code num_kv_splits(seq_len) = ceil(seq_len / 256)}, split {@code k} holding positions
 * {@code [256k, 256(k+1))}; extend tiles use the same boundaries. Results are deterministic and batch-
 * and chunk-invariant to the bit, and decode of position {@code p} equals extend of position {@code p}.
 * Against the test kit's {@code ReferenceAttention} (double precision) the tests bound the
 * max absolute error by {@code 2e-6} for F32, BF16 and F16 KV alike (the reference reads the same 16-bit values), for
 * KV in [-1, 1] and queries in [-2, 2]. The KV pool must be readable from any thread
 * (a shared or global arena): splits run on the fork-join pool. Both arithmetics: {@code F32} and llama.cpp's F16 flash
 * attention ({@code LLAMA_CPP_F16}, each split's partial as llama.cpp computes a query row).
 */
public final class TritonProvider
        implements AttentionBackendProvider
{
    private static final AttentionCapabilities CAPABILITIES = new AttentionCapabilities(
            EnumSet.of(KvLayout.MHA, KvLayout.GQA, KvLayout.MLA), 1, 256, EnumSet.of(KvDtype.F32, KvDtype.BF16, KvDtype.F16), true, true,
            EnumSet.allOf(AttentionArithmetic.class));

    @Override
    public String id()
    {
        return "triton";
    }

    @Override
    public String description()
    {
        return "split-KV flash-decoding (kv_indptr / kv_indices / num_kv_splits = ceil(seq_len / 256)) and extend attention";
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
        requireNonNull(geometry, "geometry is null");
        requireNonNull(kv, "kv is null");
        CAPABILITIES.refusal(id(), geometry, kv.pageSize(), kv.dtype()).ifPresent(reason -> {
            throw new IllegalArgumentException(reason);
        });
        if (kv.keyRowElements() != geometry.keyRowElements()) {
            throw new IllegalArgumentException("the KV pool's key rows have " + kv.keyRowElements() + " elements but the geometry needs "
                    + geometry.numKvHeads() + " KV heads x " + geometry.qkDim() + " = " + geometry.keyRowElements());
        }
        if (kv.valueRowElements() != geometry.valueRowElements()) {
            throw new IllegalArgumentException("the KV pool's value rows have " + kv.valueRowElements() + " elements but the geometry needs "
                    + geometry.numKvHeads() + " KV heads x " + geometry.vDim() + " = " + geometry.valueRowElements());
        }
        boolean mla = geometry.layout() == KvLayout.MLA;
        if (kv.valuesInKeyRow() != mla) {
            throw new IllegalArgumentException(mla
                    ? "MLA needs a KV pool whose values are the latent prefix of the key row (valuesInKeyRow), but this pool stores V separately"
                    : geometry.layout() + " needs a KV pool with a separate value region, but this pool keeps V inside the key row");
        }
        Availability availability = availability(settings);
        if (!availability.available()) {
            throw new IllegalStateException(availability.reason());
        }
        return new TritonAttention(geometry, kv);
    }
}
