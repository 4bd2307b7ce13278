package io.handoff.spi.transfer;

import java.util.Set;
import java.util.concurrent.CompletableFuture;

/** A sender's connection to one receiver. */
public interface TransferPeer
        extends AutoCloseable
{
    /** The transport actually chosen for this peer (e.g. "tcp" or "shm"). */
    String transport();

    /** What this connection guarantees; may be narrower than the backend's declaration (e.g. per transport). */
    Set<TransferCapability> capabilities();

    /**
     * Queues a plan and returns at once (the scheduler thread calls it). The listener hears exactly once.
     * A backend honours the fence as its declared capabilities say.
     */
    void post(TransferPlan plan, TransferListener listener);

    /**
     * Completes when no write for {@code room} can still land on the peer: every plan posted for it has
     * completed or failed and nothing is queued. This is what a drain ack promises.
     */
    CompletableFuture<Void> drain(RoomKey room);

    @Override
    void close();
}
