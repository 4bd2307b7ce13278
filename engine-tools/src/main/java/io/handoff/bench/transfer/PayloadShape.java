package io.handoff.bench.transfer;

import io.handoff.core.kv.KvGeometry;
import io.handoff.spi.attention.KvDtype;

/**
 * The KV-shaped payload one round moves: a pool of {@code 2 × layers} regions (K and V of each layer, as the engine's
 * KV pool is laid out), each page {@code pageBytes} per region, and as many pages as {@code bytes} holds.
 *
 * <p>With {@code senderRanks} or {@code receiverRanks} above 1 (the head-sliced pattern) the pool is a model's of
 * {@link #KV_HEADS} KV heads and {@link #PAGE_TOKENS}-token pages spread over that many tensor-parallel ranks on each
 * side, each rank's regions holding its heads; a round gives each receiving rank exactly its heads from the sending
 * ranks that hold them.
 */
record PayloadShape(long bytes, long pageBytes, int layers, int senderRanks, int receiverRanks)
{
    /** KV heads of the head-sliced pattern's model: divisible by every rank count 1, 2, 4, 8. */
    static final int KV_HEADS = 8;
    /** Token slots of a page in the head-sliced pattern: a head slice is one piece per slot. */
    static final int PAGE_TOKENS = 16;

    /** Regions start on the pool's alignment, so a page must be a whole number of its units. */
    static final long PAGE_UNIT = KvGeometry.REGION_ALIGNMENT;
    /** A scattered mapping with no two neighbours adjacent needs this many pages. */
    static final int MIN_SCATTER_PAGES = 4;

    PayloadShape(long bytes, long pageBytes, int layers)
    {
        this(bytes, pageBytes, layers, 1, 1);
    }

    PayloadShape
    {
        for (int ranks : new int[] {senderRanks, receiverRanks}) {
            if (ranks < 1 || KV_HEADS % ranks != 0) {
                throw new IllegalArgumentException("--tensor-parallel ranks must be 1, 2, 4 or 8, got " + ranks);
            }
        }
        if (sliced() && pageBytes % ((long) KV_HEADS * PAGE_TOKENS * KvDtype.F32.bytes()) != 0) {
            throw new IllegalArgumentException("--page-bytes " + ByteSize.format(pageBytes) + " is not " + PAGE_TOKENS + " rows of " + KV_HEADS
                    + " F32 heads: give a multiple of " + ByteSize.format((long) KV_HEADS * PAGE_TOKENS * KvDtype.F32.bytes()));
        }
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

    /** Whether this is the head-sliced pattern: tensor-parallel ranks on either side. */
    boolean sliced()
    {
        return senderRanks > 1 || receiverRanks > 1;
    }

    /** One rank's pool of a side of {@code ranks} ranks: its heads of each {@link #PAGE_TOKENS}-token row. */
    KvGeometry geometry(int ranks)
    {
        if (!sliced()) {
            return geometry();
        }
        int elements = Math.toIntExact(pageBytes / KvDtype.F32.bytes() / PAGE_TOKENS / ranks);
        return new KvGeometry(layers, elements, elements, false, KvDtype.F32, PAGE_TOKENS);
    }

    PayloadShape withPageBytes(long otherPageBytes)
    {
        return new PayloadShape(bytes, otherPageBytes, layers, senderRanks, receiverRanks);
    }
}
