package io.handoff.plugin.mori;

import io.handoff.spi.transfer.MemoryRegion;
import io.handoff.spi.transfer.PageGeometry;
import io.handoff.spi.transfer.RoomKey;
import io.handoff.spi.transfer.SerialTransferPeer;
import io.handoff.spi.transfer.TransferCapability;
import io.handoff.spi.transfer.TransferContext;
import io.handoff.spi.transfer.TransferFailure;
import io.handoff.spi.transfer.TransferPlan;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.VarHandle;
import java.nio.channels.FileChannel;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;

import static java.nio.file.StandardOpenOption.READ;
import static java.nio.file.StandardOpenOption.WRITE;
import static java.util.Objects.requireNonNull;

/**
 * A prefill's one-sided connection to a decode on this host: the decode's pool file mapped read-write, and
 * the core's serial transfer thread copying posted plans page by page, straight from the source pool, in order.
 * {@link #post} only queues. With forward-sync the thread waits on each plan's producer fence before it
 * reads a page (I1, FORWARD_SYNC); without it the thread reads at once, as the unfixed field backend did
 * (seed 000), and the core's early-send gate is what keeps that safe. Copies are synchronous, so once a plan
 * is reported none of its writes is in flight, which is what {@link #drain} promises (DRAIN_ACK).
 */
final class SharedMemoryPeer
        extends SerialTransferPeer
{
    // close() waits this long for the plan in flight; only a hook that parks the thread takes longer.
    private static final Duration CLOSE_WAIT = Duration.ofSeconds(30);

    private final TransferContext context;
    private final MoriConfig config;
    private final List<MemoryRegion> sources;
    private final List<MemorySegment> destinations;
    private final Arena arena;

    private SharedMemoryPeer(String name, TransferContext context, MoriConfig config, List<MemoryRegion> sources, Arena arena,
            List<MemorySegment> destinations, PoolDescriptor remote)
    {
        super("mori", name, PageGeometry.of(sources), remote.geometry(), config.fenceTimeout(), CLOSE_WAIT);
        this.context = context;
        this.config = config;
        this.sources = List.copyOf(sources);
        this.destinations = List.copyOf(destinations);
        this.arena = arena;
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
            SharedMemoryPeer peer = new SharedMemoryPeer(name, context, config, sources, arena, destinations, remote);
            peer.start();
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

    /** Without forward-sync the fence is not looked at: the pages are read at once, whether or not the forward finished (seed 000). */
    @Override
    protected boolean awaitsFence()
    {
        return config.forwardSync();
    }

    /** Copies the plan page by page (every region of a page, then its hook), so a fault point sees exactly the pages written. */
    @Override
    protected long send(TransferPlan plan)
            throws TransferFailure
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
                    if (isClosed()) {
                        throw new TransferFailure(label() + " was closed while sending room " + room + " chunk " + plan.chunk()
                                + ": " + written + " of " + plan.pages() + " pages were written, no more will be", true);
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
        catch (RuntimeException | InternalError e) {
            // A fault hook, or a fault in the mapping (InternalError from a truncated file), stopped the plan part way.
            // Copies are synchronous: what was copied has landed and nothing more will.
            throw new TransferFailure("sending room " + room + " chunk " + plan.chunk() + " stopped after " + written + " of " + plan.pages()
                    + " pages: " + e.getMessage(), true);
        }
        // The completion reaches the receiver on another path (the core's protocol): order the copies before it.
        VarHandle.fullFence();
        return bytes;
    }

    /** Unmapped on the transfer thread, so no copy can touch the mapping after it is gone. */
    @Override
    protected void release()
    {
        arena.close();
    }
}
