package io.handoff.spi.transfer;

/**
 * Why a plan did not land, as a backend reports it through {@link PlanWork#failed}. The message
 * is what the plan's listener hears, so it says what was wrong and how much of the plan was written.
 * {@code settled} says whether the sender knows that no write of the plan can still land on the receiver:
 * true when nothing was sent, or when every write it started has landed, been refused, or failed for good;
 * false when a write was handed to the transport and its end was not seen (a flush or an acknowledgement
 * that did not come in time, a connection lost without the receiver confirming it stopped writing). After
 * one unsettled failure the peer's drains fail, because "nothing in flight" can no longer be proved (I2).
 */
public final class TransferFailure
        extends Exception
{
    private final boolean settled;

    public TransferFailure(String reason, boolean settled)
    {
        // No stack trace: this is an outcome for an operator, not a bug report.
        super(reason, null, false, false);
        this.settled = settled;
    }

    /** Whether no write of the failed plan can still land on the receiver. */
    public boolean settled()
    {
        return settled;
    }
}
