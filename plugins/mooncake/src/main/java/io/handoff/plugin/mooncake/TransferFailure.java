package io.handoff.plugin.mooncake;

/**
 * Why a plan did not land, for its listener. {@code settled} says whether the sender knows that no write of
 * the plan can still land on the receiver; when it does not, the peer's drains can no longer be promised.
 */
final class TransferFailure
        extends Exception
{
    private final boolean settled;

    TransferFailure(String reason, boolean settled)
    {
        super(reason, null, false, false);
        this.settled = settled;
    }

    boolean settled()
    {
        return settled;
    }
}
