package io.handoff.plugin.mori;

import io.handoff.spi.transfer.MemoryRegion;
import io.handoff.spi.transfer.PageGeometry;
import io.handoff.spi.transfer.RoomKey;
import io.handoff.spi.transfer.PlanWork;
import io.handoff.spi.transfer.TransferCapability;
import io.handoff.spi.transfer.TransferFailure;
import io.handoff.spi.transfer.TransferPeer;
import io.handoff.spi.transfer.TransferPlan;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.VarHandle;
import java.nio.channels.FileChannel;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;

import static java.nio.file.StandardOpenOption.READ;
import static java.nio.file.StandardOpenOption.WRITE;
import static java.util.Objects.requireNonNull;

/**
 * A prefill's one-sided connection to a decode on this host: the decode's pool file mapped read-write, into which
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
    private final Arena arena;

    private SharedMemoryPeer(String name, MoriConfig config, List<MemoryRegion> sources, Arena arena, List<MemorySegment> destinations,
            PoolDescriptor remote)
    {
        this.label = "mori peer " + name;
        this.config = config;
        this.sources = List.copyOf(sources);
        this.destinations = List.copyOf(destinations);
        this.receiverGeometry = remote.geometry();
        this.arena = arena;
    }

    /** Maps the receiver's pool file read-write, region by region. */
    static SharedMemoryPeer map(String name, MoriConfig config, List<MemoryRegion> sources, PoolDescriptor remote)
    {
        requireNonNull(name, "name is null");
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
            return new SharedMemoryPeer(name, config, sources, arena, destinations, remote);
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
        if (arena.scope().isAlive()) {
            arena.close();
        }
    }
}
