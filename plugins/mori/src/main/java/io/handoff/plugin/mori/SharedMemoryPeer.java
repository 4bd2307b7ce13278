package io.handoff.plugin.mori;

import io.handoff.spi.transfer.MemoryRegion;
import io.handoff.spi.transfer.PageGeometry;
import io.handoff.spi.transfer.RoomKey;
import io.handoff.spi.transfer.SharedPoolMapping;
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
 * the core's transfer thread copies each plan page by page, straight from the source pool. With forward-sync the
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
    private final List<MemoryRegion> sources;
    private final List<MemorySegment> destinations;
    private final PageGeometry receiverGeometry;
    private final SharedPoolMapping receiver;

    SharedMemoryPeer(String name, MoriConfig config, List<MemoryRegion> sources, SharedPoolMapping receiver)
    {
        this.label = "mori peer " + requireNonNull(name, "name is null");
        this.config = requireNonNull(config, "config is null");
        this.sources = List.copyOf(sources);
        this.receiver = requireNonNull(receiver, "receiver is null");
        this.destinations = receiver.regions().stream().map(MemoryRegion::segment).toList();
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

    /** Copies the plan page by page (every region of a page, then its hook), so a fault point sees exactly the pages written. */
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
                for (int i = 0; i < runLengths[run]; i++) {
                    if (work.stopped()) {
                        work.failed(new TransferFailure(label + " was closed while sending room " + room + " chunk " + plan.chunk()
                                + ": " + written + " of " + plan.pages() + " pages were written, no more will be", true));
                        return;
                    }
                    long src = srcPages[run] + i;
                    long dst = dstPages[run] + i;
                    for (int region = 0; region < sources.size(); region++) {
                        long stride = sources.get(region).pageStride();
                        MemorySegment.copy(sources.get(region).segment(), src * stride, destinations.get(region), dst * stride, stride);
                        bytes += stride;
                    }
                    written++;
                    work.pageDone(pageIndex++);
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

    /** Unmapped on the transfer thread after its last plan (or by the backend's close), so no copy can touch the mapping after it is gone. */
    @Override
    public synchronized void close()
    {
        receiver.close();
    }
}
