package io.handoff.plugin.mori;

import io.handoff.spi.transfer.MemoryRegion;
import io.handoff.spi.transfer.ProducerFence;
import io.handoff.spi.transfer.RoomKey;
import io.handoff.spi.transfer.TransferCapability;
import io.handoff.spi.transfer.TransferContext;
import io.handoff.spi.transfer.TransferListener;
import io.handoff.spi.transfer.TransferPeer;
import io.handoff.spi.transfer.TransferPlan;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.System.Logger;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.VarHandle;
import java.nio.channels.FileChannel;
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
import static java.nio.file.StandardOpenOption.READ;
import static java.nio.file.StandardOpenOption.WRITE;
import static java.util.Objects.requireNonNull;

/**
 * A prefill's one-sided connection to a decode on this host: the decode's pool file mapped read-write, and
 * one transfer thread that copies posted plans page by page, straight from the source pool, in order.
 * {@link #post} only queues. With forward-sync the thread waits on each plan's producer fence before it
 * reads a page (I1, FORWARD_SYNC); without it the thread reads at once, as the unfixed field backend did
 * (seed 000), and the core's early-send gate is what keeps that safe. Copies are synchronous, so once a plan
 * is reported none of its writes is in flight, which is what {@link #drain} promises (DRAIN_ACK).
 */
