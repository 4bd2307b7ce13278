package io.handoff.spi.transfer;

/**
 * One part of a {@link SliceMap}: for every row of a page (a token slot, or the whole page), {@code bytes} bytes at
 * {@code srcOffset} in the row of sender region {@code srcRegion} go to {@code dstOffset} in the same row of receiver
 * region {@code dstRegion}. A row of a KV region holds the KV heads of one token slot side by side, so a slice is a
 * contiguous range of heads: the heads a receiving rank holds, out of a sending rank's row.
 *
 * @param srcRowStride bytes from one row of the source region to the next
 * @param dstRowStride the same on the receiver
 */
public record RegionSlice(int srcRegion, int dstRegion, long srcRowStride, long dstRowStride, long srcOffset, long dstOffset, long bytes)
{
    public RegionSlice
    {
        if (srcRegion < 0 || dstRegion < 0) {
            throw new IllegalArgumentException("slice regions must be >= 0, got " + srcRegion + " -> " + dstRegion);
        }
        if (bytes < 1 || srcOffset < 0 || dstOffset < 0 || srcOffset + bytes > srcRowStride || dstOffset + bytes > dstRowStride) {
            throw new IllegalArgumentException("slice of " + bytes + " bytes at " + srcOffset + " -> " + dstOffset + " does not fit rows of "
                    + srcRowStride + " -> " + dstRowStride + " bytes");
        }
    }

    /** Whether the slice is whole rows on both sides: a run of pages is then one contiguous copy. */
    public boolean wholeRows()
    {
        return bytes == srcRowStride && bytes == dstRowStride;
    }
}
