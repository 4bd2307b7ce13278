package io.handoff.plugin.nixl;

/**
 * The staging buffer cut into slots that batches take in turn, so that batch k+1 is gathered into one slot while the
 * puts of batch k still read the other. Two slots when the buffer holds two pages of every region, else one (then
 * each batch's puts complete before the next gather). Slot sizes are whole multiples of 64 bytes so pieces stay
 * cache-line aligned.
 */
final class StagingSlots
{
    private final long capacity;
    private final int count;
    private final long slotBytes;
    private int current = -1;

    /**
     * @param capacity the staging buffer's size
     * @param bytesPerPage one page of every region
     */
    StagingSlots(long capacity, long bytesPerPage)
    {
        if (bytesPerPage <= 0 || bytesPerPage > capacity) {
            throw new IllegalArgumentException("one page of every region is " + bytesPerPage + " bytes, more than the "
                    + capacity + "-byte staging buffer");
        }
        this.capacity = capacity;
        long half = (capacity / 2) & ~63L;
        this.count = half >= bytesPerPage ? 2 : 1;
        this.slotBytes = count == 2 ? half : capacity;
    }

    /** How many slots the buffer holds: 1 or 2. */
    int count()
    {
        return count;
    }

    /** The most bytes a batch gathered into one slot may hold. */
    long slotBytes()
    {
        return slotBytes;
    }

    /** Moves to the next slot (the first on the first call) and returns its offset in the buffer. */
    long advance()
    {
        current = (current + 1) % count;
        long offset = current * slotBytes;
        if (offset + slotBytes > capacity) {
            throw new IllegalStateException("slot " + current + " ends past the " + capacity + "-byte buffer");
        }
        return offset;
    }

    /** Starts again from the first slot (each plan does: nothing of an earlier plan is still in flight). */
    void reset()
    {
        current = -1;
    }
}