final class SharedMemoryPeer
        implements TransferPeer
{
    private static final Logger log = System.getLogger(SharedMemoryPeer.class.getName());
    // The fence is awaited in slices so that close() is seen promptly without interrupting the thread.
    private static final Duration FENCE_SLICE = Duration.ofMillis(50);
    // close() waits this long for the plan in flight; only a hook that parks the thread takes longer.
    private static final Duration CLOSE_WAIT = Duration.ofSeconds(30);

    private record Posted(TransferPlan plan, TransferListener listener) {}

    /** Plans of one room that were posted and not yet reported, and the drains waiting for none to be left. */
    private static final class RoomPlans
    {
        int outstanding;
        final List<CompletableFuture<Void>> drains = new ArrayList<>(1);
    }

    /** Why a plan stopped, for its listener; its message says how much of it was written. */
    private static final class PlanFailure
            extends Exception
    {
        PlanFailure(String reason)
        {
            super(reason, null, false, false);
        }
    }

    private final String name;
    private final TransferContext context;
    private final MoriConfig config;
    private final List<MemoryRegion> sources;
    private final List<MemorySegment> destinations;
    private final Arena arena;
    private final int sourcePages;
    private final int destinationPages;
    private final Thread thread;

    private final Object lock = new Object();
    private final ArrayDeque<Posted> queue = new ArrayDeque<>();
    private final Map<RoomKey, RoomPlans> rooms = new HashMap<>();
    private volatile boolean closed;

    private SharedMemoryPeer(String name, TransferContext context, MoriConfig config, List<MemoryRegion> sources, Arena arena,
            List<MemorySegment> destinations, int destinationPages)
    {
        this.name = name;
        this.context = context;
        this.config = config;
        this.sources = List.copyOf(sources);
        this.destinations = List.copyOf(destinations);
        this.arena = arena;
        this.sourcePages = this.sources.stream().mapToInt(MemoryRegion::pages).min().orElse(0);
        this.destinationPages = destinationPages;
        this.thread = Thread.ofPlatform().daemon().name("mori-" + name).unstarted(this::transferLoop);
    }

    /** Maps the receiver's pool file read-write, region by region, and starts the transfer thread. */
    static SharedMemoryPeer map(String name, TransferContext context, MoriConfig config, List<MemoryRegion> sources, PoolDescriptor remote)
    {
        requireNonNull(name, "name is null");
        requireNonNull(context, "context is null");
        requireNonNull(config, "config is null");
        Arena arena = Arena.ofShared();
        try (FileChannel channel = FileChannel.open(remote.sharedFile(), READ, WRITE)) {
            long size = channel.size();
            List<MemorySegment> destinations = new ArrayList<>(remote.regions().size());
            for (int i = 0; i < remote.regions().size(); i++) {
                PoolDescriptor.Region region = remote.regions().get(i);
                if (region.fileOffset() + region.byteSize() > size) {
                    throw new IllegalArgumentException("mori peer " + name + ": region " + i + " ends at byte "
                            + (region.fileOffset() + region.byteSize()) + " of " + remote.sharedFile() + ", which has " + size + " bytes");
                }
                destinations.add(channel.map(FileChannel.MapMode.READ_WRITE, region.fileOffset(), region.byteSize(), arena));
            }
            int destinationPages = remote.regions().stream().mapToInt(PoolDescriptor.Region::pages).min().orElse(0);
            SharedMemoryPeer peer = new SharedMemoryPeer(name, context, config, sources, arena, destinations, destinationPages);
            peer.thread.start();
            return peer;
        }
        catch (IOException e) {
            arena.close();
            throw new UncheckedIOException("mori peer " + name + " cannot map the receiver's pool file " + remote.sharedFile() + ": "
                    + e.getMessage() + "; is the decode running on this host and its pool still there?", e);
        }
        catch (RuntimeException e) {
            arena.close();
            throw e;
        }
    }

    @Override
    public String transport()
    {
        return "shm";
    }

    @Override
    public Set<TransferCapability> capabilities()
    {
        return config.sharedMemoryCapabilities();
    }

    @Override
    public void post(TransferPlan plan, TransferListener listener)
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
        report(listener, plan, -1, "mori peer " + name + " is closed; the plan was not sent");
    }

    @Override
    public CompletableFuture<Void> drain(RoomKey room)
    {
        requireNonNull(room, "room is null");
        synchronized (lock) {
            RoomPlans plans = rooms.get(room);
            if (plans == null) {
                return CompletableFuture.completedFuture(null);
            }
            CompletableFuture<Void> drained = new CompletableFuture<>();
            plans.drains.add(drained);
            return drained;
        }
    }

    /** Fails the queued plans, stops the transfer thread after its current page, and unmaps the receiver's pool. */
    @Override
    public void close()
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
            finish(posted, -1, "mori peer " + name + " was closed before the plan was sent");
        }
        if (Thread.currentThread() != thread) {
            try {
                thread.join(CLOSE_WAIT);
            }
            catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            if (thread.isAlive()) {
                log.log(WARNING, "mori peer " + name + ": the transfer thread did not stop; the mapping stays until it does");
            }
        }
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
            // Unmapped on this thread, so no copy can touch the mapping after it is gone.
            arena.close();
        }
    }

    private void run(Posted posted)
    {
        TransferPlan plan = posted.plan();
        try {
            checkPlan(plan);
            if (config.forwardSync()) {
                awaitFence(plan);
            }
            // Without forward-sync the fence is not looked at: the pages are read now, whether or not the forward finished.
            finish(posted, copy(plan), null);
        }
        catch (PlanFailure failure) {
            finish(posted, -1, failure.getMessage());
        }
        catch (RuntimeException | InternalError e) {
            // A bug, or a fault in the mapping (InternalError from a truncated file); copies are synchronous, so nothing more lands.
            log.log(WARNING, "mori peer " + name + ": room " + plan.room() + " chunk " + plan.chunk() + " failed unexpectedly", e);
            finish(posted, -1, "mori peer " + name + " failed unexpectedly on room " + plan.room() + " chunk " + plan.chunk() + ": " + e);
        }
    }

    /** Copies the plan page by page (every region of a page, then its hook), so a fault point sees exactly the pages written. */
    private long copy(TransferPlan plan)
            throws PlanFailure
    {
        RoomKey room = plan.room();
        int[] srcPages = plan.srcPages();
        int[] dstPages = plan.dstPages();
        int[] runLengths = plan.runLengths();
        int pageIndex = plan.firstPageIndex();
        int written = 0;
        long bytes = 0;
        try {
            context.beforeReadingChunk(room, plan.chunk());
            for (int run = 0; run < runLengths.length; run++) {
                for (int i = 0; i < runLengths[run]; i++) {
                    if (closed) {
                        throw new PlanFailure("mori peer " + name + " was closed while sending room " + room + " chunk " + plan.chunk()
                                + ": " + written + " of " + plan.pages() + " pages were written, no more will be");
                    }
                    long src = srcPages[run] + i;
                    long dst = dstPages[run] + i;
                    for (int region = 0; region < sources.size(); region++) {
                        long stride = sources.get(region).pageStride();
                        MemorySegment.copy(sources.get(region).segment(), src * stride, destinations.get(region), dst * stride, stride);
                        bytes += stride;
                    }
                    written++;
                    context.afterPage(room, pageIndex++);
                }
            }
        }
        catch (RuntimeException e) {
            // A fault hook stopped the plan part way; what was copied has landed and nothing more will.
            throw new PlanFailure("sending room " + room + " chunk " + plan.chunk() + " stopped after " + written + " of " + plan.pages()
                    + " pages: " + e.getMessage());
        }
        // The completion reaches the receiver on another path (the core's protocol): order the copies before it.
        VarHandle.fullFence();
        return bytes;
    }

    private void checkPlan(TransferPlan plan)
            throws PlanFailure
    {
        int[] srcPages = plan.srcPages();
        int[] dstPages = plan.dstPages();
        int[] runLengths = plan.runLengths();
        for (int run = 0; run < runLengths.length; run++) {
            long src = srcPages[run];
            long dst = dstPages[run];
            if (src < 0 || src + runLengths[run] > sourcePages || dst < 0 || dst + runLengths[run] > destinationPages) {
                throw new PlanFailure("plan for room " + plan.room() + " chunk " + plan.chunk() + ": run " + run + " copies pages "
                        + src + "+" + runLengths[run] + " to " + dst + "+" + runLengths[run] + ", outside the " + sourcePages
                        + " source or " + destinationPages + " destination pages; nothing was sent");
            }
        }
    }

    /** I1: no page of the plan is read before the forward that wrote it finished. */
    private void awaitFence(TransferPlan plan)
            throws PlanFailure
    {
        ProducerFence fence = plan.fence();
        long deadline = System.nanoTime() + config.fenceTimeout().toNanos();
        while (!fence.isDone()) {
            if (closed) {
                throw new PlanFailure("mori peer " + name + " was closed while room " + plan.room() + " chunk " + plan.chunk()
                        + " waited on the fence of step " + fence.step() + "; nothing was sent");
            }
            long left = deadline - System.nanoTime();
            if (left <= 0) {
                throw new PlanFailure(producer(plan) + " did not finish within fence-timeout " + config.fenceTimeout() + "; nothing was sent");
            }
            try {
                fence.await(Duration.ofNanos(Math.min(left, FENCE_SLICE.toNanos())));
            }
            catch (TimeoutException e) {
                // Not yet: look at close() and the deadline, then wait again.
            }
            catch (RuntimeException e) {
                throw new PlanFailure(producer(plan) + " failed (" + e.getMessage() + "); nothing was sent");
            }
        }
        if (fence.failed()) {
            throw new PlanFailure(producer(plan) + " failed; nothing was sent");
        }
        if (closed) {
            throw new PlanFailure("mori peer " + name + " was closed before room " + plan.room() + " chunk " + plan.chunk()
                    + " was sent; nothing was sent");
        }
    }

    private static String producer(TransferPlan plan)
    {
        return "the forward step " + plan.fence().step() + " that wrote room " + plan.room() + " chunk " + plan.chunk();
    }

    private void finish(Posted posted, long bytes, String failure)
    {
        report(posted.listener(), posted.plan(), bytes, failure);
        List<CompletableFuture<Void>> drained = List.of();
        synchronized (lock) {
            RoomPlans plans = rooms.get(posted.plan().room());
            if (--plans.outstanding == 0) {
                rooms.remove(posted.plan().room());
                drained = plans.drains;
            }
        }
        drained.forEach(drain -> drain.complete(null));
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
            log.log(WARNING, "mori peer " + name + ": the listener of room " + plan.room() + " chunk " + plan.chunk() + " threw", e);
        }
    }

    @Override
    public String toString()
    {
        return "mori peer " + name + " (shm)";
    }
}
