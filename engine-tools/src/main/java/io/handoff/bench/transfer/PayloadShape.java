package io.handoff.bench.transfer;

import io.handoff.core.kv.KvGeometry;
import io.handoff.spi.attention.KvDtype;

/**
 * The KV-shaped payload one round moves: a pool of {@code 2 × layers} regions (K and V of each layer, as the engine's
 * KV pool is laid out), each page {@code pageBytes} per region, and as many pages as {@code bytes} holds.
 */
record PayloadShape(long bytes, long pageBytes, int layers)
{
    /** Regions start on the pool's alignment, so a page must be a whole number of its units. */
    static final long PAGE_UNIT = KvGeometry.REGION_ALIGNMENT;
    /** A scattered mapping with no two neighbours adjacent needs this many pages. */
    static final int MIN_SCATTER_PAGES = 4;

    PayloadShape
    {
        if (layers < 1 || layers > 1024) {
            throw new IllegalArgumentException("--layers must be 1..1024, was " + layers);
        }
        if (pageBytes < PAGE_UNIT || pageBytes % PAGE_UNIT != 0) {
            throw new IllegalArgumentException("--page-bytes " + ByteSize.format(pageBytes) + " is not a whole number of " + PAGE_UNIT
                    + "-byte units (the KV pool's region alignment): give e.g. 4KiB, 64KiB or 1MiB");
        }
        long perPage = Math.multiplyExact(pageBytes, 2L * layers);
        if (bytes % perPage != 0 || bytes / perPage > Integer.MAX_VALUE) {
            long below = bytes / perPage * perPage;
            throw new IllegalArgumentException("--bytes " + ByteSize.format(bytes) + " is not a whole number of pages of the plan shape: a page is "
                    + ByteSize.format(pageBytes) + " in each of 2 x " + layers + " regions = " + ByteSize.format(perPage) + "; "
                    + (below > 0 ? "--bytes " + ByteSize.format(below) + " or " : "") + "--bytes " + ByteSize.format(below + perPage)
                    + " fits, or change --page-bytes or --layers");
        }
    }

    int regions()
    {
        return 2 * layers;
    }

    /** Pages in each region: the pages one round moves. */
    int pages()
    {
        return Math.toIntExact(bytes / (pageBytes * regions()));
    }

    /** One token slot per page and F32 rows of the page's bytes: the pool's strides are exactly {@code pageBytes}. */
    KvGeometry geometry()
    {
        int elements = Math.toIntExact(pageBytes / KvDtype.F32.bytes());
        return new KvGeometry(layers, elements, elements, false, KvDtype.F32, 1);
    }

    PayloadShape withPageBytes(long otherPageBytes)
    {
        return new PayloadShape(bytes, otherPageBytes, layers);
    }
}
