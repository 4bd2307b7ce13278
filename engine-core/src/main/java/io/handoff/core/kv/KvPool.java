package io.handoff.core.kv;

import io.handoff.spi.attention.KvCacheView;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermission;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Optional;
import java.util.Set;

import static java.nio.file.StandardOpenOption.CREATE;
import static java.nio.file.StandardOpenOption.READ;
import static java.nio.file.StandardOpenOption.TRUNCATE_EXISTING;
import static java.nio.file.StandardOpenOption.WRITE;
import static java.util.Objects.requireNonNull;

/**
 * The KV pool: off-heap regions laid out by {@link PagedKvCache} in a shared {@link Arena} (attention
 * runs on the compute thread, transfers on their own threads), and the {@link PagePool} that hands its
 * pages out. Regions are listed layer by layer, key before value, which is also their order in a
 * shared file.
 */
public final class KvPool
        implements AutoCloseable
{
    private static final Set<PosixFilePermission> OWNER_ONLY = PosixFilePermissions.fromString("rw-------");

    private final KvGeometry geometry;
    private final Arena arena;
    private final PagedKvCache cache;
    private final PagePool pagePool;
    private final List<KvRegion> regions;
    private final Optional<Path> sharedFile;
    private final int ranks;
    private boolean closed;

    private KvPool(KvGeometry geometry, int pages, Arena arena, PagedKvCache cache, Optional<Path> sharedFile, List<KvRegion> regions, int ranks)
    {
        this(geometry, new PagePool(pages), arena, cache, sharedFile, regions, ranks);
    }

    private KvPool(KvGeometry geometry, PagePool pagePool, Arena arena, PagedKvCache cache, Optional<Path> sharedFile, List<KvRegion> regions, int ranks)
    {
        this.geometry = geometry;
        this.arena = arena;
        this.cache = cache;
        this.pagePool = pagePool;
        this.sharedFile = sharedFile;
        this.regions = List.copyOf(regions);
        this.ranks = ranks;
    }

    /**
     * Rank 0's pool of a data-parallel server whose ranks keep their pools in their own memory (no transfer reaches them):
     * {@code pagesPerRank} pages here in anonymous memory, and a {@link #pagePool()} of every rank's pages in
     * {@code ranks} parts (rank {@code r}'s pages {@code [r * pagesPerRank, (r + 1) * pagesPerRank)}).
     */
    public static KvPool allocateDataParallel(KvGeometry geometry, int pagesPerRank, int ranks)
    {
        checkPages(geometry, pagesPerRank * ranks);
        Arena arena = Arena.ofShared();
        try {
            PagedKvCache cache = PagedKvCache.allocate(arena, geometry.layers(), pagesPerRank, geometry.pageSize(), geometry.dtype(),
                    geometry.keyRowElements(), geometry.valueRowElements(), geometry.valuesInKeyRow());
            return new KvPool(geometry, new PagePool(pagesPerRank * ranks, ranks), arena, cache, Optional.empty(), regions(geometry, cache, 0, null), 1);
        }
        catch (RuntimeException | Error e) {
            arena.close();
            throw e;
        }
    }

    /** A pool of {@code pages} pages in anonymous, zeroed memory. */
    public static KvPool allocate(KvGeometry geometry, int pages)
    {
        checkPages(geometry, pages);
        Arena arena = Arena.ofShared();
        try {
            PagedKvCache cache = PagedKvCache.allocate(arena, geometry.layers(), pages, geometry.pageSize(), geometry.dtype(),
                    geometry.keyRowElements(), geometry.valueRowElements(), geometry.valuesInKeyRow());
            return new KvPool(geometry, pages, arena, cache, Optional.empty(), regions(geometry, cache, 0, null), 1);
        }
        catch (RuntimeException | Error e) {
            arena.close();
            throw e;
        }
    }

    /**
     * A pool whose regions are consecutive 64-byte-aligned slices of {@code file}, mapped read-write, so
     * a same-host peer can map the same bytes. The file is created, or truncated, to exactly
     * {@link KvGeometry#footprintBytes} bytes of zeros, every page touched (faulted in) now, readable and writable by its owner only (every request's KV
     * is in it); it outlives {@link #close()} (the caller removes it).
     */
    public static KvPool mapShared(KvGeometry geometry, int pages, Path file)
            throws IOException
    {
        return mapShared(geometry, pages, file, 1);
    }

    /**
     * The pool of rank 0 of a tensor-parallel group of {@code ranks} whose pools share one file: rank {@code r}'s pool is
     * the {@link KvGeometry#footprintBytes} bytes at {@code r} times that offset, laid out as this one (every rank holds
     * the same number of KV heads). The file is created as {@link #mapShared(KvGeometry, int, Path)} creates it, for
     * every rank; each other rank maps its own slice ({@link #mapRankSlice}). {@link #regions()} lists every rank's
     * regions, rank by rank, so that a transfer moves each rank's pages into the same rank's pool on the peer.
     */
    public static KvPool mapShared(KvGeometry geometry, int pages, Path file, int ranks)
            throws IOException
    {
        checkPages(geometry, pages);
        requireNonNull(file, "file is null");
        if (ranks < 1) {
            throw new IllegalArgumentException("ranks must be >= 1, was " + ranks);
        }
        long slice = geometry.footprintBytes(pages);
        long bytes = Math.multiplyExact(slice, (long) ranks);
        Arena arena = Arena.ofShared();
        try {
            MemorySegment mapped = createMapped(file, bytes, arena);
            PagedKvCache cache = layOut(geometry, pages, mapped.asSlice(0, slice));
            List<KvRegion> regions = new ArrayList<>(regions(geometry, cache, 0, mapped));
            for (int rank = 1; rank < ranks; rank++) {
                regions.addAll(regions(geometry, layOut(geometry, pages, mapped.asSlice(rank * slice, slice)), rank, mapped));
            }
            return new KvPool(geometry, pages, arena, cache, Optional.of(file), regions, ranks);
        }
        catch (IOException | RuntimeException | Error e) {
            arena.close();
            throw e;
        }
    }

    /**
     * Rank {@code rank}'s pool in the file its leader created with {@link #mapShared(KvGeometry, int, Path, int)}: the
     * slice at {@code rank} times the footprint, mapped read-write without truncating or clearing anything. The caller
     * has checked the file (where it lies, whose it is, its size) before; the file is opened without following links.
     */
    public static KvPool mapRankSlice(KvGeometry geometry, int pages, Path file, int rank)
            throws IOException
    {
        checkPages(geometry, pages);
        requireNonNull(file, "file is null");
        long slice = geometry.footprintBytes(pages);
        Arena arena = Arena.ofShared();
        try (FileChannel channel = FileChannel.open(file, Set.of(READ, WRITE, LinkOption.NOFOLLOW_LINKS))) {
            if (channel.size() < (rank + 1L) * slice) {
                throw new IOException("the pool file " + file + " has " + channel.size() + " bytes, too few for rank " + rank + "'s pool of "
                        + slice + " bytes");
            }
            MemorySegment mapped = channel.map(FileChannel.MapMode.READ_WRITE, rank * slice, slice, arena);
            // fault the mapping in now (the leader zeroed it), not on the first forward
            mapped.load();
            PagedKvCache cache = layOut(geometry, pages, mapped);
            return new KvPool(geometry, pages, arena, cache, Optional.of(file), regions(geometry, cache, rank, null), 1);
        }
        catch (IOException | RuntimeException | Error e) {
            arena.close();
            throw e;
        }
    }

    /**
     * The pool of rank 0 of a data-parallel server of {@code ranks} ranks (MLA attention by request): one file holding
     * every rank's {@code pagesPerRank} pages, region by region, each region's ranks back to back, so that region {@code k}
     * of the whole server is one contiguous run of {@code ranks * pagesPerRank} pages whose page {@code p} is in rank
     * {@code p / pagesPerRank}'s memory. The {@link #pagePool()} hands out pages of all ranks in {@code ranks} parts (a
     * request's pages all in one part); {@link #view()} is rank 0's part; {@link #regions()} are the whole server's, what
     * a transfer writes into as into one pool (a request's KV lands in its rank's part because its pages are there). The
     * other ranks map their parts with {@link #mapDataParallelRank}.
     */
    public static KvPool mapDataParallel(KvGeometry geometry, int pagesPerRank, Path file, int ranks)
            throws IOException
    {
        checkPages(geometry, pagesPerRank * ranks);
        requireNonNull(file, "file is null");
        long[] blocks = dataParallelBlocks(geometry, pagesPerRank);
        long bytes = ranks * Arrays.stream(blocks).sum();
        Arena arena = Arena.ofShared();
        try {
            MemorySegment mapped = createMapped(file, bytes, arena);
            PagedKvCache cache = dataParallelLayOut(geometry, pagesPerRank, mapped, blocks, ranks, 0);
            List<KvRegion> regions = new ArrayList<>();
            long offset = 0;
            int k = 0;
            for (int layer = 0; layer < geometry.layers(); layer++) {
                regions.add(new KvRegion(0, layer, KvRegion.Kind.KEY, mapped.asSlice(offset, blocks[k] * ranks), geometry.keyPageStride(), offset));
                offset += blocks[k++] * ranks;
                if (!geometry.valuesInKeyRow()) {
                    regions.add(new KvRegion(0, layer, KvRegion.Kind.VALUE, mapped.asSlice(offset, blocks[k] * ranks), geometry.valuePageStride(), offset));
                    offset += blocks[k++] * ranks;
                }
            }
            return new KvPool(geometry, new PagePool(pagesPerRank * ranks, ranks), arena, cache, Optional.of(file), regions, 1);
        }
        catch (IOException | RuntimeException | Error e) {
            arena.close();
            throw e;
        }
    }

    /** Rank {@code rank}'s part of the file {@link #mapDataParallel} created: its block of each region, as its own pool. */
    public static KvPool mapDataParallelRank(KvGeometry geometry, int pagesPerRank, Path file, int rank, int ranks)
            throws IOException
    {
        checkPages(geometry, pagesPerRank);
        requireNonNull(file, "file is null");
        long[] blocks = dataParallelBlocks(geometry, pagesPerRank);
        long bytes = ranks * Arrays.stream(blocks).sum();
        Arena arena = Arena.ofShared();
        try (FileChannel channel = FileChannel.open(file, Set.of(READ, WRITE, LinkOption.NOFOLLOW_LINKS))) {
            if (channel.size() != bytes) {
                throw new IOException("the pool file " + file + " has " + channel.size() + " bytes, not the " + bytes + " of " + ranks
                        + " data-parallel ranks' pools");
            }
            MemorySegment mapped = channel.map(FileChannel.MapMode.READ_WRITE, 0, bytes, arena);
            PagedKvCache cache = dataParallelLayOut(geometry, pagesPerRank, mapped, blocks, ranks, rank);
            return new KvPool(geometry, new PagePool(pagesPerRank), arena, cache, Optional.of(file), List.of(), 1);
        }
        catch (IOException | RuntimeException | Error e) {
            arena.close();
            throw e;
        }
    }

    /** Bytes of one rank's block of each region; each a whole number of pages, so the ranks' blocks make one run of pages. */
    private static long[] dataParallelBlocks(KvGeometry geometry, int pagesPerRank)
    {
        long[] blocks = new long[geometry.regions()];
        int k = 0;
        for (int layer = 0; layer < geometry.layers(); layer++) {
            blocks[k++] = (long) pagesPerRank * geometry.keyPageStride();
            if (!geometry.valuesInKeyRow()) {
                blocks[k++] = (long) pagesPerRank * geometry.valuePageStride();
            }
        }
        for (long block : blocks) {
            if (block % KvGeometry.REGION_ALIGNMENT != 0) {
                throw new IllegalArgumentException("a data-parallel pool needs each rank's pages of a region to fill whole "
                        + KvGeometry.REGION_ALIGNMENT + "-byte units (" + block + " bytes); choose a page count that does");
            }
        }
        return blocks;
    }

    private static PagedKvCache dataParallelLayOut(KvGeometry geometry, int pagesPerRank, MemorySegment mapped, long[] blocks, int ranks, int rank)
    {
        long[] region = {0, 0};
        return PagedKvCache.over(length -> {
                    int k = (int) region[1]++;
                    MemorySegment part = mapped.asSlice(region[0] + rank * blocks[k], length);
                    region[0] += blocks[k] * ranks;
                    return part;
                },
                geometry.layers(), pagesPerRank, geometry.pageSize(), geometry.dtype(),
                geometry.keyRowElements(), geometry.valueRowElements(), geometry.valuesInKeyRow());
    }

    /**
     * {@code file} created (or truncated) to {@code bytes} zeros, owner-only, mapped read-write in {@code arena} with every
     * page touched now, as an anonymous pool is zeroed when it is allocated: a page first written by a transfer costs a
     * page fault on the transfer path (3 to 5 times the copy; docs/disaggregation.md, transfer backends).
     */
    private static MemorySegment createMapped(Path file, long bytes, Arena arena)
            throws IOException
    {
        try (FileChannel channel = FileChannel.open(file, Set.of(CREATE, READ, WRITE, TRUNCATE_EXISTING, LinkOption.NOFOLLOW_LINKS),
                PosixFilePermissions.asFileAttribute(OWNER_ONLY))) {
            // the mode given applies only to a new file: an old one is made private too
            Files.setPosixFilePermissions(file, OWNER_ONLY);
            channel.write(ByteBuffer.wrap(new byte[1]), bytes - 1);
            MemorySegment mapped = channel.map(FileChannel.MapMode.READ_WRITE, 0, bytes, arena);
            mapped.fill((byte) 0);
            return mapped;
        }
    }

    private static PagedKvCache layOut(KvGeometry geometry, int pages, MemorySegment slice)
    {
        long[] cursor = {0};
        return PagedKvCache.over(length -> {
                    MemorySegment part = slice.asSlice(cursor[0], length);
                    cursor[0] += KvGeometry.alignUp(length);
                    return part;
                },
                geometry.layers(), pages, geometry.pageSize(), geometry.dtype(),
                geometry.keyRowElements(), geometry.valueRowElements(), geometry.valuesInKeyRow());
    }

    /** How many pages of {@code geometry} fit in a budget of {@code bytes} (region alignment included). */
    public static int pagesFitting(long bytes, KvGeometry geometry)
    {
        return requireNonNull(geometry, "geometry is null").pagesFitting(bytes);
    }

    public KvGeometry geometry()
    {
        return geometry;
    }

    public KvCacheView view()
    {
        return cache;
    }

    public PagePool pagePool()
    {
        return pagePool;
    }

    public int pages()
    {
        return pagePool.totalPages();
    }

    /**
     * Every region of the pool, layer by layer, key before value; V inside the key row has no region of its own. A
     * tensor-parallel leader's pool over a shared file lists every rank's regions, rank by rank ({@link #ranks()}).
     */
    public List<KvRegion> regions()
    {
        return regions;
    }

    /** How many ranks' regions {@link #regions()} lists: 1, or a tensor-parallel group's size on its leader over a shared file. */
    public int ranks()
    {
        return ranks;
    }

    /** The file the regions are mapped from, for a same-host peer; empty for anonymous memory. */
    public Optional<Path> sharedFile()
    {
        return sharedFile;
    }

    public long footprintBytes()
    {
        return geometry.footprintBytes(pages());
    }

    public synchronized boolean isOpen()
    {
        return !closed;
    }

    /** Frees (or unmaps) every region; any later access to the view's segments fails. Idempotent. */
    @Override
    public synchronized void close()
    {
        if (!closed) {
            closed = true;
            arena.close();
        }
    }

    /** A pool's regions, layer by layer, key before value; {@code fileBase} is the start of the mapped file, or null. */
    private static List<KvRegion> regions(KvGeometry geometry, PagedKvCache cache, int rank, MemorySegment fileBase)
    {
        List<KvRegion> regions = new ArrayList<>(geometry.regions());
        for (int layer = 0; layer < geometry.layers(); layer++) {
            regions.add(region(rank, layer, KvRegion.Kind.KEY, cache.keys(layer), geometry.keyPageStride(), fileBase));
            if (!geometry.valuesInKeyRow()) {
                regions.add(region(rank, layer, KvRegion.Kind.VALUE, cache.values(layer), geometry.valuePageStride(), fileBase));
            }
        }
        return regions;
    }

    private static KvRegion region(int rank, int layer, KvRegion.Kind kind, MemorySegment segment, long pageStride, MemorySegment fileBase)
    {
        long fileOffset = fileBase == null ? -1 : segment.address() - fileBase.address();
        return new KvRegion(rank, layer, kind, segment, pageStride, fileOffset);
    }

    private static void checkPages(KvGeometry geometry, int pages)
    {
        requireNonNull(geometry, "geometry is null");
        if (pages < 1 || (long) pages * geometry.pageSize() > Integer.MAX_VALUE) {
            throw new IllegalArgumentException("a KV pool needs 1.." + Integer.MAX_VALUE / geometry.pageSize() + " pages of "
                    + geometry.pageSize() + " tokens, got " + pages);
        }
    }
}
