package io.handoff.plugin.mooncake;

import io.handoff.spi.transfer.MemoryRegion;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import static java.nio.file.StandardOpenOption.CREATE_NEW;
import static java.nio.file.StandardOpenOption.READ;
import static java.nio.file.StandardOpenOption.WRITE;

/**
 * A small KV pool for tests: three regions of {@link #PAGES} pages, the last with a smaller page stride,
 * in anonymous shared memory or in a file mapping (the layout a decode uses for shm).
 */
final class Pool
        implements AutoCloseable
{
    static final long[] STRIDES = {1024, 1024, 512};
    static final int PAGES = 64;
    static final byte CANARY = (byte) 0xA5;

    private final Arena arena;
    private final List<MemoryRegion> regions;
    private final Path file;

    private Pool(Arena arena, List<MemoryRegion> regions, Path file)
    {
        this.arena = arena;
        this.regions = regions;
        this.file = file;
    }

    static Pool anonymous()
    {
        Arena arena = Arena.ofShared();
        List<MemoryRegion> regions = new ArrayList<>();
        for (int i = 0; i < STRIDES.length; i++) {
            regions.add(new MemoryRegion(i, arena.allocate(PAGES * STRIDES[i], 4096), STRIDES[i], -1));
        }
        return new Pool(arena, List.copyOf(regions), null);
    }

    /** The regions back to back in {@code file}, mapped shared, as a decode pool for shm. */
    static Pool mapped(Path file)
    {
        Arena arena = Arena.ofShared();
        try (FileChannel channel = FileChannel.open(file, CREATE_NEW, READ, WRITE)) {
            List<MemoryRegion> regions = new ArrayList<>();
            long offset = 0;
            for (int i = 0; i < STRIDES.length; i++) {
                long size = PAGES * STRIDES[i];
                regions.add(new MemoryRegion(i, channel.map(FileChannel.MapMode.READ_WRITE, offset, size, arena), STRIDES[i], offset));
                offset += size;
            }
            return new Pool(arena, List.copyOf(regions), file);
        }
        catch (IOException e) {
            arena.close();
            throw new UncheckedIOException(e);
        }
    }

    List<MemoryRegion> regions()
    {
        return regions;
    }

    Path file()
    {
        return file;
    }

    /** Every byte a function of (region, page, offset), so a page copied to the wrong place is seen. */
    static byte sourceByte(int region, int page, long offset)
    {
        return (byte) (region * 71 + page * 13 + offset * 7 + (offset >> 8) + 1);
    }

    Pool fillSource()
    {
        for (MemoryRegion region : regions) {
            for (int page = 0; page < region.pages(); page++) {
                MemorySegment segment = region.page(page);
                for (long offset = 0; offset < region.pageStride(); offset++) {
                    segment.set(ValueLayout.JAVA_BYTE, offset, sourceByte(region.index(), page, offset));
                }
            }
        }
        return this;
    }

    Pool fillCanary()
    {
        for (MemoryRegion region : regions) {
            region.segment().fill(CANARY);
        }
        return this;
    }

    /**
     * Where this (destination) pool differs from "page {@code d} holds source page {@code dstToSrc.get(d)} in
     * every region, every other page holds the canary"; empty when it does not.
     */
    List<String> mismatches(Map<Integer, Integer> dstToSrc)
    {
        List<String> mismatches = new ArrayList<>();
        for (MemoryRegion region : regions) {
            for (int page = 0; page < region.pages(); page++) {
                MemorySegment segment = region.page(page);
                Integer source = dstToSrc.get(page);
                for (long offset = 0; offset < region.pageStride(); offset++) {
                    byte expected = source == null ? CANARY : sourceByte(region.index(), source, offset);
                    if (segment.get(ValueLayout.JAVA_BYTE, offset) != expected) {
                        mismatches.add("region " + region.index() + " page " + page + " offset " + offset + ": expected "
                                + (source == null ? "canary" : "source page " + source));
                        break;
                    }
                }
            }
        }
        return mismatches;
    }

    /** Whether destination page {@code dst} holds source page {@code src} in every region. */
    boolean holds(int dst, int src)
    {
        for (MemoryRegion region : regions) {
            MemorySegment segment = region.page(dst);
            for (long offset = 0; offset < region.pageStride(); offset++) {
                if (segment.get(ValueLayout.JAVA_BYTE, offset) != sourceByte(region.index(), src, offset)) {
                    return false;
                }
            }
        }
        return true;
    }

    @Override
    public void close()
    {
        arena.close();
    }
}
