package io.handoff.router;

import java.security.SecureRandom;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The {@code bootstrap_room} of each request of one router process: a random 48-bit start, then
 * consecutive; a request of several generations takes a block of consecutive rooms. One router never repeats a room; two routers in front of the same servers start far apart.
 * Staying under 2^53 keeps a room exact in a JSON reader that holds numbers as doubles.
 */
final class RoomIds
{
    private static final long START_MASK = (1L << 48) - 1;

    private final AtomicLong next;

    RoomIds(long start)
    {
        this.next = new AtomicLong(start & START_MASK);
    }

    static RoomIds random()
    {
        return new RoomIds(new SecureRandom().nextLong());
    }

    long next()
    {
        return next(1);
    }

    /** The first of {@code count} consecutive rooms, for a request of that many generations (room {@code first + i} is generation i's). */
    long next(int count)
    {
        if (count < 1) {
            throw new IllegalArgumentException("count must be at least 1, was " + count);
        }
        return next.getAndAdd(count);
    }
}
