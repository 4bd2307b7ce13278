package io.handoff.core.scheduler;

import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;

/**
 * The engine's compute stream: a single thread that runs forward steps in submission order, each
 * completing its {@link Fence} when done. Because it is one thread, step {@code k+1}'s forward never
 * overlaps step {@code k}'s; what overlaps is the scheduler's CPU work for the next step.
 */
public final class ComputeStream
        implements AutoCloseable
{
    private final ExecutorService executor;

    public ComputeStream(String name)
    {
        this.executor = Executors.newSingleThreadExecutor(runnable -> {
            Thread thread = new Thread(runnable, name);
            thread.setDaemon(true);
            return thread;
        });
    }

    /** Enqueues {@code forward} as step {@code step}; the returned fence completes when it has run. */
    public Fence submit(long step, Runnable forward)
    {
        Fence fence = new Fence(step);
        submit(fence, forward);
        return fence;
    }

    /**
     * Enqueues {@code forward} to complete {@code fence}, for a caller that must publish the fence before
     * the step can start (once enqueued, the step may run, and finish, before this returns).
     */
    public void submit(Fence fence, Runnable forward)
    {
        executor.execute(() -> {
            try {
                forward.run();
                fence.complete();
            }
            catch (Throwable e) {
                fence.fail(e);
            }
        });
    }

    @Override
    public void close()
    {
        executor.shutdownNow();
        try {
            executor.awaitTermination(10, TimeUnit.SECONDS);
        }
        catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
