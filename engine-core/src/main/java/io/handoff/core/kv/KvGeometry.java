package io.handoff.core.kv;

import io.handoff.spi.attention.AttentionGeometry;
import io.handoff.spi.attention.KvDtype;
import io.handoff.spi.attention.KvLayout;

import static java.util.Objects.requireNonNull;

/**
 * The shape of a KV pool, independent of how many pages it has: per layer a key region and (unless V
 * lives in the key row, as with MLA) a value region, each a row per token slot.
 */
public record KvGeometry(int layers, int keyRowElements, int valueRowElements, boolean valuesInKeyRow, KvDtype dtype, int pageSize)
{
    public static final int MAX_PAGE_SIZE = 256;
    /** Every region starts on this boundary, so vector loads of a row never straddle a cache line start. */
    public static final int REGION_ALIGNMENT = 64;

    public KvGeometry
    {
        requireNonNull(dtype, "dtype is null");
        if (layers < 1 || keyRowElements < 1 || valueRowElements < 1) {
            throw new IllegalArgumentException("bad KV geometry: layers=" + layers + " keyRow=" + keyRowElements + " valueRow=" + valueRowElements);
        }
        if (pageSize < 1 || pageSize > MAX_PAGE_SIZE) {
            throw new IllegalArgumentException("page size must be 1.." + MAX_PAGE_SIZE + ", was " + pageSize);
        }
        if (valuesInKeyRow && valueRowElements > keyRowElements) {
            throw new IllegalArgumentException("value row " + valueRowElements + " does not fit in key row " + keyRowElements);
        }
    }

    /** The pool geometry for a model's attention: MLA keeps V inside the latent key row. */
    public static KvGeometry of(AttentionGeometry attention, int layers, KvDtype dtype, int pageSize)
    {
        requireNonNull(attention, "attention is null");
        return new KvGeometry(layers, attention.keyRowElements(), attention.valueRowElements(), attention.layout() == KvLayout.MLA, dtype, pageSize);
    }

    public int regionsPerLayer()
    {
        return valuesInKeyRow ? 1 : 2;
    }

    public int regions()
    {
        return layers * regionsPerLayer();
    }

    public long keyRowBytes()
    {
        return (long) keyRowElements * dtype.bytes();
    }

    /** Bytes of one value row, 0 when V lives in the key row (it takes no memory of its own). */
    public long valueRowBytes()
    {
        return valuesInKeyRow ? 0 : (long) valueRowElements * dtype.bytes();
    }

    /** Bytes one page occupies in one key region. */
    public long keyPageStride()
    {
        return pageSize * keyRowBytes();
    }

    /** Bytes one page occupies in one value region (the key stride when V lives in the key row). */
    public long valuePageStride()
    {
        return valuesInKeyRow ? keyPageStride() : pageSize * valueRowBytes();
    }

    /** Bytes one page occupies across every region of every layer. */
    public long bytesPerPage()
    {
        return layers * (long) pageSize * (keyRowBytes() + valueRowBytes());
    }

    /** Bytes a pool of {@code pages} pages needs, each region rounded up to {@link #REGION_ALIGNMENT}. */
    public long footprintBytes(int pages)
    {
        if (pages < 0) {
            throw new IllegalArgumentException("pages must be >= 0, was " + pages);
        }
        long slots = (long) pages * pageSize;
        long perLayer = alignUp(slots * keyRowBytes()) + (valuesInKeyRow ? 0 : alignUp(slots * valueRowBytes()));
        return Math.multiplyExact(perLayer, (long) layers);
    }

    /**
     * The most pages whose {@linkplain #footprintBytes footprint} fits in {@code bytes}, capped so the
     * slot count fits an int. 0 when not even one page fits.
     */
    public int pagesFitting(long bytes)
    {
        if (bytes < 0) {
            throw new IllegalArgumentException("byte budget must be >= 0, was " + bytes);
        }
        long maxPages = Integer.MAX_VALUE / pageSize;
        // ignoring alignment gives an upper bound; padding is < REGION_ALIGNMENT per region, so few steps back
        long pages = Math.min(bytes / bytesPerPage(), maxPages);
        while (pages > 0 && footprintBytes((int) pages) > bytes) {
            pages--;
        }
        return (int) pages;
    }

    static long alignUp(long bytes)
    {
        return (bytes + REGION_ALIGNMENT - 1) & -REGION_ALIGNMENT;
    }
}
