package io.handoff.plugin.mori;

import io.handoff.spi.transfer.MemoryRegion;
import io.handoff.spi.transfer.PageGeometry;
import io.handoff.spi.transfer.RoomKey;
import io.handoff.spi.transfer.SharedPoolMapping;
import io.handoff.spi.transfer.SliceMap;
import io.handoff.spi.transfer.PlanWork;
import io.handoff.spi.transfer.TransferCapability;
import io.handoff.spi.transfer.TransferFailure;
import io.handoff.spi.transfer.TransferPeer;
import io.handoff.spi.transfer.TransferPlan;

import java.lang.foreign.MemorySegment;
import java.lang.invoke.VarHandle;
import java.util.List;
import java.util.Set;

import static java.util.Objects.requireNonNull;

/**
 * A prefill's one-sided connection to a decode on this host: the decode's pool file, mapped read-write by the core, into which
 * the core's transfer thread copies each plan's page runs, region by region, straight from the source pool. With forward-sync the
 * connection waits on each plan's producer fence itself before it reads a page (I1, FORWARD_SYNC:
 * {@link PlanWork#awaitFence}); without it the core waited on the fence before handing the plan over, and the
 * connection only says when it starts reading ({@link PlanWork#reading}). Copies are synchronous, so once a plan
 * is reported none of its writes is in flight (DRAIN_ACK).
 */
final class SharedMemoryPeer
        implements TransferPeer
{
    private final String label;
    private final MoriConfig config;
    // The source pool's segments and the receiver's, by region index, and what of each page goes where.
    private final MemorySegment[] sourceSegments;
    private final MemorySegment[] destinations;
    private final SliceMap slices;
    // The most pages one batch copies: max-copy-bytes of the region with the largest stride, at least one page.
    private final int batchPages;
    private final PageGeometry receiverGeometry;
    private final SharedPoolMapping receiver;

    SharedMemoryPeer(String name, MoriConfig config, List<MemoryRegion> sources, SliceMap slices, SharedPoolMapping receiver)
    {
        this.label = "mori peer " + requireNonNull(name, "name is null");
        this.config = requireNonNull(config, "config is null");
        this.receiver = requireNonNull(receiver, "receiver is null");
        this.sourceSegments = sources.stream().map(MemoryRegion::segment).toArray(MemorySegment[]::new);
        this.destinations = receiver.regions().stream().map(MemoryRegion::segment).toArray(MemorySegment[]::new);
        this.slices = requireNonNull(slices, "slices is null");
        long largestStride = 1;
        for (MemoryRegion source : sources) {
            largestStride = Math.max(largestStride, source.pageStride());
        }
        this.batchPages = (int) Math.max(1, Math.min(Integer.MAX_VALUE, config.maxCopyBytes() / largestStride));
        this.receiverGeometry = receiver.description().geometry();
    }

    @Override
    public String transport()
    {
        return "shm";
    }

    @Override
    public PageGeometry receiverGeometry()
    {
        return receiverGeometry;
    }

    @Override
    public Set<TransferCapability> capabilities()
    {
        return config.sharedMemoryCapabilities();
    }

    /**
     * Copies each run of the plan in batches of whole pages, each batch one copy per region of at most
     * {@code max-copy-bytes}, and reports a batch's pages once every region of them is copied. A batch ends early at
     * a page the core watches ({@link PlanWork#pagesBeforeWatch}), so a fault point there sees exactly the pages up
     * to it written; the close is looked at between batches.
     */
    @Override
    public void send(PlanWork work)
    {
        TransferPlan plan = work.plan();
        RoomKey room = plan.room();
        int[] srcPages = plan.srcPages();
        int[] dstPages = plan.dstPages();
        int[] runLengths = plan.runLengths();
        int pageIndex = plan.firstPageIndex();
        int written = 0;
        long bytes = 0;
        try {
            if (config.forwardSync()) {
                work.awaitFence();
            }
            else {
                work.reading();
            }
            for (int run = 0; run < runLengths.length; run++) {
                for (int done = 0; done < runLengths[run]; ) {
                    if (work.stopped()) {
                        work.failed(new TransferFailure(label + " was closed while sending room " + room + " chunk " + plan.chunk()
                                + ": " + written + " of " + plan.pages() + " pages were written, no more will be", true));
                        return;
                    }
                    int count = work.pagesBeforeWatch(pageIndex, Math.min(runLengths[run] - done, batchPages));
                    bytes += copy(srcPages[run] + done, dstPages[run] + done, count);
                    for (int page = 0; page < count; page++) {
                        written++;
                        work.pageDone(pageIndex++);
                    }
                    done += count;
                }
            }
        }
        catch (TransferFailure failure) {
            // The fence failed or timed out, or the peer is closing: nothing was read.
            work.failed(failure);
            return;
        }
        catch (RuntimeException | InternalError e) {
            // A fault hook, or a fault in the mapping (InternalError from a truncated file), stopped the plan part way.
            // Copies are synchronous: what was copied has landed and nothing more will.
            work.failed(new TransferFailure("sending room " + room + " chunk " + plan.chunk() + " stopped after " + written + " of "
                    + plan.pages() + " pages: " + e.getMessage(), true));
            return;
        }
        // The completion reaches the receiver on another path (the core's protocol): order the copies before it.
        VarHandle.fullFence();
        work.completed(bytes);
    }

    /**
     * Copies pages {@code srcPage..+count-1} to {@code dstPage..} as the slice map says: one copy per region between
     * servers of the same layout, one per row and slice between layouts; returns the bytes.
     */
    private long copy(long srcPage, long dstPage, int count)
    {
        return slices.copy(sourceSegments, destinations, srcPage, dstPage, count);
    }

    /** Unmapped on the transfer thread after its last plan (or by the backend's close), so no copy can touch the mapping after it is gone. */
    @Override
    public synchronized void close()
    {
        receiver.close();
    }
}
