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
        put(parent, attention, pool, 1);
    }

    /**
     * The same for a server of {@code ranks} tensor-parallel ranks, {@code pool} being one rank's: a token's KV is then
     * every rank's row (a KV head held by several ranks counted on each), and {@code layout} says how it is split.
     */
    static void put(ObjectNode parent, AttentionGeometry attention, KvGeometry pool, int ranks)
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
        kv.put("bytes_per_token", ranks * (pool.bytesPerPage() / pool.pageSize()));
        kv.put("bytes_per_page", ranks * pool.bytesPerPage());
        ObjectNode layout = parent.putObject("layout");
        layout.put("tp", ranks);
        layout.put("dp", 1);
        layout.put("kv_heads_per_rank", attention.layout() == io.handoff.spi.attention.KvLayout.MLA ? 1
                : Math.max(1, attention.numKvHeads() / ranks));
    }
}
