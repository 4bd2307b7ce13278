package io.handoff.spi.attention;

/** How a model's KV cache rows are shaped. */
public enum KvLayout
{
    /** One K and one V row per query head. */
    MHA,
    /** Grouped-query attention: fewer KV heads than query heads. */
    GQA,
    /** Multi-head latent attention: one latent row ({@code kv_lora_rank + rope_dim}) per token, shared by all heads. */
    MLA
}
