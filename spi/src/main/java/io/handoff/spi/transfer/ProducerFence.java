package io.handoff.spi.transfer;

import java.time.Duration;
import java.util.concurrent.TimeoutException;

/**
 * The completion of the forward step that wrote a plan's source pages (invariant I1). A backend that
 * declares {@link TransferCapability#FORWARD_SYNC} waits on it on its transfer thread before reading a
 * page; one that declares {@link TransferCapability#STAGING} waits on it before snapshotting. The
 * scheduler thread never waits on it for a transfer.
 */
public interface ProducerFence
{
    /** A fence for pages that are already final. */
    ProducerFence DONE = new ProducerFence()
    {
        @Override
        public boolean isDone()
        {
            return true;
        }

        @Override
        public boolean failed()
        {
            return false;
        }

        @Override
        public void await(Duration timeout)
        {
        }

        @Override
        public long step()
        {
            return -1;
        }
    };

    /** The forward step whose completion this is. */
    long step();

    boolean isDone();

    /** Whether the step failed; its pages must not be sent. */
    boolean failed();

    /** Blocks until the step finished; throws if it failed or did not finish in time. */
    void await(Duration timeout)
            throws TimeoutException;
}
