package io.handoff.spi.transfer;

import java.lang.foreign.MemorySegment;

import static java.util.Objects.requireNonNull;

/**
 * A region of the KV pool as transfer backends see it: one layer's keys or values, {@code pages} pages of
 * {@code pageStride} bytes each, page {@code p} at {@code segment} offset {@code p * pageStride}. Both
 * sides of a transfer have the same regions in the same order (the handshake checks the geometry), so a
 * plan names pages, not addresses.
 *
 * @param fileOffset where the region starts in {@code sharedFile}, when the pool is a shared file mapping; -1 otherwise
 */
public record MemoryRegion(int index, MemorySegment segment, long pageStride, long fileOffset)
{
    public MemoryRegion
    {
        requireNonNull(segment, "segment is null");
        if (index < 0 || pageStride < 1 || segment.byteSize() % pageStride != 0) {
            throw new IllegalArgumentException("region " + index + ": " + segment.byteSize() + " bytes is not a whole number of "
                    + pageStride + "-byte pages");
        }
    }

    public int pages()
    {
        return Math.toIntExact(segment.byteSize() / pageStride);
    }

    public MemorySegment page(int page)
    {
        return segment.asSlice(page * pageStride, pageStride);
    }
}
