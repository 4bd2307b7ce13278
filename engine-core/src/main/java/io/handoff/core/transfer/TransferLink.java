package io.handoff.core.transfer;

import io.handoff.spi.transfer.PageGeometry;
import io.handoff.spi.transfer.ProducerFence;
import io.handoff.spi.transfer.RoomKey;
import io.handoff.spi.transfer.TransferCapability;
import io.handoff.spi.transfer.TransferFailure;
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
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;

import static java.lang.System.Logger.Level.ERROR;
import static java.lang.System.Logger.Level.WARNING;
import static java.util.Objects.requireNonNull;

/**
 * The core's side of one connection to a receiver: it drives a backend's {@link TransferPeer} and owns every rule
 * a backend could get wrong, so that they hold for every backend alike:
 * <ul>
 *   <li><b>Posting.</b> {@link #post} only queues; it never blocks on I/O or on a fence (the scheduler thread
 *   calls it). A plan posted after {@link #close} fails at once.</li>
 *   <li><b>Per plan</b>, on this link's one transfer thread, in post order: the runs are checked against the source
 *   and destination page counts; unless the peer reports {@link TransferCapability#FORWARD_SYNC}, the producer fence
 *   is awaited here (I1) up to the fence timeout; then the plan goes to {@link TransferPeer#send}. A check that
 *   fails sends nothing. For a FORWARD_SYNC peer, reading a page before the fence is done, or completing without
 *   having said it reads, is caught (see {@link PlanRun}).</li>
 *   <li><b>Plans in flight.</b> A peer that reports {@link TransferCapability#PIPELINED} is handed the next plan
 *   before the outcome of the one before is reported, up to the link's window of plans handed over and not yet
 *   settled; every other peer gets one plan at a time (a window of 1), as before. Outcomes are settled (checked and
 *   delivered) on the transfer thread, in the order they arrive.</li>
 *   <li><b>Exactly once.</b> Every posted plan's listener hears exactly once. A backend that reports twice, or not
 *   within the report timeout, violates the protocol: its plan fails (unsettled) and the link is fenced: it closes,
 *   fails what is queued, and from then on proves nothing (every drain fails), and the fence listener hears, so
 *   the engine fails the rooms that used it.</li>
 *   <li><b>Cancel</b>: {@link #cancel} fails a failed room's plans that are still queued (nothing of them was sent),
 *   so a room's failure stops its writes at the queue, not only at the backend.</li>
 *   <li><b>Drain</b>: {@link #drain} completes once every plan posted for the room before it was called has been
 *   reported, and at once when the room has none outstanding. Once any plan failed unsettled, every drain fails:
 *   the link can no longer prove that no write is in flight (I2).</li>
 *   <li><b>Close</b> fails the queued plans, calls the peer's {@link TransferPeer#unblock} (never once the peer is
 *   closed), and waits (at most the close wait) for the transfer thread to end the plan in flight; the thread then
 *   closes the peer.</li>
 * </ul>
 */
