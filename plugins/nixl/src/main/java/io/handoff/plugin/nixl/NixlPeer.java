package io.handoff.plugin.nixl;

import io.handoff.spi.transfer.MemoryRegion;
import io.handoff.spi.transfer.PageGeometry;
import io.handoff.spi.transfer.RoomKey;
import io.handoff.spi.transfer.PlanWork;
import io.handoff.spi.transfer.TransferCapability;
import io.handoff.spi.transfer.TransferFailure;
import io.handoff.spi.transfer.TransferPeer;
import io.handoff.spi.transfer.TransferPlan;

import java.lang.foreign.MemorySegment;
import java.time.Duration;
import java.util.List;
import java.util.Set;

import static java.util.Objects.requireNonNull;

/**
 * A sender's connection to one receiver, driven by the core's transfer thread (plans one at a time, in post order;
 * the core waited on each plan's producer fence before it hands the plan over, since this connection does not
 * declare FORWARD_SYNC). For each plan it gathers the plan's source pages into the staging buffer (the snapshot
 * that makes early send safe: STAGING, I1), reports the pages, puts every run of every region from the copy and
 * flushes the endpoint, and reports the plan once the flush completed at the receiver. Because puts leave only
 * from this thread and a plan is reported only after its flush, "no plan of the room outstanding" means "no
 * write of the room in flight" (DRAIN_ACK).
 */
final class NixlPeer
        implements TransferPeer
{
    private final String label;
    private final String transport;
    private final Set<TransferCapability> capabilities;
    private final List<MemoryRegion> sources;
    private final Descriptor remote;
    private final UcxLink link;
    private final Duration flushTimeout;
    private final long bytesPerPage;
    // Guarded by this: the UCX resources are released once, and never while a plan is being sent.
    private boolean released;
    private boolean sending;
    // Set when the connection can no longer be trusted with a plan (a put or flush failed).
    private volatile String broken;

    NixlPeer(String name, String transport, Set<TransferCapability> capabilities, List<MemoryRegion> sources, Descriptor remote,
            UcxLink link, NixlConfig config)
    {
        this.label = "nixl peer " + requireNonNull(name, "name is null");
        this.transport = requireNonNull(transport, "transport is null");
        this.capabilities = Set.copyOf(capabilities);
        this.sources = List.copyOf(sources);
        this.remote = requireNonNull(remote, "remote is null");
        this.link = requireNonNull(link, "link is null");
        this.flushTimeout = config.flushTimeout();
        long perPage = 0;
        for (MemoryRegion source : this.sources) {
            perPage += source.pageStride();
        }
        if (perPage > link.staging().byteSize()) {
            throw new IllegalArgumentException("nixl: one page of every region is " + perPage + " bytes, more than the "
                    + link.staging().byteSize() + "-byte staging buffer; raise handoff.plugins.nixl.staging-buffer");
        }
        this.bytesPerPage = perPage;
    }

    @Override
    public String transport()
    {
        return transport;
    }

    @Override
    public PageGeometry receiverGeometry()
    {
        return remote.geometry();
    }

    @Override
    public Set<TransferCapability> capabilities()
    {
        return capabilities;
    }

    /** Whether the UCX resources were released (the backend may then clean up the context). */
    synchronized boolean released()
    {
        return released;
    }

    @Override
    public void send(PlanWork work)
    {
        TransferPlan plan = work.plan();
        synchronized (this) {
            if (released) {
                work.failed(new TransferFailure(label + " is closed; room " + plan.room() + " chunk " + plan.chunk()
                        + " was not sent", true));
                return;
            }
            sending = true;
        }
        try {
            if (broken != null) {
                work.failed(new TransferFailure(label + " is unusable since an earlier plan failed (" + broken
                        + "); room " + plan.room() + " chunk " + plan.chunk() + " was not sent", true));
                return;
            }
            try {
                work.completed(sendBatches(work));
            }
            catch (TransferFailure failure) {
                work.failed(failure);
            }
            catch (RuntimeException e) {
                // A bug: the core reports the plan unsettled (a put may be in flight), and no later plan trusts this connection.
                broken = e.toString();
                throw e;
            }
        }
        finally {
            synchronized (this) {
                sending = false;
            }
        }
    }

    /**
     * Releases the endpoint, worker and staging buffer: on the transfer thread after its last plan, or from the
     * backend's close for a peer whose transfer thread is gone. Never under a plan being sent (UCX would abort the
     * process): then the transfer thread releases them when it ends.
     */
    @Override
    public synchronized void close()
    {
        if (released || sending) {
            return;
        }
        link.release(flushTimeout.toMillis());
        released = true;
    }

    /**
     * Sends the plan in batches that fit the staging buffer (usually one). Per batch: gather the pages of every run and
     * region into the buffer, report each page done, put each (run, region) piece, flush.
     */
    private long sendBatches(PlanWork work)
            throws TransferFailure
    {
        TransferPlan plan = work.plan();
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
            work.reading();
        }
        catch (RuntimeException e) {
            throw new TransferFailure("sending room " + room + " chunk " + plan.chunk() + " stopped before its first page: " + e, true);
        }
        while (run < runLengths.length) {
            if (work.stopped()) {
                throw new TransferFailure(label + " was closed while sending room " + room + " chunk " + plan.chunk()
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
                    work.pageDone(page);
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
                    throw new TransferFailure(label + ": room " + room + " chunk " + plan.chunk() + " failed: "
                            + link.failure(), true);
                }
                case UNSETTLED -> {
                    broken = "a flush did not complete within flush-timeout " + flushTimeout;
                    throw new TransferFailure(label + ": the puts of room " + room + " chunk " + plan.chunk()
                            + " did not complete at the receiver within flush-timeout " + flushTimeout + "; they may still land", false);
                }
            }
        }
        return bytes;
    }

    @Override
    public String toString()
    {
        return label + " (" + transport + ", " + remote.regions().size() + " regions)";
    }
}
