package io.handoff.plugin.nixl;

/**
 * Why a plan failed, and whether the failure is settled: {@code settled} means none of the plan's writes can still
 * land (nothing was sent, or every put completed or failed). An unsettled failure takes the peer's drain promise away.
 */
final class TransferFailure
        extends Exception
{
    private final boolean settled;

    TransferFailure(String message, boolean settled)
    {
        super(message, null, false, false);
        this.settled = settled;
    }

    boolean settled()
    {
        return settled;
    }
}
