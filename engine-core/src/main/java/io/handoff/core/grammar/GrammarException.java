package io.handoff.core.grammar;

/** A schema, pattern or grammar that cannot be compiled or enforced; the message says what and why. */
public final class GrammarException
        extends RuntimeException
{
    public GrammarException(String message)
    {
        super(message);
    }
}
