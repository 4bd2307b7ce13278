package io.handoff.plugin.mooncake;

import io.handoff.spi.transfer.MemoryRegion;
import io.handoff.spi.transfer.PageGeometry;
import io.handoff.spi.transfer.PlanWork;
import io.handoff.spi.transfer.RoomKey;
import io.handoff.spi.transfer.SliceMap;
import io.handoff.spi.transfer.TransferCapability;
import io.handoff.spi.transfer.TransferFailure;
import io.handoff.spi.transfer.TransferPeer;
import io.handoff.spi.transfer.TransferPlan;

import java.util.List;
import java.util.Set;

import static java.util.Objects.requireNonNull;

/**
 * A mooncake peer, driven by the core's transfer thread: every transport waits on each plan's producer fence
 * itself before it reads a page (I1, FORWARD_SYNC: {@link PlanWork#awaitFence}), then sends the plan as page
 * batches of at most one frame, reporting each page to the core after its batch. The transports differ only in
 * how a batch is written and how a plan is ended or aborted.
 */
abstract sealed class MooncakePeer
        implements TransferPeer
        permits TcpPeer, ShmPeer
{
    protected final String label;
    protected final List<MemoryRegion> sources;
    // what of each source page goes where on the receiver: region by region between servers of one layout
    protected final SliceMap slices;
    protected final Descriptor remote;
    private final int batchPages;

    protected MooncakePeer(String name, List<MemoryRegion> sources, SliceMap slices, Descriptor remote, MooncakeConfig config)
    {
        this.label = "mooncake peer " + requireNonNull(name, "name is null");
        this.sources = List.copyOf(sources);
        this.slices = requireNonNull(slices, "slices is null");
        this.remote = requireNonNull(remote, "remote is null");
        long largestStride = 1;
        for (MemoryRegion source : this.sources) {
            largestStride = Math.max(largestStride, source.pageStride());
        }
        long frameBytes = Math.min(config.maxFrameBytes(), remote.maxFrameBytes());
        this.batchPages = (int) Math.max(1, Math.min(Integer.MAX_VALUE, frameBytes / largestStride));
    }

    /**
     * Copies what slice {@code slice} of the slice map moves of pages {@code srcPage..+count-1} to the peer's
     * {@code dstPage..} (or queues it for {@link #flushBatch}); returns the bytes.
     */
    protected abstract long writePages(TransferPlan plan, int slice, int srcPage, int dstPage, int count)
            throws TransferFailure;

    /** After {@link #writePages} of every region of one page batch, before its pages are reported done: write what was queued. */
    protected void flushBatch()
            throws TransferFailure
    {
    }

    /**
     * After all of a plan's pages were handed over: reports the plan's outcome through {@code work}, before returning
     * or (a pipelined transport) later, once the receiver confirmed it.
     */
    protected abstract void finishPlan(PlanWork work, long bytes);

    /**
     * The plan stopped part way ({@code reason}): reports its failure through {@code work}, now or later, saying
     * whether its written part is settled.
     *
     * @param closing whether the core is closing this peer (its {@link #unblock} may have run)
     */
    protected abstract void abortPlan(PlanWork work, String reason, boolean closing);

    /** Throws (settled, nothing sent) when the connection can no longer carry plans; asked before a plan's fence. */
    protected void checkUsable(TransferPlan plan)
            throws TransferFailure
    {
    }

    protected abstract Transport transportKind();

    @Override
    public final void send(PlanWork work)
    {
        TransferPlan plan = work.plan();
        try {
            checkUsable(plan);
            work.awaitFence();
        }
        catch (TransferFailure failure) {
            work.failed(failure);
            return;
        }
        catch (RuntimeException e) {
            // A fault injected before the first read: nothing was written.
            work.failed(new TransferFailure("sending room " + plan.room() + " chunk " + plan.chunk() + " stopped before its first page: "
                    + e + "; nothing was sent", true));
            return;
        }
        sendPages(work);
    }

    /** Hands every page of the plan to the transport, then finishes it; or aborts it part way. Either reports the plan. */
    private void sendPages(PlanWork work)
    {
        TransferPlan plan = work.plan();
        RoomKey room = plan.room();
        int[] srcPages = plan.srcPages();
        int[] dstPages = plan.dstPages();
        int[] runLengths = plan.runLengths();
        int pageIndex = plan.firstPageIndex();
        long bytes = 0;
        try {
            for (int run = 0; run < runLengths.length; run++) {
                for (int done = 0; done < runLengths[run]; ) {
                    if (work.stopped()) {
                        abortPlan(work, label + " was closed while sending room " + room + " chunk " + plan.chunk(), true);
                        return;
                    }
                    // A batch ends at a page the core watches, so a fault point there sees exactly the pages up to it.
                    int count = work.pagesBeforeWatch(pageIndex, Math.min(runLengths[run] - done, batchPages));
                    for (int slice = 0; slice < slices.slices().size(); slice++) {
                        bytes += writePages(plan, slice, srcPages[run] + done, dstPages[run] + done, count);
                    }
                    flushBatch();
                    for (int page = 0; page < count; page++) {
                        work.pageDone(pageIndex++);
                    }
                    done += count;
                }
            }
        }
        catch (TransferFailure failure) {
            // The transport broke part way: the transport says, now or once it knows, whether the written part is settled.
            abortPlan(work, failure.getMessage(), work.stopped());
            return;
        }
        catch (RuntimeException e) {
            // A fault hook (or a bug) stopped the plan part way: tell the receiver, so the connection stays in step.
            abortPlan(work, "sending room " + room + " chunk " + plan.chunk() + " stopped at page " + pageIndex + ": " + e, work.stopped());
            return;
        }
        finishPlan(work, bytes);
    }

    @Override
    public final PageGeometry receiverGeometry()
    {
        return remote.geometry();
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

    @Override
    public String toString()
    {
        return label + " (" + transport() + ")";
    }
}
