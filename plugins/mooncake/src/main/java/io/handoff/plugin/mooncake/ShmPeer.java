package io.handoff.plugin.mooncake;

import io.handoff.spi.transfer.MemoryRegion;
import io.handoff.spi.transfer.PlanWork;
import io.handoff.spi.transfer.RegionSlice;
import io.handoff.spi.transfer.SharedPoolMapping;
import io.handoff.spi.transfer.SliceMap;
import io.handoff.spi.transfer.TransferFailure;
import io.handoff.spi.transfer.TransferPlan;

import java.lang.foreign.MemorySegment;
import java.lang.invoke.VarHandle;
import java.util.List;

/**
 * The shm transport: the core maps the receiver's pool file for the sender, which copies each page batch
 * straight into the receiver's pages. The receiver takes no part (ONE_SIDED), so its write guard is never
 * asked; the core must release pages on a drain or a fence, which is why this transport declares DRAIN_ACK:
 * copies run on the transfer thread only, so once a plan is reported none of its writes is in flight.
 */
final class ShmPeer
        extends MooncakePeer
{
    private final SharedPoolMapping receiver;
    private final List<MemorySegment> destinations;

    ShmPeer(String name, List<MemoryRegion> sources, SliceMap slices, Descriptor remote, MooncakeConfig config, SharedPoolMapping receiver)
    {
        super(name, sources, slices, remote, config);
        this.receiver = receiver;
        this.destinations = receiver.regions().stream().map(MemoryRegion::segment).toList();
    }

    @Override
    protected Transport transportKind()
    {
        return Transport.SHM;
    }

    @Override
    protected long writePages(TransferPlan plan, int slice, int srcPage, int dstPage, int count)
    {
        RegionSlice part = slices.slices().get(slice);
        MemorySegment source = sources.get(part.srcRegion()).segment();
        MemorySegment destination = destinations.get(part.dstRegion());
        slices.pieces(slice, srcPage, dstPage, count, (ignored, srcOffset, dstOffset, length) ->
                MemorySegment.copy(source, srcOffset, destination, dstOffset, length));
        return slices.bytes(slice, count);
    }

    @Override
    protected void finishPlan(PlanWork work, long bytes)
    {
        // The completion travels to the receiver on another path (the core's protocol); order the copies before it.
        VarHandle.fullFence();
        work.completed(bytes);
    }

    @Override
    protected void abortPlan(PlanWork work, String reason, boolean closing)
    {
        // Copies are synchronous: whatever part was written has landed, and nothing more will.
        work.failed(new TransferFailure(reason, true));
    }

    /** On the transfer thread after its last plan (or from the backend's close): unmaps the receiver's pool, once. */
    @Override
    public synchronized void close()
    {
        receiver.close();
    }
}
