package io.handoff.testkit.transfer;

import io.handoff.core.transfer.PlanListener;
import io.handoff.spi.transfer.TransferPlan;

import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicInteger;

import static java.util.Objects.requireNonNull;

/** A listener that keeps a plan's outcome, counts how often it was called, and logs it to an event list. */
public final class Outcome
        implements PlanListener
{
    /** {@code bytes} for a completed plan, or -1 with the failure's reason. */
    public record Result(long bytes, String failure)
    {
        public boolean completed()
        {
            return failure == null;
        }
    }

    private final CompletableFuture<Result> result = new CompletableFuture<>();
    private final AtomicInteger calls = new AtomicInteger();
    private final List<String> events;

    /** Logs "completed ROOM chunk N" or "failed ROOM chunk N" to {@code events}, after the hooks a {@link RecordingHooks} logs there. */
    public Outcome(List<String> events)
    {
        this.events = requireNonNull(events, "events is null");
    }

    public Outcome()
    {
        this(new CopyOnWriteArrayList<>());
    }

    @Override
    public void completed(TransferPlan plan, long bytes)
    {
        calls.incrementAndGet();
        events.add("completed " + plan.room() + " chunk " + plan.chunk());
        result.complete(new Result(bytes, null));
    }

    @Override
    public void failed(TransferPlan plan, String reason)
    {
        calls.incrementAndGet();
        events.add("failed " + plan.room() + " chunk " + plan.chunk());
        result.complete(new Result(-1, reason));
    }

    /** The outcome, once heard; a plan that is never reported fails the test after 30 seconds. */
    public Result await()
            throws InterruptedException, ExecutionException, TimeoutException
    {
        return result.get(30, TimeUnit.SECONDS);
    }

    public boolean isDone()
    {
        return result.isDone();
    }

    /** How often the listener was called: the core promises exactly once per plan. */
    public int calls()
    {
        return calls.get();
    }
}
