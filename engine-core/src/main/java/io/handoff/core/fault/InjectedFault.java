package io.handoff.core.fault;

/** The failure a {@link FaultPlan} raises at a point: engine code treats it like any other failure there. */
public final class InjectedFault
        extends RuntimeException
{
    public InjectedFault(FaultPoint point, long a, long b)
    {
        super("injected fault at " + point.description() + " (" + a + ", " + b + ")");
    }
}
