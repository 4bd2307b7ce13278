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
    private boolean closed;

    private KvPool(KvGeometry geometry, int pages, Arena arena, PagedKvCache cache, Optional<Path> sharedFile, MemorySegment fileBase)
    {
        this.geometry = geometry;
        this.arena = arena;
        this.cache = cache;
        this.pagePool = new PagePool(pages);
        this.sharedFile = sharedFile;
        List<KvRegion> regions = new ArrayList<>(geometry.regions());
        for (int layer = 0; layer < geometry.layers(); layer++) {
            regions.add(region(layer, KvRegion.Kind.KEY, cache.keys(layer), geometry.keyPageStride(), fileBase));
            if (!geometry.valuesInKeyRow()) {
                regions.add(region(layer, KvRegion.Kind.VALUE, cache.values(layer), geometry.valuePageStride(), fileBase));
            }
        }
        this.regions = List.copyOf(regions);
    }

    /** A pool of {@code pages} pages in anonymous, zeroed memory. */
    public static KvPool allocate(KvGeometry geometry, int pages)
    {
        checkPages(geometry, pages);
        Arena arena = Arena.ofShared();
        try {
            PagedKvCache cache = PagedKvCache.allocate(arena, geometry.layers(), pages, geometry.pageSize(), geometry.dtype(),
                    geometry.keyRowElements(), geometry.valueRowElements(), geometry.valuesInKeyRow());
            return new KvPool(geometry, pages, arena, cache, Optional.empty(), null);
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
        checkPages(geometry, pages);
        requireNonNull(file, "file is null");
        long bytes = geometry.footprintBytes(pages);
        Arena arena = Arena.ofShared();
        try (FileChannel channel = FileChannel.open(file, Set.of(CREATE, READ, WRITE, TRUNCATE_EXISTING, LinkOption.NOFOLLOW_LINKS),
                PosixFilePermissions.asFileAttribute(OWNER_ONLY))) {
            // the mode given applies only to a new file: an old one is made private too
            Files.setPosixFilePermissions(file, OWNER_ONLY);
            channel.write(ByteBuffer.wrap(new byte[1]), bytes - 1);
            MemorySegment mapped = channel.map(FileChannel.MapMode.READ_WRITE, 0, bytes, arena);
            // Touch every page now, as an anonymous pool is zeroed when it is allocated: a page first written by a
            // transfer costs a page fault on the transfer path (3 to 5 times the copy; docs/disaggregation.md, transfer backends).
            mapped.fill((byte) 0);
            long[] cursor = {0};
            PagedKvCache cache = PagedKvCache.over(length -> {
                        MemorySegment slice = mapped.asSlice(cursor[0], length);
                        cursor[0] += KvGeometry.alignUp(length);
                        return slice;
                    },
                    geometry.layers(), pages, geometry.pageSize(), geometry.dtype(),
                    geometry.keyRowElements(), geometry.valueRowElements(), geometry.valuesInKeyRow());
            return new KvPool(geometry, pages, arena, cache, Optional.of(file), mapped);
        }
        catch (IOException | RuntimeException | Error e) {
            arena.close();
            throw e;
        }
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

    /** Every region of the pool, layer by layer, key before value; V inside the key row has no region of its own. */
    public List<KvRegion> regions()
    {
        return regions;
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

    private static KvRegion region(int layer, KvRegion.Kind kind, MemorySegment segment, long pageStride, MemorySegment fileBase)
    {
        long fileOffset = fileBase == null ? -1 : segment.address() - fileBase.address();
        return new KvRegion(layer, kind, segment, pageStride, fileOffset);
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
