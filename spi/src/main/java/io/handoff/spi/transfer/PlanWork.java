package io.handoff.spi.transfer;

/**
 * One plan handed to {@link TransferPeer#send}: what to move, the core's hooks on the data path, and the one place
 * to report the outcome. The core implements it and checks how it is used: an outcome reported twice, an outcome
 * never reported, or (for a {@link TransferCapability#FORWARD_SYNC} connection) pages read before the producer
 * fence are protocol violations that fail the plan's room and fence the peer.
 */
public interface PlanWork
{
    /** The plan: page runs to copy and the fence of the forward that wrote them. */
    TransferPlan plan();

    /**
     * For a {@link TransferCapability#FORWARD_SYNC} connection: waits (bounded by the engine's fence timeout, and
     * woken by close) until the plan's producer fence is done, then does what {@link #reading} does. A backend that
     * orders its reads after the fence by other means (a device stream waiting on the fence) calls {@link #reading}
     * instead, once the fence is done. On a connection without FORWARD_SYNC the core waited already and this returns
     * at once.
     *
     * @throws TransferFailure (settled, nothing sent) when the fence failed, timed out, or the peer is closing
     */
    void awaitFence()
            throws TransferFailure;

    /**
     * Call immediately before reading the first source page. The core checks that the plan's producer fence is
     * done (I1) and throws otherwise, and runs the transfer path's fault-injection point for the chunk.
     *
     * @throws TransferFailure (settled) when the fence is not done: the backend must stop and send nothing
     */
    void reading()
            throws TransferFailure;

    /** Call after the page at room-relative {@code pageIndex} was read (and, for a direct write, written). */
    void pageDone(int pageIndex);

    /**
     * For a backend that writes several pages before it reports them: how many of the {@code count} pages from
     * room-relative {@code pageIndex} it may write before it next calls {@link #pageDone}. {@code count}, or fewer so
     * that the batch ends at a page the core watches (a fault point on that page, a test's hook): at that page's
     * {@code pageDone} the pages up to it are written and none after it. At least 1 when {@code count} is.
     */
    default int pagesBeforeWatch(int pageIndex, int count)
    {
        return count;
    }

    /** Whether the core is closing this peer: stop between pieces and report a failure. */
    boolean stopped();

    /** Every byte of the plan is in the receiver's memory (or, for a receiver-validated transport, was accepted there). */
    void completed(long bytes);

    /** The plan did not (entirely) land; the failure says why and whether any write may still land. */
    void failed(TransferFailure failure);
}
