package io.handoff.spi.transfer;

/**
 * One request's transfer session between a prefill and a decode. A reused room id gets a new
 * generation, and everything that travels (plans, writes, control messages) carries both, so a
 * late write of a retired generation can be recognised and dropped.
 */
public record RoomKey(long roomId, int generation)
{
    public RoomKey
    {
        if (generation < 0) {
            throw new IllegalArgumentException("generation must be >= 0, was " + generation);
        }
    }

    @Override
    public String toString()
    {
        return roomId + "#" + generation;
    }
}
