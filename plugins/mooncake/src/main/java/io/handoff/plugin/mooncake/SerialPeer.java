package io.handoff.plugin.mooncake;

import io.handoff.spi.transfer.MemoryRegion;
import io.handoff.spi.transfer.ProducerFence;
import io.handoff.spi.transfer.RoomKey;
import io.handoff.spi.transfer.TransferCapability;
import io.handoff.spi.transfer.TransferContext;
import io.handoff.spi.transfer.TransferListener;
import io.handoff.spi.transfer.TransferPeer;
import io.handoff.spi.transfer.TransferPlan;

import java.lang.System.Logger;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeoutException;

import static java.lang.System.Logger.Level.WARNING;
import static java.util.Objects.requireNonNull;

/**
 * A peer with one transfer thread that runs posted plans in order. The scheduler thread only queues
 * ({@link #post} never blocks on I/O or a fence); the transfer thread waits on each plan's producer fence
 * before it reads a page (I1, FORWARD_SYNC), calls the context's hooks, hands page batches to the transport,
 * and reports each plan exactly once. It also keeps, per room, the count of plans not yet reported, which is
 * what {@link #drain} waits for (DRAIN_ACK).
 */
abstract sealed class SerialPeer
        implements TransferPeer
        permits TcpPeer, ShmPeer
{
    private static final Logger log = System.getLogger(SerialPeer.class.getName());
    // The fence is awaited in slices so that close() is seen promptly without interrupting the thread
    // (an interrupt would close a tcp channel abruptly, losing the receiver's confirmation).
    private static final Duration FENCE_SLICE = Duration.ofMillis(50);

    private record Posted(TransferPlan plan, TransferListener listener) {}

    /** Plans of one room that were posted and not yet reported, and the drains waiting for none to be left. */
    private static final class RoomPlans
    {
        int outstanding;
        final List<CompletableFuture<Void>> drains = new ArrayList<>(1);
    }

    protected final String name;
    protected final TransferContext context;
    protected final List<MemoryRegion> sources;
    protected final Descriptor remote;
    private final Duration fenceTimeout;
    private final Duration closeWait;
    private final int batchPages;
    private final int sourcePages;
    private final int destinationPages;
    private final Thread thread;

    private final Object lock = new Object();
    private final ArrayDeque<Posted> queue = new ArrayDeque<>();
    private final Map<RoomKey, RoomPlans> rooms = new HashMap<>();
    private volatile boolean closed;
    // Set when a plan failed without proof that none of its writes can still land: no drain is promised after that.
    private String unprovable;

    protected SerialPeer(String name, TransferContext context, List<MemoryRegion> sources, Descriptor remote, MooncakeConfig config)
    {
        this.name = requireNonNull(name, "name is null");
        this.context = requireNonNull(context, "context is null");
        this.sources = List.copyOf(sources);
        this.remote = requireNonNull(remote, "remote is null");
        this.fenceTimeout = config.fenceTimeout();
        // A closing tcp peer may still wait for the receiver's verdict on the plan in flight.
        this.closeWait = config.ackTimeout().plus(Duration.ofSeconds(5));
        long largestStride = 1;
        int pages = Integer.MAX_VALUE;
        int remotePages = Integer.MAX_VALUE;
        for (int i = 0; i < this.sources.size(); i++) {
            largestStride = Math.max(largestStride, this.sources.get(i).pageStride());
            pages = Math.min(pages, this.sources.get(i).pages());
            remotePages = Math.min(remotePages, remote.regions().get(i).pages());
        }
        long frameBytes = Math.min(config.maxFrameBytes(), remote.maxFrameBytes());
        this.batchPages = (int) Math.max(1, Math.min(Integer.MAX_VALUE, frameBytes / largestStride));
        this.sourcePages = pages;
        this.destinationPages = remotePages;
        this.thread = Thread.ofPlatform().daemon().name("mooncake-" + name).unstarted(this::transferLoop);
    }

    /** Starts the transfer thread; the last step of a subclass's factory. */
    protected final void start()
    {
        thread.start();
    }

    /** Copies pages {@code srcPage..+count-1} of source region {@code region} to the peer's {@code dstPage..}; returns the bytes. */
    protected abstract long writePages(TransferPlan plan, int region, int srcPage, int dstPage, int count)
            throws TransferFailure;

    /** After all of a plan's pages were handed over: returns once they landed (the bytes landed), or throws. */
    protected abstract long finishPlan(TransferPlan plan, long bytes)
            throws TransferFailure;

    /** The plan stopped part way ({@code reason}); throws a failure saying whether its written part is settled. */
    protected abstract TransferFailure abortPlan(TransferPlan plan, String reason);

    /** Throws if the connection can no longer carry plans. */
    protected void checkUsable()
            throws TransferFailure
    {
    }

    /** Called from {@link #close} on the closing thread: unblock the transfer thread's I/O (it is about to stop). */
    protected void unblock()
    {
    }

    /** Called on the transfer thread after its last plan: release the connection or the mapping. */
    protected abstract void release();

    @Override
    public final void post(TransferPlan plan, TransferListener listener)
    {
        requireNonNull(plan, "plan is null");
        requireNonNull(listener, "listener is null");
        synchronized (lock) {
            if (!closed) {
                queue.addLast(new Posted(plan, listener));
                rooms.computeIfAbsent(plan.room(), _ -> new RoomPlans()).outstanding++;
                lock.notifyAll();
                return;
            }
        }
        report(listener, plan, null, "mooncake peer " + name + " is closed; the plan was not sent");
    }

    @Override
    public final CompletableFuture<Void> drain(RoomKey room)
    {
        requireNonNull(room, "room is null");
        synchronized (lock) {
            if (unprovable != null) {
                return CompletableFuture.failedFuture(new IllegalStateException("mooncake peer " + name
                        + " cannot prove that no write of room " + room + " is in flight: " + unprovable));
            }
            RoomPlans plans = rooms.get(room);
            if (plans == null) {
                return CompletableFuture.completedFuture(null);
            }
            CompletableFuture<Void> drained = new CompletableFuture<>();
            plans.drains.add(drained);
            return drained;
        }
    }

    /** Fails the queued plans and stops the transfer thread once its current plan finished or failed. */
    @Override
    public final void close()
    {
        List<Posted> dropped;
        synchronized (lock) {
            if (closed) {
                return;
            }
            closed = true;
            dropped = new ArrayList<>(queue);
            queue.clear();
            lock.notifyAll();
        }
        for (Posted posted : dropped) {
            finish(posted, null, "mooncake peer " + name + " was closed before the plan was sent", true);
        }
        unblock();
        if (Thread.currentThread() != thread) {
            try {
                thread.join(closeWait);
            }
            catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            if (thread.isAlive()) {
                log.log(WARNING, "mooncake peer " + name + ": the transfer thread did not stop; its connection stays open until it does");
            }
        }
    }

    protected final boolean isClosed()
    {
        return closed;
    }

    private void transferLoop()
    {
        try {
            while (true) {
                Posted next;
                synchronized (lock) {
                    while (queue.isEmpty() && !closed) {
                        lock.wait();
                    }
                    next = queue.pollFirst();
                }
                if (next == null) {
                    return;
                }
                run(next);
            }
        }
        catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        finally {
            release();
        }
    }

    private void run(Posted posted)
    {
        TransferPlan plan = posted.plan();
        boolean sending = false;
        long bytes;
        try {
            checkPlan(plan);
            checkUsable();
            awaitFence(plan);
            if (closed) {
                throw new TransferFailure("mooncake peer " + name + " was closed before room " + plan.room() + " chunk " + plan.chunk()
                        + " was sent; nothing was sent", true);
            }
            sending = true;
            bytes = send(plan);
        }
        catch (TransferFailure failure) {
            finish(posted, null, failure.getMessage(), failure.settled());
            return;
        }
        catch (RuntimeException e) {
            // A bug (or a fence that throws from isDone): report the plan, keep the thread, and promise nothing once bytes moved.
            log.log(WARNING, "mooncake peer " + name + ": room " + plan.room() + " chunk " + plan.chunk() + " failed unexpectedly", e);
            finish(posted, null, "mooncake peer " + name + " failed unexpectedly on room " + plan.room() + " chunk " + plan.chunk()
                    + ": " + e, !sending);
            return;
        }
        finish(posted, bytes, null, true);
    }

    private long send(TransferPlan plan)
            throws TransferFailure
    {
        RoomKey room = plan.room();
        int[] srcPages = plan.srcPages();
        int[] dstPages = plan.dstPages();
        int[] runLengths = plan.runLengths();
        int pageIndex = plan.firstPageIndex();
        long bytes = 0;
        try {
            context.beforeReadingChunk(room, plan.chunk());
            for (int run = 0; run < runLengths.length; run++) {
                for (int done = 0; done < runLengths[run]; ) {
                    if (closed) {
                        throw abortPlan(plan, "mooncake peer " + name + " was closed while sending room " + room + " chunk " + plan.chunk());
                    }
                    int count = Math.min(runLengths[run] - done, batchPages);
                    for (int region = 0; region < sources.size(); region++) {
                        bytes += writePages(plan, region, srcPages[run] + done, dstPages[run] + done, count);
                    }
                    for (int page = 0; page < count; page++) {
                        context.afterPage(room, pageIndex++);
                    }
                    done += count;
                }
            }
        }
        catch (RuntimeException e) {
            // A fault hook (or a bug) stopped the plan part way: tell the receiver, so the connection stays in step.
            throw abortPlan(plan, "sending room " + room + " chunk " + plan.chunk() + " stopped at page " + pageIndex + ": " + e);
        }
        return finishPlan(plan, bytes);
    }

    private void checkPlan(TransferPlan plan)
            throws TransferFailure
    {
        int[] srcPages = plan.srcPages();
        int[] dstPages = plan.dstPages();
        int[] runLengths = plan.runLengths();
        for (int run = 0; run < runLengths.length; run++) {
            long src = srcPages[run];
            long dst = dstPages[run];
            if (src < 0 || src + runLengths[run] > sourcePages || dst < 0 || dst + runLengths[run] > destinationPages) {
                throw new TransferFailure("plan for room " + plan.room() + " chunk " + plan.chunk() + ": run " + run + " copies pages "
                        + src + "+" + runLengths[run] + " to " + dst + "+" + runLengths[run] + ", outside the " + sourcePages
                        + " source or " + destinationPages + " destination pages; nothing was sent", true);
            }
        }
    }

    /** I1: no page of the plan is read before the forward that wrote it finished. */
    private void awaitFence(TransferPlan plan)
            throws TransferFailure
    {
        ProducerFence fence = plan.fence();
        long deadline = System.nanoTime() + fenceTimeout.toNanos();
        while (!fence.isDone()) {
            if (closed) {
                throw new TransferFailure("mooncake peer " + name + " was closed while room " + plan.room() + " chunk " + plan.chunk()
                        + " waited on the fence of step " + fence.step() + "; nothing was sent", true);
            }
            long left = deadline - System.nanoTime();
            if (left <= 0) {
                throw new TransferFailure("the forward step " + fence.step() + " that wrote room " + plan.room() + " chunk " + plan.chunk()
                        + " did not finish within fence-timeout " + fenceTimeout + "; nothing was sent", true);
            }
            try {
                fence.await(Duration.ofNanos(Math.min(left, FENCE_SLICE.toNanos())));
            }
            catch (TimeoutException e) {
                // Not yet: look at close() and the deadline, then wait again.
            }
            catch (RuntimeException e) {
                throw new TransferFailure("the forward step " + fence.step() + " that wrote room " + plan.room() + " chunk " + plan.chunk()
                        + " failed (" + e.getMessage() + "); nothing was sent", true);
            }
        }
        if (fence.failed()) {
            throw new TransferFailure("the forward step " + fence.step() + " that wrote room " + plan.room() + " chunk " + plan.chunk()
                    + " failed; nothing was sent", true);
        }
    }

    private void finish(Posted posted, Long bytes, String failure, boolean settled)
    {
        report(posted.listener(), posted.plan(), bytes, failure);
        List<CompletableFuture<Void>> drained = List.of();
        String proofMissing;
        synchronized (lock) {
            if (!settled && unprovable == null) {
                unprovable = failure;
            }
            proofMissing = unprovable;
            RoomPlans plans = rooms.get(posted.plan().room());
            if (--plans.outstanding == 0) {
                rooms.remove(posted.plan().room());
                drained = plans.drains;
            }
        }
        for (CompletableFuture<Void> drain : drained) {
            if (proofMissing == null) {
                drain.complete(null);
            }
            else {
                drain.completeExceptionally(new IllegalStateException("mooncake peer " + name + " cannot prove that no write of room "
                        + posted.plan().room() + " is in flight: " + proofMissing));
            }
        }
    }

    private void report(TransferListener listener, TransferPlan plan, Long bytes, String failure)
    {
        try {
            if (failure == null) {
                listener.completed(plan, bytes);
            }
            else {
                listener.failed(plan, failure);
            }
        }
        catch (RuntimeException e) {
            log.log(WARNING, "mooncake peer " + name + ": the listener of room " + plan.room() + " chunk " + plan.chunk() + " threw", e);
        }
    }

    @Override
    public final Set<TransferCapability> capabilities()
    {
        return transportKind().capabilities();
    }

    @Override
    public final String transport()
    {
        return transportKind().id();
    }

    protected abstract Transport transportKind();

    @Override
    public String toString()
    {
        return "mooncake peer " + name + " (" + transport() + ")";
    }
}
