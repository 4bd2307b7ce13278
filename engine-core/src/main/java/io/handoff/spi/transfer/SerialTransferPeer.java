package io.handoff.spi.transfer;

import java.lang.System.Logger;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeoutException;

import static java.lang.System.Logger.Level.WARNING;
import static java.util.Objects.requireNonNull;

/**
 * A {@link TransferPeer} whose one transfer thread runs the posted plans one at a time, in the order they were
 * posted. A backend extends it and supplies the data movement ({@link #send}) and a few hooks; this class owns
 * the rest, so that every backend keeps the same promises:
 * <ul>
 *   <li><b>Posting.</b> {@link #post} only queues; it never blocks on I/O or on a fence (the scheduler thread
 *   calls it). A plan posted after {@link #close} fails at once.</li>
 *   <li><b>Per plan</b>, on the transfer thread: the runs are checked against the source and destination page
 *   counts; {@link #checkUsable} is asked; unless {@link #awaitsFence} says no, the producer fence is awaited
 *   (I1) up to fence-timeout; then {@link #send} moves the pages. A check that fails sends nothing.</li>
 *   <li><b>Exactly once.</b> Every posted plan's listener hears exactly once: completed with the bytes
 *   {@code send} returned, or failed with the reason. A listener that throws is logged; the thread goes on.
 *   An {@link Error} from {@code send} fails its plan (unsettled) and every queued one, closes the peer and
 *   ends the thread.</li>
 *   <li><b>Drain</b> (DRAIN_ACK): {@link #drain} completes once every plan posted for the room before it was
 *   called has been reported (after the listener heard), and at once when the room has none outstanding.
 *   Once any plan failed with {@code settled = false}, every drain fails, those waiting and those to come,
 *   naming that plan's reason: the peer can no longer prove that no write is in flight (I2).</li>
 *   <li><b>Close</b> fails the queued plans, calls {@link #unblock}, and waits (at most the close wait) for the
 *   transfer thread to end the plan in flight; the thread then calls {@link #release}. A second close waits
 *   again. Closing from the transfer thread itself (e.g. from a listener) does not wait.</li>
 * </ul>
 * A subclass's factory builds the peer and calls {@link #start} last, once its own fields are set.
 */