public final class TransferLink
        implements AutoCloseable
{
    // The fence is awaited in slices so that close() is seen promptly without interrupting the thread
    // (an interrupt would close an interruptible channel abruptly, losing the receiver's confirmation).
    static final Duration FENCE_SLICE = Duration.ofMillis(50);
    // While plans are in flight the fence is awaited in short slices, so that their outcomes are not held up by it.
    static final Duration IN_FLIGHT_FENCE_SLICE = Duration.ofMillis(1);
    // Times every plan handed to a backend, whether or not its send returns (one thread for every link: it only flags).
    private static final ScheduledThreadPoolExecutor WATCHDOG = watchdog();

    /** How long the core waits on a backend's behalf. */
    public record Timeouts(Duration fence, Duration report, Duration closeWait)
    {
        public static final Timeouts DEFAULT = new Timeouts(Duration.ofSeconds(60), Duration.ofSeconds(60), Duration.ofSeconds(10));

        public Timeouts
        {
            requireNonNull(fence, "fence is null");
            requireNonNull(report, "report is null");
            requireNonNull(closeWait, "closeWait is null");
        }
    }

    private record Posted(TransferPlan plan, PlanListener listener) {}

    /** A plan handed to the peer whose outcome the transfer thread has not settled yet, and its report-timeout watchdog. */
    private record InFlight(Posted posted, PlanRun work, ScheduledFuture<?> watchdog) {}

    /** Plans of one room that were posted and not yet reported, and the drains waiting for none to be left. */
    private static final class RoomPlans
    {
        int outstanding;
        final List<CompletableFuture<Void>> drains = new ArrayList<>(1);
    }

    private final Logger log = System.getLogger(TransferLink.class.getName());
    private final String label;
    private final TransferPeer peer;
    private final Set<TransferCapability> capabilities;
    private final boolean forwardSync;
    private final int sourcePages;
    private final int destinationPages;
    private final Timeouts timeouts;
    private final TransferHooks hooks;
    private final int window;
    private final Thread thread;
    // Touched by the transfer thread only.
    private final ArrayDeque<InFlight> inFlight = new ArrayDeque<>();

    private final Object lock = new Object();
    private final ArrayDeque<Posted> queue = new ArrayDeque<>();
    private final Map<RoomKey, RoomPlans> rooms = new HashMap<>();
    // Outcomes reported (or plans expired) since the transfer thread last settled; guarded by lock.
    private int arrivals;
    private volatile boolean closed;
    // Set when a plan failed without proof that none of its writes can still land: no drain is promised after that.
    private String unprovable;
    private volatile String violation;
    private volatile Consumer<String> onFenced = _ -> {};
    // unblock() and close() of the peer never overlap, and unblock() never follows close(): a backend may free in
    // close() what unblock() touches.
    private final Object peerLock = new Object();
    private boolean peerClosed;

    private static ScheduledThreadPoolExecutor watchdog()
    {
        ScheduledThreadPoolExecutor watchdog = new ScheduledThreadPoolExecutor(1, Thread.ofPlatform().daemon().name("handoff-transfer-watchdog").factory());
        watchdog.setRemoveOnCancelPolicy(true); // a plan that reported in time leaves nothing behind
        return watchdog;
    }

    private TransferLink(String backend, String name, TransferPeer peer, PageGeometry sources, PageGeometry destinations, Timeouts timeouts,
            TransferHooks hooks, int window)
    {
        if (window < 1) {
            throw new IllegalArgumentException("the transfer window must be at least 1 plan, was " + window);
        }
        requireNonNull(backend, "backend is null");
        requireNonNull(name, "name is null");
        this.peer = requireNonNull(peer, "peer is null");
        this.capabilities = Set.copyOf(requireNonNull(peer.capabilities(), "the peer's capabilities are null"));
        this.forwardSync = capabilities.contains(TransferCapability.FORWARD_SYNC);
        this.sourcePages = requireNonNull(sources, "sources is null").pages();
        this.destinationPages = requireNonNull(destinations, "destinations is null").pages();
        this.timeouts = requireNonNull(timeouts, "timeouts is null");
        this.hooks = requireNonNull(hooks, "hooks is null");
        this.window = capabilities.contains(TransferCapability.PIPELINED) ? window : 1;
        this.label = backend + " peer " + name;
        this.thread = Thread.ofPlatform().daemon().name(backend + "-" + name).unstarted(this::transferLoop);
    }

    /**
     * Starts driving {@code peer}, a connection of backend {@code backend} to the receiver {@code name}.
     *
     * @param sources the sender's regions; a plan's source pages must lie within them
     * @param destinations the receiver's regions; a plan's destination pages must lie within them
     */
    public static TransferLink start(String backend, String name, TransferPeer peer, PageGeometry sources, PageGeometry destinations,
            Timeouts timeouts, TransferHooks hooks)
    {
        return start(backend, name, peer, sources, destinations, timeouts, hooks, 1);
    }

    /**
     * As {@link #start(String, String, TransferPeer, PageGeometry, PageGeometry, Timeouts, TransferHooks)}, handing a
     * {@link TransferCapability#PIPELINED} peer up to {@code window} plans before their outcomes are reported (a
     * peer without it gets one at a time).
     */
    public static TransferLink start(String backend, String name, TransferPeer peer, PageGeometry sources, PageGeometry destinations,
            Timeouts timeouts, TransferHooks hooks, int window)
    {
        TransferLink link = new TransferLink(backend, name, peer, sources, destinations, timeouts, hooks, window);
        link.thread.start();
        return link;
    }

    /** Plans this link hands to its peer before their outcomes are reported: 1 unless the peer is PIPELINED. */
    public int window()
    {
        return window;
    }

    /** Hears once, with the reason, when this link is fenced for a protocol violation. */
    public void onFenced(Consumer<String> listener)
    {
        this.onFenced = requireNonNull(listener, "listener is null");
    }

    public String transport()
    {
        return peer.transport();
    }

    /** What the connection reported when the link started; the core decides early send from these. */
    public Set<TransferCapability> capabilities()
    {
        return capabilities;
    }

    /** The protocol violation this link was fenced for, or null. */
    public String violation()
    {
        return violation;
    }

    String label()
    {
        return label;
    }

    boolean isClosed()
    {
        return closed;
    }

    TransferHooks hooks()
    {
        return hooks;
    }

    Duration fenceTimeout()
    {
        return timeouts.fence();
    }

    public void post(TransferPlan plan, PlanListener listener)
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

    public CompletableFuture<Void> drain(RoomKey room)
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

    /**
     * The room failed: its plans still queued are failed (settled: none of their bytes was sent) instead of being sent.
     * A plan the transfer thread already took is not touched; {@link #drain} waits for it.
     */
    public void cancel(RoomKey room)
    {
        requireNonNull(room, "room is null");
        List<Posted> dropped = new ArrayList<>();
        synchronized (lock) {
            queue.removeIf(posted -> {
                if (posted.plan().room().equals(room)) {
                    dropped.add(posted);
                    return true;
                }
                return false;
            });
        }
        for (Posted posted : dropped) {
            finish(posted, -1, label + ": room " + posted.plan().room() + " failed before chunk " + posted.plan().chunk()
                    + " was sent; nothing was sent", true);
        }
    }

    /** Fails the queued plans and stops the transfer thread once its current plan finished or failed. */
    @Override
    public void close()
    {
        if (failQueued(label + " was closed before the plan was sent")) {
            unblockPeer();
        }
        if (Thread.currentThread() != thread) {
            try {
                thread.join(timeouts.closeWait());
            }
            catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            if (thread.isAlive()) {
                log.log(WARNING, label + ": the transfer thread did not stop within " + timeouts.closeWait()
                        + "; its connection is released when it does");
            }
        }
    }

    @Override
    public String toString()
    {
        return label + " (" + transport() + ")";
    }

    /**
     * The backend broke the protocol: nothing it says can be proved any more. The link stops proving drains, closes,
     * and tells the engine. Called at most once to effect (later violations are only logged).
     */
    void fence(String reason)
    {
        synchronized (lock) {
            if (violation != null) {
                log.log(ERROR, label + ": " + reason);
                return;
            }
            violation = reason;
            if (unprovable == null) {
                unprovable = reason;
            }
        }
        log.log(ERROR, label + " is fenced: " + reason);
        // The queue closes here, not on another thread: the transfer thread must not hand its next plan to the fenced peer.
        boolean stopping = failQueued(label + " was fenced before the plan was sent: " + reason);
        // Drains already waiting fail now.
        List<RoomKey> waiting;
        synchronized (lock) {
            waiting = rooms.entrySet().stream().filter(e -> !e.getValue().drains.isEmpty()).map(Map.Entry::getKey).toList();
        }
        for (RoomKey room : waiting) {
            failDrains(room, reason);
        }
        // On a thread of its own: unblock() wakes a send in flight, and the backend may be reporting from the very I/O
        // thread it wakes; the engine's listener closes the control channel, which may wait for this link's thread.
        Thread.ofPlatform().daemon().name(thread.getName() + "-fence").start(() -> {
            if (stopping) {
                unblockPeer();
            }
            try {
                onFenced.accept(reason);
            }
            catch (RuntimeException e) {
                log.log(WARNING, label + ": the fence listener threw", e);
            }
        });
    }

    private void transferLoop()
    {
        String stopped = label + " stopped";
        try {
            while (true) {
                Posted next;
                synchronized (lock) {
                    while (arrivals == 0 && (queue.isEmpty() || inFlight.size() >= window) && !(closed && inFlight.isEmpty())) {
                        lock.wait();
                    }
                    arrivals = 0;
                    next = inFlight.size() < window ? queue.pollFirst() : null;
                }
                settleArrived();
                if (next != null) {
                    run(next);
                }
                else if (inFlight.isEmpty() && isClosed()) {
                    synchronized (lock) {
                        if (queue.isEmpty()) {
                            return;
                        }
                    }
                }
            }
        }
        catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            stopped = label + ": its transfer thread was interrupted";
            abandonInFlight(stopped + " while the plan was in flight", true);
        }
        catch (RuntimeException | Error e) {
            stopped = label + ": its transfer thread stopped on " + e;
            abandonInFlight(stopped + " while the plan was in flight", false);
            throw e;
        }
        finally {
            // However the thread ends, nothing posted is left unheard (a no-op after close, which failed the queue itself).
            failQueued(stopped + "; the plan was not sent");
            synchronized (peerLock) {
                peerClosed = true;
                try {
                    peer.close();
                }
                catch (RuntimeException e) {
                    log.log(WARNING, label + ": closing its connection failed", e);
                }
            }
        }
    }

    /** Calls the peer's unblock(), unless the transfer thread closed the peer already. */
    private void unblockPeer()
    {
        synchronized (peerLock) {
            if (peerClosed) {
                return;
            }
            try {
                peer.unblock();
            }
            catch (RuntimeException e) {
                log.log(WARNING, label + ": unblocking its connection failed", e);
            }
        }
    }

    private void run(Posted posted)
            throws InterruptedException
    {
        TransferPlan plan = posted.plan();
        PlanRun work = new PlanRun(this, plan, forwardSync);
        try {
            checkBounds(plan);
            if (!forwardSync) {
                awaitFence(plan);
            }
            if (closed) {
                throw new TransferFailure(label + " was closed before room " + plan.room() + " chunk " + plan.chunk()
                        + " was sent; nothing was sent", true);
            }
        }
        catch (TransferFailure failure) {
            finish(posted, -1, failure.getMessage(), failure.settled());
            return;
        }
        // The report timeout runs from the moment the plan is handed over, also while send itself does not return.
        ScheduledFuture<?> watchdog = WATCHDOG.schedule(() -> {
            if (work.expire()) {
                try {
                    noOutcome(posted);
                }
                finally {
                    work.expiryHandled();
                    arrived();
                }
            }
        }, timeouts.report().toNanos(), TimeUnit.NANOSECONDS);
        try {
            peer.send(work);
        }
        catch (RuntimeException e) {
            // A bug in the backend: report the plan, keep the thread, and promise nothing (bytes may have moved).
            log.log(WARNING, label + ": room " + plan.room() + " chunk " + plan.chunk() + " failed unexpectedly", e);
            work.thrown(label + " failed unexpectedly on room " + plan.room() + " chunk " + plan.chunk() + ": " + e);
        }
        catch (Error e) {
            // The JVM is in trouble (out of memory, a stack overflow): no plan is left unheard, and the thread stops.
            watchdog.cancel(false);
            String reason = label + " stopped on room " + plan.room() + " chunk " + plan.chunk() + ": " + e;
            if (work.take().mine()) {
                finish(posted, -1, reason, false);
            }
            failQueued(reason + "; the plan was not sent");
            throw e;
        }
        InFlight handed = new InFlight(posted, work, watchdog);
        if (work.hasOutcome()) {
            settle(handed);
        }
        else {
            inFlight.addLast(handed);
        }
    }

    /** Settles every plan in flight whose outcome was reported (or that the watchdog expired), in hand-over order. */
    private void settleArrived()
            throws InterruptedException
    {
        for (var plans = inFlight.iterator(); plans.hasNext(); ) {
            InFlight plan = plans.next();
            if (plan.work().hasOutcome()) {
                plans.remove();
                settle(plan);
            }
        }
    }

    /** Takes a reported plan's outcome, checks how the backend used the plan, and delivers it (or fences the link). */
    private void settle(InFlight handed)
            throws InterruptedException
    {
        Posted posted = handed.posted();
        PlanRun work = handed.work();
        handed.watchdog().cancel(false);
        PlanRun.Taken taken = work.take();
        if (!taken.mine()) {
            // The watchdog failed the plan: wait until it has also fenced the link, so that no queued plan is handed to
            // this peer in between.
            work.awaitExpiryHandled();
            return;
        }
        PlanRun.Outcome outcome = taken.outcome();
        if (outcome == null) {
            noOutcome(posted);
            return;
        }
        String broken = work.violation();
        if (broken != null) {
            finish(posted, -1, broken + "; the connection is fenced", false);
            fence(broken);
            return;
        }
        String fencedFor = violation;
        if (fencedFor != null && outcome.failure() == null) {
            // Handed over before the link was fenced: the backend's word that it landed counts for nothing any more (a
            // failure it reports stands; once fenced, the link proves no drain either way).
            TransferPlan plan = posted.plan();
            finish(posted, -1, label + " was fenced while room " + plan.room() + " chunk " + plan.chunk() + " was in flight (" + fencedFor
                    + "); its writes may still land", false);
            return;
        }
        finish(posted, outcome.bytes(), outcome.failure() == null ? null : outcome.failure().getMessage(),
                outcome.failure() == null || outcome.failure().settled());
    }

    /**
     * The transfer thread is stopping with plans in flight: each not yet taken fails unsettled (its writes may still
     * land), and, when {@code fenceLink}, the link is fenced.
     */
    private void abandonInFlight(String reason, boolean fenceLink)
    {
        boolean any = false;
        for (InFlight handed : inFlight) {
            handed.watchdog().cancel(false);
            if (handed.work().take().mine()) {
                any = true;
                TransferPlan plan = handed.posted().plan();
                finish(handed.posted(), -1, reason + " (room " + plan.room() + " chunk " + plan.chunk() + ")"
                        + (fenceLink ? "; the connection is fenced" : ""), false);
            }
        }
        inFlight.clear();
        if (any && fenceLink) {
            fence(reason);
        }
    }

    /** A plan's outcome was reported, or its report timeout passed: wake the transfer thread to settle it. */
    void arrived()
    {
        synchronized (lock) {
            arrivals++;
            lock.notifyAll();
        }
    }

    /** The backend said nothing about a plan within the report timeout: the plan fails unsettled, the link is fenced. */
    private void noOutcome(Posted posted)
    {
        TransferPlan plan = posted.plan();
        String reason = label + " reported no outcome for room " + plan.room() + " chunk " + plan.chunk() + " within "
                + timeouts.report() + " (transfer protocol violation)";
        finish(posted, -1, reason + "; the connection is fenced", false);
        fence(reason);
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
    void awaitFence(TransferPlan plan)
            throws TransferFailure
    {
        ProducerFence fence = plan.fence();
        String producer = "the forward step " + fence.step() + " that wrote room " + plan.room() + " chunk " + plan.chunk();
        long deadline = System.nanoTime() + timeouts.fence().toNanos();
        while (!fence.isDone()) {
            if (closed) {
                throw new TransferFailure(label + " was closed while room " + plan.room() + " chunk " + plan.chunk()
                        + " waited on the fence of step " + fence.step() + "; nothing was sent", true);
            }
            long left = deadline - System.nanoTime();
            if (left <= 0) {
                throw new TransferFailure(producer + " did not finish within fence-timeout " + timeouts.fence() + "; nothing was sent", true);
            }
            // With plans in flight, their outcomes are settled between short slices (this thread settles them).
            long slice = inFlight.isEmpty() || Thread.currentThread() != thread ? FENCE_SLICE.toNanos() : IN_FLIGHT_FENCE_SLICE.toNanos();
            try {
                fence.await(Duration.ofNanos(Math.min(left, slice)));
            }
            catch (java.util.concurrent.TimeoutException e) {
                // Not yet: look at close() and the deadline, then wait again.
                settleWhileWaiting();
            }
            catch (RuntimeException e) {
                throw new TransferFailure(producer + " failed (" + e.getMessage() + "); nothing was sent", true);
            }
        }
        if (fence.failed()) {
            throw new TransferFailure(producer + " failed; nothing was sent", true);
        }
    }

    /** Called between fence slices: on the transfer thread, settles what arrived meanwhile. */
    private void settleWhileWaiting()
            throws TransferFailure
    {
        if (Thread.currentThread() != thread || inFlight.isEmpty()) {
            return;
        }
        try {
            settleArrived();
        }
        catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new TransferFailure(label + ": its transfer thread was interrupted while waiting on a fence; nothing was sent", true);
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

    private void failDrains(RoomKey room, String reason)
    {
        List<CompletableFuture<Void>> failed;
        synchronized (lock) {
            RoomPlans plans = rooms.get(room);
            if (plans == null) {
                return;
            }
            failed = new ArrayList<>(plans.drains);
            plans.drains.clear();
        }
        for (CompletableFuture<Void> drain : failed) {
            drain.completeExceptionally(cannotProve(room, reason));
        }
    }

    private IllegalStateException cannotProve(RoomKey room, String reason)
    {
        return new IllegalStateException(label + " cannot prove that no write of room " + room + " is in flight: " + reason);
    }

    private void report(PlanListener listener, TransferPlan plan, long bytes, String failure)
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
