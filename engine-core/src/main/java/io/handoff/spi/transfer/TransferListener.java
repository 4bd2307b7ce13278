package io.handoff.spi.transfer;

/**
 * How a backend reports a posted plan's outcome: exactly one call per plan, from any thread. The core
 * owns everything that follows (room state, acks, retries, release); a backend never retries on its own.
 */
public interface TransferListener
{
    /** Every byte of the plan is in the peer's memory (or, for a receiver-validated transport, was accepted there). */
    void completed(TransferPlan plan, long bytes);

    /** The plan did not (entirely) land; {@code reason} says why, for the operator. */
    void failed(TransferPlan plan, String reason);
}
