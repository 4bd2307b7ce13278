package io.handoff.spi.transfer;

import java.util.Set;

/**
 * A backend's connection to one receiver: the smallest thing that moves a plan's pages. The core drives it and
 * owns every rule around it (I1, I2): it runs one transfer thread per peer that hands plans to {@link #send} in
 * post order, one at a time (or, to a peer reporting {@link TransferCapability#PIPELINED}, up to the engine's window
 * of plans before their outcomes are reported); it checks each plan against both sides' pages before handing it over; it waits on the
 * plan's producer fence itself unless {@link #capabilities} contains {@link TransferCapability#FORWARD_SYNC}; it
 * delivers exactly one outcome per plan to the room that posted it, detects an outcome reported twice or never,
 * and then fences this peer; it answers drains; and it closes the peer. A backend never queues, retries, or keeps
 * per-room state.
 */
public interface TransferPeer
{
    /** The transport actually chosen for this peer (e.g. "tcp" or "shm"). */
    String transport();

    /**
     * The receiver's regions as its descriptor describes them. The core checks every plan's destination pages against
     * it before handing the plan over.
     */
    PageGeometry receiverGeometry();

    /**
     * What this connection guarantees; may be narrower than the provider's declaration (e.g. per transport). The
     * core decides early send per connection from it, and waits on the fence for a connection without
     * {@link TransferCapability#FORWARD_SYNC}.
     */
    Set<TransferCapability> capabilities();

    /**
     * Moves {@code work.plan()}'s pages to the receiver; called on the core's transfer thread for this peer, one
     * call at a time. The plan lies inside both sides' pages. Report the outcome exactly once, through
     * {@link PlanWork#completed} or {@link PlanWork#failed}, before returning or later from another thread (the
     * core waits for it, bounded, before it hands over the next plan; a {@link TransferCapability#PIPELINED} peer is
     * handed the next plans meanwhile, up to the window, and may report them in any order). Call {@link PlanWork#reading} immediately
     * before reading the first source page, and {@link PlanWork#pageDone} after each page; look at
     * {@link PlanWork#stopped} between pieces. A runtime exception is taken for a bug: the plan fails unsettled.
     */
    void send(PlanWork work);

    /** Called once when the core closes the peer, on the closing thread: wake {@link #send}'s blocked I/O. */
    default void unblock()
    {
    }

    /** Called by the core on the transfer thread after the last plan: release the connection. */
    void close();
}
