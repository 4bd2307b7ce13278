package io.handoff.demo;

import java.util.OptionalInt;

/** The demo's servers could not be brought up; the message says which one, why, and what it logged. */
public final class StartupFailure
        extends Exception
{
    private final int takenPort;

    public StartupFailure(String message)
    {
        this(message, -1);
    }

    /** @param takenPort the port a server could not listen on because another program held it; -1 for another failure */
    public StartupFailure(String message, int takenPort)
    {
        super(message);
        this.takenPort = takenPort;
    }

    /** The port a server ended on because another program held it (one chosen free may be taken before the bind); empty otherwise. */
    public OptionalInt takenPort()
    {
        return takenPort < 0 ? OptionalInt.empty() : OptionalInt.of(takenPort);
    }
}
