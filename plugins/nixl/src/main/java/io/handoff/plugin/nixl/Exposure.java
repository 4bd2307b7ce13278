package io.handoff.plugin.nixl;

import io.handoff.spi.transfer.MemoryRegion;

import java.lang.System.Logger;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;

import static io.handoff.plugin.nixl.UcpStructs.UCS_ERR_BUSY;
import static io.handoff.plugin.nixl.UcpStructs.UCS_OK;
import static java.lang.System.Logger.Level.WARNING;
import static java.util.Objects.requireNonNull;

/**
 * A receiver's exposed KV pool: each region registered with UCX, a worker whose address senders connect to, and the
 * thread that progresses that worker. Puts are one-sided only on transports with native RMA; over tcp (and the
 * shared-memory transports, for memory UCX did not allocate) UCX 1.13 emulates them with active messages that the
 * target must progress, and wire-up needs the target too. So while the pool is exposed, a thread of the backend
 * progresses the worker, sleeping on the worker's event fd when there is nothing to do.
 */
final class Exposure
{
    private static final Logger log = System.getLogger(Exposure.class.getName());
    // Polls without events before the thread arms the event fd and sleeps: cheap while traffic flows.
    private static final int SPINS = 128;
    // The longest sleep between checks of the stop flag; close() also signals the worker, so this is a backstop.
    private static final int SLEEP_MILLIS = 200;

    private final Ucp ucp;
    private final MemorySegment context;
    private final List<MemoryRegion> regions;
    private final List<MemorySegment> registrations;
    private final MemorySegment worker;
    private final byte[] descriptor;
    private final Thread thread;
    private volatile boolean stopping;

    private Exposure(Ucp ucp, MemorySegment context, List<MemoryRegion> regions, List<MemorySegment> registrations, MemorySegment worker,
            byte[] descriptor, String name)
    {
        this.ucp = ucp;
        this.context = context;
        this.regions = regions;
        this.registrations = registrations;
        this.worker = worker;
        this.descriptor = descriptor;
        this.thread = Thread.ofPlatform().daemon().name("nixl-progress-" + name).unstarted(this::progressLoop);
    }

    /** Registers the regions, creates the worker, starts its progress thread; undoes what it did if a step fails. */
    static Exposure start(Ucp ucp, MemorySegment context, List<MemoryRegion> regions, String name)
    {
        requireNonNull(regions, "regions is null");
        List<MemorySegment> registrations = new ArrayList<>(regions.size());
        MemorySegment worker = null;
        try {
            List<Descriptor.Region> shapes = new ArrayList<>(regions.size());
            for (MemoryRegion region : regions) {
                MemorySegment memh = ucp.memMap(context, region.segment());
                registrations.add(memh);
                shapes.add(new Descriptor.Region(region.segment().address(), region.segment().byteSize(), region.pageStride(),
                        ucp.packRkey(context, memh)));
            }
            worker = ucp.createWorker(context);
            byte[] descriptor = new Descriptor(ucp.workerAddress(worker), shapes).encode();
            Exposure exposure = new Exposure(ucp, context, List.copyOf(regions), List.copyOf(registrations), worker, descriptor, name);
            exposure.thread.start();
            return exposure;
        }
        catch (RuntimeException e) {
            if (worker != null) {
                ucp.destroyWorker(worker);
            }
            for (MemorySegment memh : registrations) {
                ucp.memUnmap(context, memh);
            }
            throw e;
        }
    }

    List<MemoryRegion> regions()
    {
        return regions;
    }

    byte[] descriptor()
    {
        return descriptor.clone();
    }

    /**
     * Stops the progress thread, then releases the worker and the registrations (in that order: UCX aborts the process
     * when memory is unmapped under a live context in the wrong order). Returns false, releasing nothing, when the thread
     * does not stop: freeing a worker another thread is inside would crash.
     */
    boolean close(long waitMillis)
    {
        stopping = true;
        ucp.signal(worker);
        try {
            thread.join(waitMillis);
        }
        catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        if (thread.isAlive()) {
            log.log(WARNING, "nixl: the progress thread " + thread.getName() + " did not stop; its UCX worker and registrations are kept");
            return false;
        }
        ucp.destroyWorker(worker);
        for (MemorySegment memh : registrations) {
            ucp.memUnmap(context, memh);
        }
        return true;
    }

    private void progressLoop()
    {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment pollfd = Ucp.allocatePollfd(arena);
            int eventFd = ucp.eventFd(worker);
            int idle = 0;
            while (!stopping) {
                if (ucp.progress(worker) != 0) {
                    idle = 0;
                    continue;
                }
                if (++idle < SPINS) {
                    // Yield rather than spin: with more busy threads than cores, a spinning poller would hold the core its peer needs.
                    Thread.yield();
                    continue;
                }
                int armed = ucp.arm(worker);
                if (armed == UCS_ERR_BUSY) {
                    continue;
                }
                if (armed != UCS_OK) {
                    throw new UcxException("ucp_worker_arm", armed, ucp.statusString(armed));
                }
                ucp.awaitReadable(pollfd, eventFd, SLEEP_MILLIS);
                idle = 0;
            }
        }
        catch (RuntimeException e) {
            // Without progress, tcp puts to this pool stall; senders time out on their flush and say so.
            log.log(WARNING, "nixl: the progress thread " + Thread.currentThread().getName() + " stopped", e);
        }
    }
}
