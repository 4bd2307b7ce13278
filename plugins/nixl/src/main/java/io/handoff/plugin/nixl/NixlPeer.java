package io.handoff.plugin.nixl;

import io.handoff.spi.transfer.MemoryRegion;
import io.handoff.spi.transfer.ProducerFence;
import io.handoff.spi.transfer.RoomKey;
import io.handoff.spi.transfer.TransferCapability;
import io.handoff.spi.transfer.TransferContext;
import io.handoff.spi.transfer.TransferListener;
import io.handoff.spi.transfer.TransferPeer;
import io.handoff.spi.transfer.TransferPlan;

import java.lang.System.Logger;
import java.lang.foreign.MemorySegment;
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
 * A sender's connection to one receiver, with one transfer thread that runs posted plans in order. The scheduler
 * thread only queues. For each plan the transfer thread waits on the producer fence, then gathers the plan's source
 * pages into the staging buffer (the snapshot that makes early send safe: STAGING, I1), calls the hooks, puts every
 * run of every region from the copy and flushes the endpoint, and reports the plan once the flush completed at the
 * receiver. Because puts leave only from this thread and a plan is reported only after its flush, "no plan of the
 * room outstanding" means "no write of the room in flight" (DRAIN_ACK).
 */
final class NixlPeer
        implements TransferPeer
{
    private static final Logger log = System.getLogger(NixlPeer.class.getName());
    // The fence is awaited in slices so that close() is seen promptly.
    private static final Duration FENCE_SLICE = Duration.ofMillis(50);

    private record Posted(TransferPlan plan, TransferListener listener) {}

    /** Plans of one room that were posted and not yet reported, and the drains waiting for none to be left. */
    private static final class RoomPlans
    {
        int outstanding;
        final List<CompletableFuture<Void>> drains = new ArrayList<>(1);
    }

    private final String name;
    private final String transport;
    private final Set<TransferCapability> capabilities;
    private final TransferContext context;
    private final List<MemoryRegion> sources;
    private final Descriptor remote;
    private final UcxLink link;
    private final Duration fenceTimeout;
    private final Duration flushTimeout;
    private final long bytesPerPage;
    private final int sourcePages;
    private final int destinationPages;
    private final Thread thread;

    private final Object lock = new Object();
    private final ArrayDeque<Posted> queue = new ArrayDeque<>();
    private final Map<RoomKey, RoomPlans> rooms = new HashMap<>();
    private volatile boolean closed;
    private volatile boolean released;
    // Set when the connection can no longer be trusted with a plan (a put or flush failed).
    private volatile String broken;
    // Set when a plan failed without proof that none of its writes can still land: no drain is promised after that.
    private String unprovable;

    NixlPeer(String name, String transport, Set<TransferCapability> capabilities, TransferContext context, List<MemoryRegion> sources,
            Descriptor remote, UcxLink link, NixlConfig config)
    {
        this.name = requireNonNull(name, "name is null");
        this.transport = requireNonNull(transport, "transport is null");
        this.capabilities = Set.copyOf(capabilities);
        this.context = requireNonNull(context, "context is null");
        this.sources = List.copyOf(sources);
        this.remote = requireNonNull(remote, "remote is null");
        this.link = requireNonNull(link, "link is null");
        this.fenceTimeout = config.fenceTimeout();
        this.flushTimeout = config.flushTimeout();
        long perPage = 0;
        int pages = Integer.MAX_VALUE;
        int remotePages = Integer.MAX_VALUE;
        for (int i = 0; i < this.sources.size(); i++) {
            perPage += this.sources.get(i).pageStride();
            pages = Math.min(pages, this.sources.get(i).pages());
            remotePages = Math.min(remotePages, remote.regions().get(i).pages());
        }
        if (perPage > link.staging().byteSize()) {
            throw new IllegalArgumentException("nixl: one page of every region is " + perPage + " bytes, more than the "
                    + link.staging().byteSize() + "-byte staging buffer; raise handoff.plugins.nixl.staging-buffer");
        }
        this.bytesPerPage = perPage;
        this.sourcePages = pages;
        this.destinationPages = remotePages;
        this.thread = Thread.ofPlatform().daemon().name("nixl-" + name).unstarted(this::transferLoop);
    }

    /** Starts the transfer thread, which owns the link from now on. */
    NixlPeer start()
    {
        thread.start();
        return this;
    }

    @Override
    public String transport()
    {
        return transport;
    }

    @Override
    public Set<TransferCapability> capabilities()
    {
        return capabilities;
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
        report(listener, plan, -1, "nixl peer " + name + " is closed; the plan was not sent");
    }

    @Override
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
     * Fails the queued plans and stops the transfer thread once its current plan finished; it then releases the link.
     * Returns when the thread stopped (or after a bounded wait), also when the peer was already closed.
     */
    @Override
    public void close()
    {
        List<Posted> dropped = List.of();
        synchronized (lock) {
            if (!closed) {
                closed = true;
                dropped = new ArrayList<>(queue);
                queue.clear();
                lock.notifyAll();
            }
        }
        for (Posted posted : dropped) {
            finish(posted, -1, "nixl peer " + name + " was closed before the plan was sent", true);
        }
        if (Thread.currentThread() != thread) {
            try {
                // A plan in flight may wait out a fence slice and its flush; the release closes the endpoint (another flush).
                thread.join(FENCE_SLICE.plus(flushTimeout.multipliedBy(2)).plusSeconds(5));
            }
            catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            if (thread.isAlive()) {
                log.log(WARNING, "nixl peer " + name + ": the transfer thread did not stop; its UCX worker stays open until it does");
            }
        }
    }

    /** Whether the transfer thread released the UCX resources (the backend may then clean up the context). */
    boolean released()
    {
        return released;
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
            try {
                link.release(flushTimeout.toMillis());
                released = true;
            }
            catch (RuntimeException e) {
                log.log(WARNING, "nixl peer " + name + ": releasing the UCX connection failed", e);
            }
        }
    }

    private void run(Posted posted)
    {
        TransferPlan plan = posted.plan();
        long bytes;
        try {
            checkPlan(plan);
            if (broken != null) {
                throw new TransferFailure("nixl peer " + name + " is unusable since an earlier plan failed (" + broken
                        + "); room " + plan.room() + " chunk " + plan.chunk() + " was not sent", true);
            }
            awaitFence(plan);
            if (closed) {
                throw new TransferFailure("nixl peer " + name + " was closed before room " + plan.room() + " chunk " + plan.chunk()
                        + " was sent; nothing was sent", true);
            }
            bytes = send(plan);
        }
        catch (TransferFailure failure) {
            finish(posted, -1, failure.getMessage(), failure.settled());
            return;
        }
        catch (RuntimeException e) {
            // A bug: report the plan and keep the thread, but promise nothing more (a put may be in flight).
            log.log(WARNING, "nixl peer " + name + ": room " + plan.room() + " chunk " + plan.chunk() + " failed unexpectedly", e);
            broken = e.toString();
            finish(posted, -1, "nixl peer " + name + " failed unexpectedly on room " + plan.room() + " chunk " + plan.chunk() + ": " + e, false);
            return;
        }
        finish(posted, bytes, null, true);
    }

    /**
     * Sends the plan in batches that fit the staging buffer (usually one). Per batch: gather the pages of every run and
     * region into the buffer, call afterPage for each, put each (run, region) piece, flush.
     */
    private long send(TransferPlan plan)
            throws TransferFailure
    {
        RoomKey room = plan.room();
        int[] srcPages = plan.srcPages();
        int[] dstPages = plan.dstPages();
        int[] runLengths = plan.runLengths();
        MemorySegment staging = link.staging();
        long capacity = staging.byteSize();
        int regions = sources.size();
        // A batch holds at most every run plus one split run, in every region.
        int maxPieces = (runLengths.length + 1) * regions;
        long[] pieceOffset = new long[maxPieces];
        long[] pieceBytes = new long[maxPieces];
        long[] pieceRemote = new long[maxPieces];
        int[] pieceRegion = new int[maxPieces];
        int run = 0;
        int done = 0;
        int pageIndex = plan.firstPageIndex();
        long bytes = 0;
        try {
            context.beforeReadingChunk(room, plan.chunk());
        }
        catch (RuntimeException e) {
            throw new TransferFailure("sending room " + room + " chunk " + plan.chunk() + " stopped before its first page: " + e, true);
        }
        while (run < runLengths.length) {
            if (closed) {
                throw new TransferFailure("nixl peer " + name + " was closed while sending room " + room + " chunk " + plan.chunk()
                        + "; pages before " + pageIndex + " landed, nothing after", true);
            }
            int batchFirstPage = pageIndex;
            int pieces = 0;
            long used = 0;
            while (run < runLengths.length) {
                int count = (int) Math.min(runLengths[run] - done, (capacity - used) / bytesPerPage);
                if (count == 0) {
                    break;
                }
                for (int region = 0; region < regions; region++) {
                    MemoryRegion source = sources.get(region);
                    long stride = source.pageStride();
                    long length = count * stride;
                    MemorySegment.copy(source.segment(), (srcPages[run] + done) * stride, staging, used, length);
                    pieceOffset[pieces] = used;
                    pieceBytes[pieces] = length;
                    pieceRemote[pieces] = (dstPages[run] + done) * stride;
                    pieceRegion[pieces] = region;
                    pieces++;
                    used += length;
                }
                pageIndex += count;
                done += count;
                if (done == runLengths[run]) {
                    run++;
                    done = 0;
                }
            }
            for (int page = batchFirstPage; page < pageIndex; page++) {
                try {
                    context.afterPage(room, page);
                }
                catch (RuntimeException e) {
                    throw new TransferFailure("sending room " + room + " chunk " + plan.chunk() + " stopped at page " + page + " ("
                            + e + "); pages before " + batchFirstPage + " landed, nothing after", true);
                }
            }
            for (int piece = 0; piece < pieces; piece++) {
                if (!link.put(pieceOffset[piece], pieceBytes[piece], pieceRegion[piece], pieceRemote[piece])) {
                    break;
                }
            }
            switch (link.flush(flushTimeout.toNanos())) {
                case LANDED -> bytes += used;
                case FAILED -> {
                    broken = link.failure();
                    throw new TransferFailure("nixl peer " + name + ": room " + room + " chunk " + plan.chunk() + " failed: "
                            + link.failure(), true);
                }
                case UNSETTLED -> {
                    broken = "a flush did not complete within flush-timeout " + flushTimeout;
                    throw new TransferFailure("nixl peer " + name + ": the puts of room " + room + " chunk " + plan.chunk()
                            + " did not complete at the receiver within flush-timeout " + flushTimeout + "; they may still land", false);
                }
            }
        }
        return bytes;
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

    /** I1: no page of the plan is read (snapshotted) before the forward that wrote it finished. */
    private void awaitFence(TransferPlan plan)
            throws TransferFailure
    {
        ProducerFence fence = plan.fence();
        long deadline = System.nanoTime() + fenceTimeout.toNanos();
        while (!fence.isDone()) {
            if (closed) {
                throw new TransferFailure("nixl peer " + name + " was closed while room " + plan.room() + " chunk " + plan.chunk()
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

    private void finish(Posted posted, long bytes, String failure, boolean settled)
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
                drain.completeExceptionally(cannotProve(posted.plan().room(), proofMissing));
            }
        }
    }

    private IllegalStateException cannotProve(RoomKey room, String reason)
    {
        return new IllegalStateException("nixl peer " + name + " cannot prove that no write of room " + room + " is in flight: " + reason);
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
            log.log(WARNING, "nixl peer " + name + ": the listener of room " + plan.room() + " chunk " + plan.chunk() + " threw", e);
        }
    }

    @Override
    public String toString()
    {
        return "nixl peer " + name + " (" + transport + ", " + remote.regions().size() + " regions)";
    }
}
