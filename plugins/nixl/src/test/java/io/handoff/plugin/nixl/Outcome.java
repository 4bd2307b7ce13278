package io.handoff.plugin.nixl;

import io.handoff.spi.transfer.TransferListener;
import io.handoff.spi.transfer.TransferPlan;

import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/** A listener that keeps a plan's outcome, counts how often it was called, and logs it to an event list. */
final class Outcome
        implements TransferListener
{
    /** {@code bytes} for a completed plan, or -1 with the failure's reason. */
    record Result(long bytes, String failure)
    {
        boolean completed()
        {
            return failure == null;
        }
    }

    private final CompletableFuture<Result> result = new CompletableFuture<>();
    private final AtomicInteger calls = new AtomicInteger();
    private final List<String> events;

    Outcome(List<String> events)
    {
        this.events = events;
    }

    Outcome()
    {
        this(new java.util.concurrent.CopyOnWriteArrayList<>());
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

    Result await()
            throws Exception
    {
        return result.get(30, TimeUnit.SECONDS);
    }

    boolean isDone()
    {
        return result.isDone();
    }

    int calls()
    {
        return calls.get();
    }
}
