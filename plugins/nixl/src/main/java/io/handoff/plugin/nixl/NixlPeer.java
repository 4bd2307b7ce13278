package io.handoff.plugin.nixl;

import io.handoff.spi.transfer.MemoryRegion;
import io.handoff.spi.transfer.PageGeometry;
import io.handoff.spi.transfer.RoomKey;
import io.handoff.spi.transfer.SerialTransferPeer;
import io.handoff.spi.transfer.TransferCapability;
import io.handoff.spi.transfer.TransferContext;
import io.handoff.spi.transfer.TransferFailure;
import io.handoff.spi.transfer.TransferPlan;

import java.lang.foreign.MemorySegment;
import java.time.Duration;
import java.util.List;
import java.util.Set;

import static java.util.Objects.requireNonNull;

/**
 * A sender's connection to one receiver, run by the core's serial transfer thread (posted plans in order; the
 * scheduler thread only queues). For each plan the transfer thread waits on the producer fence, then gathers the plan's source
 * pages into the staging buffer (the snapshot that makes early send safe: STAGING, I1), calls the hooks, puts every
 * run of every region from the copy and flushes the endpoint, and reports the plan once the flush completed at the
 * receiver. Because puts leave only from this thread and a plan is reported only after its flush, "no plan of the
 * room outstanding" means "no write of the room in flight" (DRAIN_ACK).
 */
final class NixlPeer
        extends SerialTransferPeer
{
    private final String transport;
    private final Set<TransferCapability> capabilities;
    private final TransferContext context;
    private final List<MemoryRegion> sources;
    private final Descriptor remote;
    private final UcxLink link;
    private final Duration flushTimeout;
    private final long bytesPerPage;
    private volatile boolean released;
    // Set when the connection can no longer be trusted with a plan (a put or flush failed).
    private volatile String broken;

    private NixlPeer(String name, String transport, Set<TransferCapability> capabilities, TransferContext context, List<MemoryRegion> sources,
            Descriptor remote, UcxLink link, NixlConfig config)
    {
        // close() waits for a plan in flight, which may wait out a fence slice and its flush; the release closes the endpoint (another flush).
        super("nixl", name, PageGeometry.of(sources), remote.geometry(), config.fenceTimeout(),
                Duration.ofMillis(50).plus(config.flushTimeout().multipliedBy(2)).plusSeconds(5));
        this.transport = requireNonNull(transport, "transport is null");
        this.capabilities = Set.copyOf(capabilities);
        this.context = requireNonNull(context, "context is null");
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

    /** Builds the peer and starts its transfer thread, which owns the link from then on. */
    static NixlPeer open(String name, String transport, Set<TransferCapability> capabilities, TransferContext context,
            List<MemoryRegion> sources, Descriptor remote, UcxLink link, NixlConfig config)
    {
        NixlPeer peer = new NixlPeer(name, transport, capabilities, context, sources, remote, link, config);
        peer.start();
        return peer;
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

    /** Whether the transfer thread released the UCX resources (the backend may then clean up the context). */
    boolean released()
    {
        return released;
    }

    @Override
    protected void checkUsable(TransferPlan plan)
            throws TransferFailure
    {
        if (broken != null) {
            throw new TransferFailure(label() + " is unusable since an earlier plan failed (" + broken
                    + "); room " + plan.room() + " chunk " + plan.chunk() + " was not sent", true);
        }
    }

    @Override
    protected long send(TransferPlan plan)
            throws TransferFailure
    {
        try {
            return sendBatches(plan);
        }
        catch (RuntimeException e) {
            // A bug: the core reports the plan unsettled (a put may be in flight), and no later plan trusts this connection.
            broken = e.toString();
            throw e;
        }
    }

    @Override
    protected void release()
    {
        link.release(flushTimeout.toMillis());
        released = true;
    }

    /**
     * Sends the plan in batches that fit the staging buffer (usually one). Per batch: gather the pages of every run and
     * region into the buffer, call afterPage for each, put each (run, region) piece, flush.
     */
    private long sendBatches(TransferPlan plan)
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
            if (isClosed()) {
                throw new TransferFailure(label() + " was closed while sending room " + room + " chunk " + plan.chunk()
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
                    throw new TransferFailure(label() + ": room " + room + " chunk " + plan.chunk() + " failed: "
                            + link.failure(), true);
                }
                case UNSETTLED -> {
                    broken = "a flush did not complete within flush-timeout " + flushTimeout;
                    throw new TransferFailure(label() + ": the puts of room " + room + " chunk " + plan.chunk()
                            + " did not complete at the receiver within flush-timeout " + flushTimeout + "; they may still land", false);
                }
            }
        }
        return bytes;
    }

    @Override
    public String toString()
    {
        return label() + " (" + transport + ", " + remote.regions().size() + " regions)";
    }
}
