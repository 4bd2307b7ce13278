package io.handoff.core.fault;

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
}
