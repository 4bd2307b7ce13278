package io.handoff.demo;

/** The demo's servers could not be brought up; the message says which one, why, and what it logged. */
public final class StartupFailure
        extends Exception
{
    public StartupFailure(String message)
    {
        super(message);
    }
}
