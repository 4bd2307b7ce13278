package io.handoff.testkit.transfer;

import io.handoff.spi.transfer.ProducerFence;

import java.time.Duration;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * A producer fence the test finishes (or fails) by hand, like the completion of a forward step it controls; it
 * also says when the transfer thread started waiting on it, so a test knows the plan is held without sleeping.
 */
public final class ControlledFence
        implements ProducerFence
{
    private final long step;
    private final CountDownLatch done = new CountDownLatch(1);
    private final CountDownLatch awaited = new CountDownLatch(1);
    private volatile boolean failed;

    public ControlledFence(long step)
    {
        this.step = step;
    }

    public void complete()
    {
        done.countDown();
    }

    public void fail()
    {
        failed = true;
        done.countDown();
    }

    /** Blocks until the transfer thread waited on this fence at least once. */
    public void awaitWaiter()
            throws InterruptedException
    {
        if (!awaited.await(30, TimeUnit.SECONDS)) {
            throw new AssertionError("the transfer thread never waited on the fence of step " + step);
        }
    }

    /** Whether anyone waited on this fence. */
    public boolean wasAwaited()
    {
        return awaited.getCount() == 0;
    }

    @Override
    public long step()
    {
        return step;
    }

    @Override
    public boolean isDone()
    {
        return done.getCount() == 0;
    }

    @Override
    public boolean failed()
    {
        return failed;
    }

    @Override
    public void await(Duration timeout)
            throws TimeoutException
    {
        awaited.countDown();
        try {
            if (!done.await(timeout.toNanos(), TimeUnit.NANOSECONDS)) {
                throw new TimeoutException("step " + step + " not done");
            }
        }
        catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted while waiting on the fence of step " + step, e);
        }
        if (failed) {
            throw new IllegalStateException("step " + step + " failed");
        }
    }
}
