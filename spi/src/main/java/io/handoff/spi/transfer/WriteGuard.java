package io.handoff.spi.transfer;

/**
 * The receiving core's word on whether a write may land (invariant I2). A backend whose receiver
 * copies data itself ({@link TransferCapability#RECEIVER_VALIDATED_WRITES}) opens a permit before
 * writing each run into the pool and closes it when the bytes are in (or the write failed). While a
 * permit is open, the core does not reuse the room's pages; once the room is retired, no new permit
 * is given, so a late write of a retired generation is dropped instead of landing in reused pages.
 */
@FunctionalInterface
public interface WriteGuard
{
    WriteGuard ALLOW_ALL = (room, page, count) -> () -> {};

    /**
     * A permit to write pages {@code page .. page+count-1} of every region for {@code room}, or null when
     * they are not (or no longer) granted to it.
     */
    Permit open(RoomKey room, int page, int count);

    /** An admitted write in progress. */
    @FunctionalInterface
    interface Permit
            extends AutoCloseable
    {
        @Override
        void close();
    }
}
