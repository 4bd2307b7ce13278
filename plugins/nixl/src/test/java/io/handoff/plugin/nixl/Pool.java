package io.handoff.plugin.nixl;

import io.handoff.spi.transfer.MemoryRegion;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * A small KV pool for tests: three regions of {@link #PAGES} pages, the last with a smaller page stride, in memory
 * of a shared arena (the receiver's progress thread and the sender's transfer thread both touch it).
 */
final class Pool
        implements AutoCloseable
{
    static final long[] STRIDES = {1024, 1024, 512};
    static final int PAGES = 64;
    static final byte CANARY = (byte) 0xA5;

    private final Arena arena;
    private final List<MemoryRegion> regions;

    private Pool(Arena arena, List<MemoryRegion> regions)
    {
        this.arena = arena;
        this.regions = regions;
    }

    static Pool allocate()
    {
        return allocate(STRIDES);
    }

    static Pool allocate(long... strides)
    {
        Arena arena = Arena.ofShared();
        List<MemoryRegion> regions = new ArrayList<>();
        for (int i = 0; i < strides.length; i++) {
            regions.add(new MemoryRegion(i, arena.allocate(PAGES * strides[i], 4096), strides[i], -1));
        }
        return new Pool(arena, List.copyOf(regions));
    }

    List<MemoryRegion> regions()
    {
        return regions;
    }

    /**
     * Every byte a function of (pattern, region, page, offset), so a page copied to the wrong place, or copied from
     * another moment (another pattern), is seen.
     */
    static byte sourceByte(int pattern, int region, int page, long offset)
    {
        return (byte) (pattern * 101 + region * 71 + page * 13 + offset * 7 + (offset >> 8) + 1);
    }

    /** Fills every page of every region with {@code pattern}. */
    Pool fill(int pattern)
    {
        for (MemoryRegion region : regions) {
            for (int page = 0; page < region.pages(); page++) {
                MemorySegment segment = region.page(page);
                for (long offset = 0; offset < region.pageStride(); offset++) {
                    segment.set(ValueLayout.JAVA_BYTE, offset, sourceByte(pattern, region.index(), page, offset));
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
     * Where this (destination) pool differs from "page {@code d} holds source page {@code dstToSrc.get(d)} of
     * {@code pattern} in every region, every other page holds the canary"; empty when it does not.
     */
    List<String> mismatches(int pattern, Map<Integer, Integer> dstToSrc)
    {
        List<String> mismatches = new ArrayList<>();
        for (MemoryRegion region : regions) {
            for (int page = 0; page < region.pages(); page++) {
                MemorySegment segment = region.page(page);
                Integer source = dstToSrc.get(page);
                for (long offset = 0; offset < region.pageStride(); offset++) {
                    byte expected = source == null ? CANARY : sourceByte(pattern, region.index(), source, offset);
                    if (segment.get(ValueLayout.JAVA_BYTE, offset) != expected) {
                        mismatches.add("region " + region.index() + " page " + page + " offset " + offset + ": expected "
                                + (source == null ? "canary" : "source page " + source + " of pattern " + pattern));
                        break;
                    }
                }
            }
        }
        return mismatches;
    }

    /** Every page to itself: with {@link #mismatches}, "the pool holds this pattern everywhere". */
    static Map<Integer, Integer> everyPage()
    {
        Map<Integer, Integer> pages = new HashMap<>();
        for (int page = 0; page < PAGES; page++) {
            pages.put(page, page);
        }
        return pages;
    }

    @Override
    public void close()
    {
        arena.close();
    }
}
