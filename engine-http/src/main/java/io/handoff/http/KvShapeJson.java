package io.handoff.http;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.handoff.core.kv.KvGeometry;
import io.handoff.core.model.parallel.TensorShard;
import io.handoff.spi.attention.AttentionGeometry;
import io.handoff.spi.attention.KvLayout;

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
        put(parent, attention, pool, ranks, 1);
    }

    /** The same for a server of {@code dataParallel} data-parallel attention ranks: each holds its own requests' KV. */
    static void put(ObjectNode parent, AttentionGeometry attention, KvGeometry pool, int ranks, int dataParallel)
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
        layout.put("dp", dataParallel);
        boolean latent = attention.layout() == KvLayout.MLA;
        layout.put("kv_heads_per_rank", latent ? 1 : Math.max(1, attention.numKvHeads() / ranks));
        // which KV heads each rank holds (a head held by several ranks is replicated); MLA's latent is every rank's
        ArrayNode each = layout.putArray("ranks");
        for (int rank = 0; rank < ranks; rank++) {
            TensorShard shard = new TensorShard(rank, ranks);
            ObjectNode one = each.addObject();
            one.put("rank", rank);
            one.put("first_kv_head", latent ? 0 : shard.firstKvHead(attention.numKvHeads()));
            one.put("kv_heads", latent ? 1 : shard.kvHeadsPerRank(attention.numKvHeads()));
        }
    }
}
