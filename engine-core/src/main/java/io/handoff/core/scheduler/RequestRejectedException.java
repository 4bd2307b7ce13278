package io.handoff.core.scheduler;

/** A request the engine will not run, with the reason a client can act on. */
public final class RequestRejectedException
        extends RuntimeException
{
    public enum Kind
    {
        /** The request itself is wrong (empty prompt, too long, bad parameters): a client error. */
        INVALID,
        /** The engine is full right now (waiting queue at its bound): retry later. */
        OVERLOADED,
        /** The engine is shutting down. */
        SHUTTING_DOWN
    }

    private final Kind kind;

    public RequestRejectedException(Kind kind, String message)
    {
        super(message);
        this.kind = kind;
    }

    public Kind kind()
    {
        return kind;
    }
}
