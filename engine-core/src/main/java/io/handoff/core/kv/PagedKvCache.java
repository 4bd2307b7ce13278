package io.handoff.core.kv;

import io.handoff.spi.attention.KvCacheView;
import io.handoff.spi.attention.KvDtype;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.function.LongFunction;

import static java.util.Objects.requireNonNull;

/**
 * A {@link KvCacheView} over regions it allocates: one key region and (unless V lives in the key row)
 * one value region per layer, each 64-byte aligned. The allocator decides where the memory lives (an
 * {@link Arena}, or a shared file mapping for same-host transfer); this class only lays it out.
 */
public final class PagedKvCache
        implements KvCacheView
{
    private final int slots;
    private final int pageSize;
    private final KvDtype dtype;
    private final int keyRowElements;
    private final int valueRowElements;
    private final boolean valuesInKeyRow;
    private final MemorySegment[] keys;
    private final MemorySegment[] values;

    private PagedKvCache(int layers, int pages, int pageSize, KvDtype dtype, int keyRowElements, int valueRowElements,
            boolean valuesInKeyRow, LongFunction<MemorySegment> allocate)
    {
        if (layers < 1 || pages < 1 || pageSize < 1 || keyRowElements < 1 || valueRowElements < 1) {
            throw new IllegalArgumentException("bad KV geometry: layers=" + layers + " pages=" + pages + " pageSize=" + pageSize
                    + " keyRow=" + keyRowElements + " valueRow=" + valueRowElements);
        }
        if (valuesInKeyRow && valueRowElements > keyRowElements) {
            throw new IllegalArgumentException("value row " + valueRowElements + " does not fit in key row " + keyRowElements);
        }
        this.slots = Math.multiplyExact(pages, pageSize);
        this.pageSize = pageSize;
        this.dtype = requireNonNull(dtype, "dtype is null");
        this.keyRowElements = keyRowElements;
        this.valueRowElements = valueRowElements;
        this.valuesInKeyRow = valuesInKeyRow;
        this.keys = new MemorySegment[layers];
        this.values = new MemorySegment[layers];
        for (int layer = 0; layer < layers; layer++) {
            keys[layer] = allocate.apply((long) slots * keyRowElements * dtype.bytes());
            values[layer] = valuesInKeyRow ? keys[layer] : allocate.apply((long) slots * valueRowElements * dtype.bytes());
        }
    }

    /** Allocates the regions in {@code arena}, zeroed. */
    public static PagedKvCache allocate(Arena arena, int layers, int pages, int pageSize, KvDtype dtype,
            int keyRowElements, int valueRowElements, boolean valuesInKeyRow)
    {
        return new PagedKvCache(layers, pages, pageSize, dtype, keyRowElements, valueRowElements, valuesInKeyRow,
                bytes -> arena.allocate(bytes, 64));
    }

    /** Lays the regions out in memory {@code allocate} hands out (e.g. consecutive slices of one shared mapping). */
    public static PagedKvCache over(LongFunction<MemorySegment> allocate, int layers, int pages, int pageSize, KvDtype dtype,
            int keyRowElements, int valueRowElements, boolean valuesInKeyRow)
    {
        return new PagedKvCache(layers, pages, pageSize, dtype, keyRowElements, valueRowElements, valuesInKeyRow, allocate);
    }

    @Override
    public int layers()
    {
        return keys.length;
    }

    @Override
    public int slots()
    {
        return slots;
    }

    @Override
    public int pageSize()
    {
        return pageSize;
    }

    @Override
    public KvDtype dtype()
    {
        return dtype;
    }

    @Override
    public int keyRowElements()
    {
        return keyRowElements;
    }

    @Override
    public int valueRowElements()
    {
        return valueRowElements;
    }

    @Override
    public boolean valuesInKeyRow()
    {
        return valuesInKeyRow;
    }

    @Override
    public MemorySegment keys(int layer)
    {
        return keys[layer];
    }

    @Override
    public MemorySegment values(int layer)
    {
        return values[layer];
    }
}
