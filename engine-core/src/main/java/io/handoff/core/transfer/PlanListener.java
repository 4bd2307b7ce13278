package io.handoff.core.transfer;

import io.handoff.spi.transfer.TransferPlan;

/**
 * How a {@link TransferLink} reports a posted plan's outcome to the room that posted it: exactly one call per plan.
 * The core owns everything that follows (room state, acks, release).
 */
public interface PlanListener
{
    /** Every byte of the plan is in the peer's memory (or, for a receiver-validated transport, was accepted there). */
    void completed(TransferPlan plan, long bytes);

    /** The plan did not (entirely) land; {@code reason} says why, for the operator. */
    void failed(TransferPlan plan, String reason);
}
