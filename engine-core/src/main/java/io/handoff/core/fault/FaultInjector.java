package io.handoff.core.fault;

import java.lang.foreign.MemorySegment;

/**
 * What engine code calls at a {@link FaultPoint}. Production code holds {@link #NONE}, whose empty
 * method the JIT inlines away, so the points cost nothing when no plan is installed.
 */
public interface FaultInjector
{
    FaultInjector NONE = (point, a, b) -> {};

    /**
     * Called when execution reaches {@code point} with its two coordinates. May block (park), sleep
     * (delay) or throw {@link InjectedFault} (fail), as the installed plan says.
     */
    void hit(FaultPoint point, long a, long b);

    /**
     * A hit at a point that {@linkplain FaultPoint#carriesBytes() carries bytes}: as {@link #hit(FaultPoint, long, long)},
     * and a matching {@code corrupt} rule flips one byte of {@code bytes}.
     */
    default void hit(FaultPoint point, long a, long b, MemorySegment bytes)
    {
        hit(point, a, b);
    }

    /**
     * Whether a hit at {@code point} with these coordinates may do anything (a rule matches them, spent or not); asks,
     * counts nothing. Code that batches work between hits of a point ends a batch where this is true.
     */
    default boolean watches(FaultPoint point, long a, long b)
    {
        return false;
    }
}
