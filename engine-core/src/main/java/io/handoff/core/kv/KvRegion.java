package io.handoff.core.kv;

import java.lang.foreign.MemorySegment;

import static java.util.Objects.requireNonNull;

/**
 * One contiguous region of the KV pool, as a transfer backend registers it: page {@code p} of this
 * region is the {@link #pageStride()} bytes at {@code address() + p * pageStride()}.
 *
 * @param rank the tensor-parallel rank whose pool holds the region (0 with one rank)
 * @param fileOffset where the region starts in the pool's shared file, or -1 when the pool is not file-backed
 */
public record KvRegion(int rank, int layer, Kind kind, MemorySegment segment, long pageStride, long fileOffset)
{
    public enum Kind
    {
        KEY,
        /** A separate value region; absent when V lives in the key row. */
        VALUE
    }

    public KvRegion
    {
        requireNonNull(kind, "kind is null");
        requireNonNull(segment, "segment is null");
        if (rank < 0 || layer < 0 || pageStride < 1 || fileOffset < -1) {
            throw new IllegalArgumentException("bad region: rank=" + rank + " layer=" + layer + " pageStride=" + pageStride + " fileOffset=" + fileOffset);
        }
    }

    public long address()
    {
        return segment.address();
    }

    public long byteLength()
    {
        return segment.byteSize();
    }

    public int pages()
    {
        return (int) (segment.byteSize() / pageStride);
    }

    /** The bytes of one page in this region (for a copy or a checksum). */
    public MemorySegment page(int page)
    {
        return segment.asSlice(page * pageStride, pageStride);
    }
}
