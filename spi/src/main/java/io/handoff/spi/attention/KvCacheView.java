package io.handoff.spi.attention;

import java.lang.foreign.MemorySegment;

/**
 * The paged KV pool as attention kernels and transfer backends see it. Each layer has a key region and
 * a value region of {@link #slots()} rows; a row is one token's K (or V) for every KV head. With
 * {@link KvLayout#MLA} there is one latent row per token ({@code kv_lora_rank + rope_dim}) and the
 * value region is the key region: V is the first {@link #valueRowElements()} elements of that row.
 * Slot {@code s} belongs to page {@code s / pageSize()}.
 */
public interface KvCacheView
{
    int layers();

    int slots();

    int pageSize();

    KvDtype dtype();

    int keyRowElements();

    int valueRowElements();

    /** Whether V lives inside the key row (MLA), so {@link #values} returns the key region. */
    boolean valuesInKeyRow();

    MemorySegment keys(int layer);

    MemorySegment values(int layer);

    default long keyRowBytes()
    {
        return (long) keyRowElements() * dtype().bytes();
    }

    default long valueRowBytes()
    {
        return valuesInKeyRow() ? keyRowBytes() : (long) valueRowElements() * dtype().bytes();
    }

    default int pages()
    {
        return slots() / pageSize();
    }
}
