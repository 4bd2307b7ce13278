package io.handoff.http;

import com.fasterxml.jackson.databind.node.ObjectNode;
import io.handoff.core.kv.KvGeometry;
import io.handoff.spi.attention.AttentionGeometry;

import static java.util.Objects.requireNonNull;

/**
 * The {@code kv} object of {@code GET /bootstrap}: what one token's KV is in this server's pool, and so what a
 * prefill sends per prompt token. With MLA it is one latent "head" of {@code kv_lora_rank + qk_rope_head_dim}
 * elements whose value is the latent prefix, not the per-head K and V a decompressed cache would hold.
 */
final class KvShapeJson
{
    private KvShapeJson() {}

    static void put(ObjectNode parent, AttentionGeometry attention, KvGeometry pool)
    {
        requireNonNull(attention, "attention is null");
        requireNonNull(pool, "pool is null");
        ObjectNode kv = parent.putObject("kv");
        kv.put("layout", attention.layout().name());
        kv.put("heads", attention.numKvHeads());
        kv.put("head_dim", attention.qkDim());
        kv.put("v_head_dim", attention.vDim());
        kv.put("values_in_key_row", pool.valuesInKeyRow());
        kv.put("layers", pool.layers());
        kv.put("dtype", pool.dtype().name());
        kv.put("page_size", pool.pageSize());
        kv.put("bytes_per_token", pool.bytesPerPage() / pool.pageSize());
        kv.put("bytes_per_page", pool.bytesPerPage());
    }
}