public abstract class SerialTransferPeer
        implements TransferPeer
{
    // The fence is awaited in slices so that close() is seen promptly without interrupting the thread
    // (an interrupt would close an interruptible channel abruptly, losing the receiver's confirmation).
    private static final Duration FENCE_SLICE = Duration.ofMillis(50);

    private record Posted(TransferPlan plan, TransferListener listener) {}

    /** Plans of one room that were posted and not yet reported, and the drains waiting for none to be left. */
    private static final class RoomPlans
    {
        int outstanding;
        final List<CompletableFuture<Void>> drains = new ArrayList<>(1);
    }

    private final Logger log = System.getLogger(getClass().getName());
    private final String label;
    private final int sourcePages;
    private final int destinationPages;
    private final Duration fenceTimeout;
    private final Duration closeWait;
    private final Thread thread;

    private final Object lock = new Object();
    private final ArrayDeque<Posted> queue = new ArrayDeque<>();
    private final Map<RoomKey, RoomPlans> rooms = new HashMap<>();
    private volatile boolean closed;
    // Set when a plan failed without proof that none of its writes can still land: no drain is promised after that.
    private String unprovable;

    /**
     * @param backend the backend's id; messages say "{@code <backend> peer <name>}", the thread is "{@code <backend>-<name>}"
     * @param name this connection, for messages and the thread name
     * @param sources the sender's regions; a plan's source pages must lie within them
     * @param destinations the receiver's regions; a plan's destination pages must lie within them
     * @param fenceTimeout how long a plan waits for its producer fence before it fails (settled, nothing sent)
     * @param closeWait how long {@link #close} waits for the plan in flight to end
     */
    protected SerialTransferPeer(String backend, String name, PageGeometry sources, PageGeometry destinations, Duration fenceTimeout,
            Duration closeWait)
    {
        requireNonNull(backend, "backend is null");
        requireNonNull(name, "name is null");
        this.sourcePages = requireNonNull(sources, "sources is null").pages();
        this.destinationPages = requireNonNull(destinations, "destinations is null").pages();
        this.fenceTimeout = requireNonNull(fenceTimeout, "fenceTimeout is null");
        this.closeWait = requireNonNull(closeWait, "closeWait is null");
        this.label = backend + " peer " + name;
        this.thread = Thread.ofPlatform().daemon().name(backend + "-" + name).unstarted(this::transferLoop);
    }

    /** Starts the transfer thread; the last step of a subclass's factory. */
    protected final void start()
    {
        thread.start();
    }

    /**
     * Moves the plan's pages to the receiver, on the transfer thread; the plan is inside both sides' pages and
     * its fence was awaited when {@link #awaitsFence} said so. Calls the context's hooks, looks at
     * {@link #isClosed} between pieces, and returns the bytes moved once all of them landed. Throws a
     * {@link TransferFailure} that says whether what was written is settled; a runtime exception is taken for
     * a bug and reported unsettled.
     */
    protected abstract long send(TransferPlan plan)
            throws TransferFailure;

    /** Throws (settled) when the connection can no longer carry plans; asked before each plan's fence. */
    protected void checkUsable(TransferPlan plan)
            throws TransferFailure
    {
    }

    /**
     * Whether the transfer thread waits on each plan's producer fence before {@link #send}: true for a backend
     * that declares {@link TransferCapability#FORWARD_SYNC} or {@link TransferCapability#STAGING}. One that
     * returns false reads pages the forward may still be writing, and must declare neither.
     */
    protected boolean awaitsFence()
    {
        return true;
    }

    /** Called once by {@link #close}, on the closing thread: wake the transfer thread's blocked I/O. */
    protected void unblock()
    {
    }

    /** Called on the transfer thread after its last plan: release the connection (so no send can race it). */
    protected void release()
    {
    }

    /** "{@code <backend> peer <name>}", for messages. */
    protected final String label()
    {
        return label;
    }

    protected final boolean isClosed()
    {
        return closed;
    }

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
        report(listener, plan, -1, label + " is closed; the plan was not sent");
    }

    @Override
    public final CompletableFuture<Void> drain(RoomKey room)
    {
        requireNonNull(room, "room is null");
        synchronized (lock) {
            if (unprovable != null) {
                return CompletableFuture.failedFuture(cannotProve(room, unprovable));
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
        if (failQueued(label + " was closed before the plan was sent")) {
            unblock();
        }
        if (Thread.currentThread() != thread) {
            try {
                thread.join(closeWait);
            }
            catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            if (thread.isAlive()) {
                log.log(WARNING, label + ": the transfer thread did not stop within " + closeWait
                        + "; its connection is released when it does");
            }
        }
    }

    @Override
    public String toString()
    {
        return label + " (" + transport() + ")";
    }

    private void transferLoop()
    {
        String stopped = label + " stopped";
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
            stopped = label + ": its transfer thread was interrupted";
        }
        catch (RuntimeException | Error e) {
            stopped = label + ": its transfer thread stopped on " + e;
            throw e;
        }
        finally {
            // However the thread ends, nothing posted is left unheard (a no-op after close, which failed the queue itself).
            failQueued(stopped + "; the plan was not sent");
            try {
                release();
            }
            catch (RuntimeException e) {
                log.log(WARNING, label + ": releasing its connection failed", e);
            }
        }
    }

    private void run(Posted posted)
    {
        TransferPlan plan = posted.plan();
        boolean sending = false;
        long bytes;
        try {
            checkBounds(plan);
            checkUsable(plan);
            if (awaitsFence()) {
                awaitFence(plan);
            }
            if (closed) {
                throw new TransferFailure(label + " was closed before room " + plan.room() + " chunk " + plan.chunk()
                        + " was sent; nothing was sent", true);
            }
            sending = true;
            bytes = send(plan);
        }
        catch (TransferFailure failure) {
            finish(posted, -1, failure.getMessage(), failure.settled());
            return;
        }
        catch (RuntimeException e) {
            // A bug (or a fence that throws from isDone): report the plan, keep the thread, and promise nothing once bytes moved.
            log.log(WARNING, label + ": room " + plan.room() + " chunk " + plan.chunk() + " failed unexpectedly", e);
            finish(posted, -1, label + " failed unexpectedly on room " + plan.room() + " chunk " + plan.chunk() + ": " + e, !sending);
            return;
        }
        catch (Error e) {
            // The JVM is in trouble (out of memory, a stack overflow): no plan is left unheard, and the thread stops.
            String reason = label + " stopped on room " + plan.room() + " chunk " + plan.chunk() + ": " + e;
            finish(posted, -1, reason, !sending);
            failQueued(reason + "; the plan was not sent");
            throw e;
        }
        finish(posted, bytes, null, true);
    }

    /** Closes the queue and fails what it held with {@code reason}; returns false when it was closed already. */
    private boolean failQueued(String reason)
    {
        List<Posted> dropped;
        synchronized (lock) {
            if (closed) {
                return false;
            }
            closed = true;
            dropped = new ArrayList<>(queue);
            queue.clear();
            lock.notifyAll();
        }
        for (Posted posted : dropped) {
            finish(posted, -1, reason, true);
        }
        return true;
    }

    private void checkBounds(TransferPlan plan)
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
        String producer = "the forward step " + fence.step() + " that wrote room " + plan.room() + " chunk " + plan.chunk();
        long deadline = System.nanoTime() + fenceTimeout.toNanos();
        while (!fence.isDone()) {
            if (closed) {
                throw new TransferFailure(label + " was closed while room " + plan.room() + " chunk " + plan.chunk()
                        + " waited on the fence of step " + fence.step() + "; nothing was sent", true);
            }
            long left = deadline - System.nanoTime();
            if (left <= 0) {
                throw new TransferFailure(producer + " did not finish within fence-timeout " + fenceTimeout + "; nothing was sent", true);
            }
            try {
                fence.await(Duration.ofNanos(Math.min(left, FENCE_SLICE.toNanos())));
            }
            catch (TimeoutException e) {
                // Not yet: look at close() and the deadline, then wait again.
            }
            catch (RuntimeException e) {
                throw new TransferFailure(producer + " failed (" + e.getMessage() + "); nothing was sent", true);
            }
        }
        if (fence.failed()) {
            throw new TransferFailure(producer + " failed; nothing was sent", true);
        }
    }

    private void finish(Posted posted, long bytes, String failure, boolean settled)
    {
        if (!settled) {
            synchronized (lock) {
                if (unprovable == null) {
                    unprovable = failure;
                }
            }
        }
        try {
            report(posted.listener(), posted.plan(), bytes, failure);
        }
        finally {
            // Also when the listener threw an Error: the room's drains must not be left waiting.
            reported(posted.plan().room());
        }
    }

    /** One plan of {@code room} was reported: when it was the last outstanding one, its drains complete. */
    private void reported(RoomKey room)
    {
        List<CompletableFuture<Void>> drained = List.of();
        String proofMissing;
        synchronized (lock) {
            proofMissing = unprovable;
            RoomPlans plans = rooms.get(room);
            if (--plans.outstanding == 0) {
                rooms.remove(room);
                drained = plans.drains;
            }
        }
        for (CompletableFuture<Void> drain : drained) {
            if (proofMissing == null) {
                drain.complete(null);
            }
            else {
                drain.completeExceptionally(cannotProve(room, proofMissing));
            }
        }
    }

    private IllegalStateException cannotProve(RoomKey room, String reason)
    {
        return new IllegalStateException(label + " cannot prove that no write of room " + room + " is in flight: " + reason);
    }

    private void report(TransferListener listener, TransferPlan plan, long bytes, String failure)
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
            log.log(WARNING, label + ": the listener of room " + plan.room() + " chunk " + plan.chunk() + " threw", e);
        }
    }
}
