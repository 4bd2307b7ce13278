package io.handoff.core.transfer;

/**
 * A receiver's pool file that a sender will not map: outside its engine's run directory, a link, another user's,
 * readable by others, of the wrong size, or swapped while it was being opened. Nothing was written to it.
 */
public final class PoolGrantRefused
        extends IllegalArgumentException
{
    public PoolGrantRefused(String message)
    {
        super(message);
    }
}
