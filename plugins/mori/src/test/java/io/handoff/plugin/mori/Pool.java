package io.handoff.plugin.mori;

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
 * in anonymous memory (a prefill's pool) or back to back in a shared file mapping (a decode's pool). Source
 * bytes are a function of (region, page, offset, version), where a version stands for the forward that wrote
 * the page, so a page copied from the wrong place or before its forward is seen.
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

    /** The regions back to back in {@code file}, mapped shared, as a decode's pool. */
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

    static byte sourceByte(int region, int page, long offset, int version)
    {
        return (byte) (region * 71 + page * 13 + offset * 7 + (offset >> 8) + version * 101 + 1);
    }

    /** Every page as written by forward {@code version}. */
    Pool fillSource(int version)
    {
        for (int page = 0; page < PAGES; page++) {
            writePage(page, version);
        }
        return this;
    }

    /** Page {@code page} of every region as forward {@code version} writes it. */
    void writePage(int page, int version)
    {
        for (MemoryRegion region : regions) {
            MemorySegment segment = region.page(page);
            for (long offset = 0; offset < region.pageStride(); offset++) {
                segment.set(ValueLayout.JAVA_BYTE, offset, sourceByte(region.index(), page, offset, version));
            }
        }
    }

    Pool fillCanary()
    {
        for (MemoryRegion region : regions) {
            region.segment().fill(CANARY);
        }
        return this;
    }

    /**
     * Where this (destination) pool differs from "page {@code d} holds source page {@code dstToSrc.get(d)} of
     * forward {@code version} in every region, every other page holds the canary"; empty when it does not.
     */
    List<String> mismatches(Map<Integer, Integer> dstToSrc, int version)
    {
        List<String> mismatches = new ArrayList<>();
        for (MemoryRegion region : regions) {
            for (int page = 0; page < region.pages(); page++) {
                Integer source = dstToSrc.get(page);
                if (source == null ? !isCanary(region, page) : !holds(region, page, source, version)) {
                    mismatches.add("region " + region.index() + " page " + page + ": expected "
                            + (source == null ? "canary" : "source page " + source + " of version " + version));
                }
            }
        }
        return mismatches;
    }

    /** Whether destination page {@code dst} holds source page {@code src} of forward {@code version} in every region. */
    boolean holds(int dst, int src, int version)
    {
        return regions.stream().allMatch(region -> holds(region, dst, src, version));
    }

    private static boolean holds(MemoryRegion region, int dst, int src, int version)
    {
        MemorySegment segment = region.page(dst);
        for (long offset = 0; offset < region.pageStride(); offset++) {
            if (segment.get(ValueLayout.JAVA_BYTE, offset) != sourceByte(region.index(), src, offset, version)) {
                return false;
            }
        }
        return true;
    }

    private static boolean isCanary(MemoryRegion region, int page)
    {
        MemorySegment segment = region.page(page);
        for (long offset = 0; offset < region.pageStride(); offset++) {
            if (segment.get(ValueLayout.JAVA_BYTE, offset) != CANARY) {
                return false;
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
