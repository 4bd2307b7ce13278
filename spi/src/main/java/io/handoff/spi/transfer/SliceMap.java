package io.handoff.spi.transfer;

import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;

import static java.util.Objects.requireNonNull;

/**
 * Which bytes of a sender's pages go where in a receiver's, for every plan of one connection. Page {@code p} of a plan's
 * run goes to the run's destination page on the receiver, slice by slice: each {@link RegionSlice} moves its part of every
 * row of the page ({@code rowsPerPage} rows). Between servers of the same layout the map is the identity (region i to
 * region i, whole pages: {@link #identity}); between tensor-parallel layouts that differ, the core builds slices so that
 * each receiving rank gets exactly the KV heads it holds, from a sending rank that holds them. A backend moves what the
 * map says and nothing else; {@link #copy} does it for memory both sides of which this process maps.
 */
public record SliceMap(int rowsPerPage, List<RegionSlice> slices)
{
    public SliceMap
    {
        slices = List.copyOf(requireNonNull(slices, "slices is null"));
        if (rowsPerPage < 1) {
            throw new IllegalArgumentException("rowsPerPage must be >= 1, was " + rowsPerPage);
        }
        if (slices.isEmpty()) {
            throw new IllegalArgumentException("a slice map moves something: it has no slice");
        }
    }

    /** Every region to the region of the same index, whole pages: what servers of the same layout exchange. */
    public static SliceMap identity(PageGeometry geometry)
    {
        List<RegionSlice> slices = new ArrayList<>(geometry.regions());
        for (int region = 0; region < geometry.regions(); region++) {
            long stride = geometry.pageStrides().get(region);
            slices.add(new RegionSlice(region, region, stride, stride, 0, 0, stride));
        }
        return new SliceMap(1, slices);
    }

    /** Whether this is {@link #identity} of some geometry: a backend without head slices can move it. */
    public boolean isIdentity()
    {
        for (int i = 0; i < slices.size(); i++) {
            RegionSlice slice = slices.get(i);
            if (slice.srcRegion() != i || slice.dstRegion() != i || !slice.wholeRows() || rowsPerPage != 1) {
                return false;
            }
        }
        return true;
    }

    /** Bytes one page moves, over every slice. */
    public long bytesPerPage()
    {
        long bytes = 0;
        for (RegionSlice slice : slices) {
            bytes += slice.bytes() * rowsPerPage;
        }
        return bytes;
    }

    /**
     * Refuses a map that does not fit both sides' regions (a region out of range, rows that are not the page stride's
     * parts): checked once per connection, before any plan. {@code backend} starts the message.
     */
    public void check(String backend, PageGeometry sender, PageGeometry receiver)
    {
        requireNonNull(sender, "sender is null");
        requireNonNull(receiver, "receiver is null");
        for (RegionSlice slice : slices) {
            if (slice.srcRegion() >= sender.regions() || slice.dstRegion() >= receiver.regions()) {
                throw new IllegalArgumentException(backend + ": a slice moves region " + slice.srcRegion() + " to " + slice.dstRegion()
                        + ", but the sender has " + sender.regions() + " regions and the receiver " + receiver.regions());
            }
            long srcStride = sender.pageStrides().get(slice.srcRegion());
            long dstStride = receiver.pageStrides().get(slice.dstRegion());
            if (slice.srcRowStride() * rowsPerPage != srcStride || slice.dstRowStride() * rowsPerPage != dstStride) {
                throw new IllegalArgumentException(backend + ": a slice's rows (" + slice.srcRowStride() + " -> " + slice.dstRowStride() + " bytes, "
                        + rowsPerPage + " per page) are not the pages of regions " + slice.srcRegion() + " (" + srcStride + " bytes) and "
                        + slice.dstRegion() + " (" + dstStride + " bytes); both sides must serve the same model, page size and dtype");
            }
        }
    }

    /** Where one copy of a run goes: its slice, the offsets in the slice's source and destination regions, its length. */
    @FunctionalInterface
    public interface Piece
    {
        void at(int slice, long srcOffset, long dstOffset, long length);
    }

    /**
     * The copies that move pages {@code srcPage..srcPage+count-1} to {@code dstPage..}: per slice, one copy of the whole run
     * when its rows are whole, else one per row, in slice order then row order.
     */
    public void pieces(long srcPage, long dstPage, int count, Piece piece)
    {
        for (int i = 0; i < slices.size(); i++) {
            pieces(i, srcPage, dstPage, count, piece);
        }
    }

    /** The copies of slice {@code index} alone, as {@link #pieces(long, long, int, Piece)} makes them. */
    public void pieces(int index, long srcPage, long dstPage, int count, Piece piece)
    {
        RegionSlice slice = slices.get(index);
        long srcStart = srcPage * rowsPerPage * slice.srcRowStride();
        long dstStart = dstPage * rowsPerPage * slice.dstRowStride();
        if (slice.wholeRows()) {
            piece.at(index, srcStart, dstStart, (long) count * rowsPerPage * slice.bytes());
            return;
        }
        long rows = (long) count * rowsPerPage;
        for (long row = 0; row < rows; row++) {
            piece.at(index, srcStart + row * slice.srcRowStride() + slice.srcOffset(), dstStart + row * slice.dstRowStride() + slice.dstOffset(),
                    slice.bytes());
        }
    }

    /** Bytes slice {@code index} moves for {@code count} pages. */
    public long bytes(int index, int count)
    {
        return (long) count * rowsPerPage * slices.get(index).bytes();
    }

    /**
     * Copies pages {@code srcPage..srcPage+count-1} of {@code sources} (the sender's region segments, by index) to
     * {@code dstPage..} of {@code destinations} (the receiver's); returns the bytes copied.
     */
    public long copy(MemorySegment[] sources, MemorySegment[] destinations, long srcPage, long dstPage, int count)
    {
        long[] bytes = {0};
        pieces(srcPage, dstPage, count, (slice, srcOffset, dstOffset, length) -> {
            RegionSlice s = slices.get(slice);
            MemorySegment.copy(sources[s.srcRegion()], srcOffset, destinations[s.dstRegion()], dstOffset, length);
            bytes[0] += length;
        });
        return bytes[0];
    }
}
