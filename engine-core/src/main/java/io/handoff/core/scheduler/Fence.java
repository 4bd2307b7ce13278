package io.handoff.core.scheduler;

import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * The completion token of one forward step, like a GPU event. Pages written by step {@code k} carry
 * fence {@code k}; nothing may read them (a transfer above all) before it completes (invariant I1).
 */
public final class Fence
        implements io.handoff.spi.transfer.ProducerFence
{
    private final long step;
    private final CompletableFuture<Void> done = new CompletableFuture<>();

    public Fence(long step)
    {
        this.step = step;
    }

    /** A fence for data that is already final (e.g. a prefix-cache hit written by an earlier, finished step). */
    public static Fence completed(long step)
    {
        Fence fence = new Fence(step);
        fence.complete();
        return fence;
    }

    @Override
    public long step()
    {
        return step;
    }

    @Override
    public boolean isDone()
    {
        return done.isDone();
    }

    /** Whether the step failed; its pages hold garbage and must not be sent. */
    @Override
    public boolean failed()
    {
        return done.isCompletedExceptionally();
    }

    /** Blocks until the step finished. Throws if it failed, or if it did not finish in time. */
    @Override
    public void await(Duration timeout)
            throws TimeoutException
    {
        try {
            done.get(timeout.toNanos(), TimeUnit.NANOSECONDS);
        }
        catch (ExecutionException e) {
            throw new IllegalStateException("step " + step + " failed", e.getCause());
        }
        catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted waiting for step " + step, e);
        }
    }

    /** Runs {@code action} once the step has finished (successfully or not), on the completing thread. */
    public void onComplete(Runnable action)
    {
        done.whenComplete((ignored, error) -> action.run());
    }

    void complete()
    {
        done.complete(null);
    }

    void fail(Throwable error)
    {
        done.completeExceptionally(error);
    }

    @Override
    public String toString()
    {
        return "Fence[step " + step + (isDone() ? (failed() ? ", failed]" : ", done]") : ", pending]");
    }
}
