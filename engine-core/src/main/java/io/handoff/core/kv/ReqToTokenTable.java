package io.handoff.core.kv;

import java.util.Arrays;
import java.util.BitSet;
import java.util.OptionalInt;

import static java.util.Objects.requireNonNull;

/**
 * {@code req_to_token}: for each running request (a row), token position -> token slot in the KV pool,
 * where {@code slot = page * pageSize + offset}. Attention reads KV only through it: decode metadata's
 * {@code kv_indices} for a request is a copy of {@code [row, 0 .. seq_len)}.
 *
 * <p>A row is written without holes: a write may start at most at the row's current length (rewriting
 * earlier positions is fine, e.g. when a request switches to pages the prefix cache already holds),
 * and a read may not go past it. So a read can never return a position nobody wrote, which is the
 * off-by-one seed 001 spent weeks ruling out. Rows are handed out lowest id first.
 *
 * <p>Not thread-safe: the scheduler thread owns it.
 */
public final class ReqToTokenTable
{
    private static final int UNSET = -1;

    private final int rows;
    private final int maxContextLength;
    private final int pageSize;
    private final int[] slots;
    private final int[] lengths;
    private final BitSet freeRows;

    public ReqToTokenTable(int rows, int maxContextLength, int pageSize)
    {
        if (rows < 1 || maxContextLength < 1 || pageSize < 1) {
            throw new IllegalArgumentException("bad req_to_token shape: rows=" + rows + " maxContextLength=" + maxContextLength
                    + " pageSize=" + pageSize);
        }
        this.rows = rows;
        this.maxContextLength = maxContextLength;
        this.pageSize = pageSize;
        this.slots = new int[Math.multiplyExact(rows, maxContextLength)];
        this.lengths = new int[rows];
        this.freeRows = new BitSet(rows);
        Arrays.fill(slots, UNSET);
        freeRows.set(0, rows);
    }

    public int rows()
    {
        return rows;
    }

    public int maxContextLength()
    {
        return maxContextLength;
    }

    public int pageSize()
    {
        return pageSize;
    }

    public int freeRows()
    {
        return freeRows.cardinality();
    }

    /** Takes the lowest free row, empty (and no change) when every row is in use. Its length is 0. */
    public OptionalInt allocateRow()
    {
        int row = freeRows.nextSetBit(0);
        if (row < 0) {
            return OptionalInt.empty();
        }
        freeRows.clear(row);
        return OptionalInt.of(row);
    }

    /** Returns a row; its positions are cleared so a later owner cannot read them. */
    public void freeRow(int row)
    {
        checkInUse(row);
        Arrays.fill(slots, base(row), base(row) + lengths[row], UNSET);
        lengths[row] = 0;
        freeRows.set(row);
    }

    /** Positions {@code 0 .. length(row)} have been written. */
    public int length(int row)
    {
        checkInUse(row);
        return lengths[row];
    }

    /**
     * Points positions {@code [from, to)} of {@code row} at the request's pages: position {@code p} goes
     * to slot {@code pages[p / pageSize] * pageSize + p % pageSize}, i.e. {@code pages} is the request's
     * whole page list from position 0. {@code from} may not be past the row's length.
     */
    public void mapPages(int row, int from, int to, int[] pages)
    {
        checkInUse(row);
        requireNonNull(pages, "pages is null");
        if (from < 0 || from > to || to > maxContextLength) {
            throw new IllegalArgumentException("bad position range [" + from + ", " + to + ") for max context " + maxContextLength);
        }
        if (from > lengths[row]) {
            throw new IllegalArgumentException("row " + row + " has length " + lengths[row] + "; writing from " + from + " would leave a hole");
        }
        if (to > (long) pages.length * pageSize) {
            throw new IllegalArgumentException(pages.length + " pages of " + pageSize + " tokens do not cover position " + (to - 1));
        }
        if (from < to) {
            for (int i = from / pageSize; i <= (to - 1) / pageSize; i++) {
                if (pages[i] < 0 || (long) pages[i] * pageSize + pageSize - 1 > Integer.MAX_VALUE) {
                    throw new IllegalArgumentException("page id " + pages[i] + " (index " + i + ") has no valid slots");
                }
            }
        }
        int base = base(row);
        for (int position = from; position < to; position++) {
            slots[base + position] = pages[position / pageSize] * pageSize + position % pageSize;
        }
        lengths[row] = Math.max(lengths[row], to);
    }

    public int slot(int row, int position)
    {
        if (position < 0) {
            throw new IllegalArgumentException("position must be >= 0, was " + position);
        }
        checkReadable(row, position + 1);
        return slots[base(row) + position];
    }

    /** Copies the slots of positions {@code [0, length)} of {@code row} into {@code dst[dstOffset ..]}. */
    public void read(int row, int length, int[] dst, int dstOffset)
    {
        checkReadable(row, length);
        System.arraycopy(slots, base(row), dst, dstOffset, length);
    }

    /** The slots of positions {@code [0, length)} of {@code row}. */
    public int[] read(int row, int length)
    {
        int[] dst = new int[length];
        read(row, length, dst, 0);
        return dst;
    }

    private void checkReadable(int row, int length)
    {
        checkInUse(row);
        if (length < 0 || length > lengths[row]) {
            throw new IllegalArgumentException("row " + row + " has " + lengths[row] + " positions written; cannot read " + length);
        }
    }

    private void checkInUse(int row)
    {
        if (row < 0 || row >= rows) {
            throw new IllegalArgumentException("row " + row + " is outside the table of " + rows + " rows");
        }
        if (freeRows.get(row)) {
            throw new IllegalStateException("row " + row + " is not allocated");
        }
    }

    private int base(int row)
    {
        return row * maxContextLength;
    }
}
