package io.handoff.spi.transfer;

/**
 * The receiving core's word on whether a write may land (invariant I2): a backend whose receiver copies
 * data itself ({@link TransferCapability#RECEIVER_VALIDATED_WRITES}) asks before copying each run, and
 * drops the write when the answer is no (the room was retired, or the page was never granted to it).
 */
public interface WriteGuard
{
    WriteGuard ALLOW_ALL = (room, page, count) -> true;

    /** Whether pages {@code page .. page+count-1} of every region are currently granted to {@code room}. */
    boolean admits(RoomKey room, int page, int count);
}
