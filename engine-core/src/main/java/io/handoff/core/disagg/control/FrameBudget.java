package io.handoff.core.disagg.control;

import java.util.concurrent.atomic.AtomicLong;

/**
 * The bytes of partly received control frames held at once, over every connection of a process
 * (handoff.security.frame-bytes-in-flight). A reader reserves before it grows a frame's buffer and gives back when
 * the frame is decoded or its connection dies, so however many connections announce large frames, what they can
 * make this process hold is bounded by this budget, and by what they actually sent.
 */
public final class FrameBudget
{
    private final long limit;
    private final AtomicLong held = new AtomicLong();
    private final AtomicLong refused = new AtomicLong();

    public FrameBudget(long limit)
    {
        if (limit < 1) {
            throw new IllegalArgumentException("frame budget must be positive, was " + limit);
        }
        this.limit = limit;
    }

    /** Takes {@code bytes} from the budget; false, taking nothing, when that would exceed it. */
    boolean reserve(long bytes)
    {
        if (bytes < 0) {
            throw new IllegalArgumentException("cannot reserve " + bytes + " bytes");
        }
        while (true) {
            long now = held.get();
            if (now + bytes > limit) {
                refused.incrementAndGet();
                return false;
            }
            if (held.compareAndSet(now, now + bytes)) {
                return true;
            }
        }
    }

    void release(long bytes)
    {
        long after = held.addAndGet(-bytes);
        if (after < 0) {
            throw new IllegalStateException("frame budget released more than it reserved (" + after + ")");
        }
    }

    public long limit()
    {
        return limit;
    }

    /** Bytes reserved by readers now. */
    public long held()
    {
        return held.get();
    }

    /** Reservations refused so far (each closed a connection). */
    public long refused()
    {
        return refused.get();
    }
}
