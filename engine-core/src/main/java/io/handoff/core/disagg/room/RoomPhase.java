package io.handoff.core.disagg.room;

/**
 * Where a room is, on either side. The three live phases each have a deadline ({@link RoomDeadlines});
 * {@link #SUCCESS} and {@link #FAILED} are terminal and each room reaches exactly one of them.
 */
public enum RoomPhase
{
    /** Sender: waiting for the decode's destination pages. Receiver: connecting to the prefill (handshake, region registration). */
    BOOTSTRAPPING,
    /** Sender: pages known, waiting for the forward of the next chunk. Receiver: pages sent, waiting for the first chunk. */
    WAITING_FOR_INPUT,
    /** Sender: plans posted, waiting for their completions. Receiver: chunks arriving, waiting for the rest and the aux record. */
    TRANSFERRING,
    SUCCESS,
    FAILED;

    public boolean isTerminal()
    {
        return this == SUCCESS || this == FAILED;
    }
}
