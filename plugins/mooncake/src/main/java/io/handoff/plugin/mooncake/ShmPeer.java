package io.handoff.plugin.mooncake;

import io.handoff.spi.transfer.MemoryRegion;
import io.handoff.spi.transfer.TransferFailure;
import io.handoff.spi.transfer.TransferPlan;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.VarHandle;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

import static java.nio.file.StandardOpenOption.READ;
import static java.nio.file.StandardOpenOption.WRITE;

/**
 * The shm transport: the sender maps the receiver's pool file into its own arena and copies each page batch
 * straight into the receiver's pages. The receiver takes no part (ONE_SIDED), so its write guard is never
 * asked; the core must release pages on a drain or a fence, which is why this transport declares DRAIN_ACK:
 * copies run on the transfer thread only, so once a plan is reported none of its writes is in flight.
 */
final class ShmPeer
        extends MooncakePeer
{
    private final Arena arena;
    private final List<MemorySegment> destinations;

    private ShmPeer(String name, List<MemoryRegion> sources, Descriptor remote, MooncakeConfig config, Arena arena,
            List<MemorySegment> destinations)
    {
        super(name, sources, remote, config);
        this.arena = arena;
        this.destinations = destinations;
    }

    static ShmPeer map(String name, List<MemoryRegion> sources, Descriptor remote, MooncakeConfig config)
    {
        Path file = remote.sharedFile().orElseThrow(() -> new IllegalArgumentException(
                "mooncake peer " + name + ": the receiver exposed no shared file, so transport shm cannot reach it"));
        Arena arena = Arena.ofShared();
        try (FileChannel channel = FileChannel.open(file, READ, WRITE)) {
            long size = channel.size();
            List<MemorySegment> destinations = new ArrayList<>(remote.regions().size());
            for (int i = 0; i < remote.regions().size(); i++) {
                Descriptor.Shape region = remote.regions().get(i);
                if (region.fileOffset() + region.byteSize() > size) {
                    throw new IllegalArgumentException("mooncake peer " + name + ": region " + i + " ends at byte "
                            + (region.fileOffset() + region.byteSize()) + " of " + file + ", which has " + size + " bytes");
                }
                destinations.add(channel.map(FileChannel.MapMode.READ_WRITE, region.fileOffset(), region.byteSize(), arena));
            }
            return new ShmPeer(name, sources, remote, config, arena, List.copyOf(destinations));
        }
        catch (IOException e) {
            arena.close();
            throw new UncheckedIOException("mooncake peer " + name + " cannot map the receiver's pool file " + file + ": " + e.getMessage(), e);
        }
        catch (RuntimeException e) {
            arena.close();
            throw e;
        }
    }

    @Override
    protected Transport transportKind()
    {
        return Transport.SHM;
    }

    @Override
    protected long writePages(TransferPlan plan, int region, int srcPage, int dstPage, int count)
    {
        MemoryRegion source = sources.get(region);
        long stride = source.pageStride();
        long bytes = count * stride;
        MemorySegment.copy(source.segment(), srcPage * stride, destinations.get(region), dstPage * stride, bytes);
        return bytes;
    }

    @Override
    protected long finishPlan(TransferPlan plan, long bytes)
    {
        // The completion travels to the receiver on another path (the core's protocol); order the copies before it.
        VarHandle.fullFence();
        return bytes;
    }

    @Override
    protected TransferFailure abortPlan(TransferPlan plan, String reason, boolean closing)
    {
        // Copies are synchronous: whatever part was written has landed, and nothing more will.
        return new TransferFailure(reason, true);
    }

    /** On the transfer thread after its last plan (or from the backend's close): unmaps the receiver's pool, once. */
    @Override
    public synchronized void close()
    {
        if (arena.scope().isAlive()) {
            arena.close();
        }
    }
}
