package io.handoff.testkit.transfer;

import io.handoff.spi.transfer.MemoryRegion;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

import static java.nio.file.StandardOpenOption.CREATE_NEW;
import static java.nio.file.StandardOpenOption.READ;
import static java.nio.file.StandardOpenOption.WRITE;

/**
 * A small KV pool for tests: by default three regions of {@link #PAGES} pages, the last with a smaller page
 * stride, in anonymous shared memory (a prefill's pool, or a decode's that peers reach without a file) or back
 * to back in a shared file mapping (a decode's pool for same-host one-sided writes). The arena is shared: the
 * test thread, a sender's transfer thread and a receiver's threads all touch it.
 *
 * <p>Source bytes are a function of (pattern, region, page, offset), where a pattern stands for the forward
 * that wrote the page: a page copied to the wrong place, or read at another moment, is seen.
 */
public final class Pool
        implements AutoCloseable
{
    /** Page strides of the default regions: two of one size and one smaller, so a per-region stride mix-up shows. */
    public static final long[] STRIDES = {1024, 1024, 512};
    public static final int PAGES = 64;
    public static final byte CANARY = (byte) 0xA5;

    private final Arena arena;
    private final List<MemoryRegion> regions;
    private final Path file;

    private Pool(Arena arena, List<MemoryRegion> regions, Path file)
    {
        this.arena = arena;
        this.regions = regions;
        this.file = file;
    }

    /** The default regions in anonymous memory. */
    public static Pool anonymous()
    {
        return anonymous(PAGES, STRIDES);
    }

    /** {@code pages} pages per region, one region per stride, in anonymous memory. */
    public static Pool anonymous(int pages, long... strides)
    {
        Arena arena = Arena.ofShared();
        List<MemoryRegion> regions = new ArrayList<>();
        for (int i = 0; i < strides.length; i++) {
            regions.add(new MemoryRegion(i, arena.allocate(pages * strides[i], 4096), strides[i], -1));
        }
        return new Pool(arena, List.copyOf(regions), null);
    }

    /** The default regions back to back in a new {@code file}, mapped shared. */
    public static Pool mapped(Path file)
    {
        return mapped(file, PAGES, STRIDES);
    }

    /** {@code pages} pages per region, one region per stride, back to back in a new {@code file}, mapped shared. */
    public static Pool mapped(Path file, int pages, long... strides)
    {
        Arena arena = Arena.ofShared();
        // private, as the engine creates a pool file: a sender maps no file that others may read
        try (FileChannel channel = FileChannel.open(file, Set.of(CREATE_NEW, READ, WRITE),
                PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rw-------")))) {
            List<MemoryRegion> regions = new ArrayList<>();
            long offset = 0;
            for (int i = 0; i < strides.length; i++) {
                long size = pages * strides[i];
                regions.add(new MemoryRegion(i, channel.map(FileChannel.MapMode.READ_WRITE, offset, size, arena), strides[i], offset));
                offset += size;
            }
            return new Pool(arena, List.copyOf(regions), file);
        }
        catch (IOException e) {
            arena.close();
            throw new UncheckedIOException("cannot map a test pool in " + file, e);
        }
    }

    public List<MemoryRegion> regions()
    {
        return regions;
    }

    /** The file the regions are mapped from, or null for anonymous memory (what {@code expose} takes). */
    public Path file()
    {
        return file;
    }

    public static byte sourceByte(int pattern, int region, int page, long offset)
    {
        return (byte) (pattern * 101 + region * 71 + page * 13 + offset * 7 + (offset >> 8) + 1);
    }

    /** Every page of every region as the forward {@code pattern} writes it. */
    public Pool fill(int pattern)
    {
        for (int page = 0; page < regions.getFirst().pages(); page++) {
            writePage(page, pattern);
        }
        return this;
    }

    /** Page {@code page} of every region as the forward {@code pattern} writes it. */
    public void writePage(int page, int pattern)
    {
        for (MemoryRegion region : regions) {
            MemorySegment segment = region.page(page);
            for (long offset = 0; offset < region.pageStride(); offset++) {
                segment.set(ValueLayout.JAVA_BYTE, offset, sourceByte(pattern, region.index(), page, offset));
            }
        }
    }

    public Pool fillCanary()
    {
        for (MemoryRegion region : regions) {
            region.segment().fill(CANARY);
        }
        return this;
    }

    /** {@link #mismatches(int, Map)} of pattern 0, what a source {@code fill(0)} holds. */
    public List<String> mismatches(Map<Integer, Integer> dstToSrc)
    {
        return mismatches(0, dstToSrc);
    }

    /**
     * Where this (destination) pool differs from "page {@code d} holds source page {@code dstToSrc.get(d)} of
     * {@code pattern} in every region, every other page holds the canary", one line per region and page; empty
     * when it does not.
     */
    public List<String> mismatches(int pattern, Map<Integer, Integer> dstToSrc)
    {
        List<String> mismatches = new ArrayList<>();
        for (MemoryRegion region : regions) {
            for (int page = 0; page < region.pages(); page++) {
                Integer source = dstToSrc.get(page);
                long offset = firstDifference(region, page, source == null ? -1 : source, pattern);
                if (offset >= 0) {
                    mismatches.add("region " + region.index() + " page " + page + " offset " + offset + ": expected "
                            + (source == null ? "canary" : "source page " + source + " of pattern " + pattern));
                }
            }
        }
        return mismatches;
    }

    /** Whether destination page {@code dst} holds source page {@code src} of pattern 0 in every region. */
    public boolean holds(int dst, int src)
    {
        return holds(dst, src, 0);
    }

    /** Whether destination page {@code dst} holds source page {@code src} of {@code pattern} in every region. */
    public boolean holds(int dst, int src, int pattern)
    {
        return regions.stream().allMatch(region -> firstDifference(region, dst, src, pattern) < 0);
    }

    /** Every page to itself: with {@link #mismatches}, "the pool holds this pattern everywhere". */
    public Map<Integer, Integer> everyPage()
    {
        Map<Integer, Integer> pages = new LinkedHashMap<>();
        for (int page = 0; page < regions.getFirst().pages(); page++) {
            pages.put(page, page);
        }
        return pages;
    }

    /** The first offset of page {@code page} that does not hold source page {@code src} (-1: the canary), or -1. */
    private static long firstDifference(MemoryRegion region, int page, int src, int pattern)
    {
        MemorySegment segment = region.page(page);
        for (long offset = 0; offset < region.pageStride(); offset++) {
            byte expected = src < 0 ? CANARY : sourceByte(pattern, region.index(), src, offset);
            if (segment.get(ValueLayout.JAVA_BYTE, offset) != expected) {
                return offset;
            }
        }
        return -1;
    }

    @Override
    public void close()
    {
        arena.close();
    }
}
