package io.handoff.plugin.mooncake;

import io.handoff.spi.transfer.MemoryRegion;
import io.handoff.spi.transfer.PageGeometry;
import io.handoff.spi.transfer.RoomKey;
import io.handoff.spi.transfer.SerialTransferPeer;
import io.handoff.spi.transfer.TransferCapability;
import io.handoff.spi.transfer.TransferContext;
import io.handoff.spi.transfer.TransferFailure;
import io.handoff.spi.transfer.TransferPlan;

import java.time.Duration;
import java.util.List;
import java.util.Set;

import static java.util.Objects.requireNonNull;

/**
 * A mooncake peer: the core's serial transfer thread (which waits on each plan's producer fence before it reads
 * a page: I1, FORWARD_SYNC, and keeps the per-room counts a drain waits for: DRAIN_ACK), sending each plan as
 * page batches of at most one frame, calling the context's hooks per batch. The transports differ only in how a
 * batch is written and how a plan is ended or aborted.
 */
abstract sealed class MooncakePeer
        extends SerialTransferPeer
        permits TcpPeer, ShmPeer
{
    protected final TransferContext context;
    protected final List<MemoryRegion> sources;
    protected final Descriptor remote;
    private final int batchPages;

    protected MooncakePeer(String name, TransferContext context, List<MemoryRegion> sources, Descriptor remote, MooncakeConfig config)
    {
        // A closing tcp peer may still wait for the receiver's verdict on the plan in flight.
        super("mooncake", name, PageGeometry.of(sources), remote.geometry(), config.fenceTimeout(),
                config.ackTimeout().plus(Duration.ofSeconds(5)));
        this.context = requireNonNull(context, "context is null");
        this.sources = List.copyOf(sources);
        this.remote = requireNonNull(remote, "remote is null");
        long largestStride = 1;
        for (MemoryRegion source : this.sources) {
            largestStride = Math.max(largestStride, source.pageStride());
        }
        long frameBytes = Math.min(config.maxFrameBytes(), remote.maxFrameBytes());
        this.batchPages = (int) Math.max(1, Math.min(Integer.MAX_VALUE, frameBytes / largestStride));
    }

    /** Copies pages {@code srcPage..+count-1} of source region {@code region} to the peer's {@code dstPage..}; returns the bytes. */
    protected abstract long writePages(TransferPlan plan, int region, int srcPage, int dstPage, int count)
            throws TransferFailure;

    /** After all of a plan's pages were handed over: returns once they landed (the bytes landed), or throws. */
    protected abstract long finishPlan(TransferPlan plan, long bytes)
            throws TransferFailure;

    /** The plan stopped part way ({@code reason}); returns a failure saying whether its written part is settled. */
    protected abstract TransferFailure abortPlan(TransferPlan plan, String reason);

    protected abstract Transport transportKind();

    @Override
    protected final long send(TransferPlan plan)
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
                    if (isClosed()) {
                        throw abortPlan(plan, label() + " was closed while sending room " + room + " chunk " + plan.chunk());
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
}
