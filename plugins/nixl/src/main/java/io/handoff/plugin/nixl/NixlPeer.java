package io.handoff.plugin.nixl;

import io.handoff.spi.transfer.MemoryRegion;
import io.handoff.spi.transfer.PageGeometry;
import io.handoff.spi.transfer.PlanWork;
import io.handoff.spi.transfer.SliceMap;
import io.handoff.spi.transfer.TransferCapability;
import io.handoff.spi.transfer.TransferFailure;
import io.handoff.spi.transfer.TransferPeer;
import io.handoff.spi.transfer.TransferPlan;

import java.lang.foreign.MemorySegment;
import java.time.Duration;
import java.util.List;
import java.util.Set;

import static java.util.Objects.requireNonNull;

/**
 * A sender's connection to one receiver, driven by the core's transfer thread (plans one at a time, in post order).
 * Staging mode (STAGING; the core waited on each plan's producer fence before it hands the plan over): the plan's
 * source pages are gathered into the staging buffer (the snapshot that makes early send safe, I1), one slot per
 * batch, the pages reported, and each piece put from the copy while the next batch is gathered into the other slot.
 * Direct mode (FORWARD_SYNC): this thread waits on the fence itself and puts straight from the registered source
 * pool. Either way a plan is reported once a flush proved its puts completed at the receiver; because puts leave
 * only from this thread, "no plan of the room outstanding" means "no write of the room in flight" (DRAIN_ACK).
 */
final class NixlPeer
        implements TransferPeer
{
    private final String label;
    private final String transport;
    private final Set<TransferCapability> capabilities;
    private final List<MemoryRegion> sources;
    private final Descriptor remote;
    private final UcxLink link;
    private final Duration flushTimeout;
    private final SliceMap slices;
    private final boolean staged;
    // Staging mode: the slots batches are gathered into in turn. Direct mode: the most bytes put between flushes.
    private final StagingSlots slots;
    private final long directBatchBytes;
    // Guarded by this: the UCX resources are released once, and never while a plan is being sent.
    private boolean released;
    private boolean sending;
    // Set when the connection can no longer be trusted with a plan (a put or flush failed).
    private volatile String broken;

    NixlPeer(String name, String transport, Set<TransferCapability> capabilities, List<MemoryRegion> sources, SliceMap slices, Descriptor remote,
            UcxLink link, NixlConfig config)
    {
        this.slices = requireNonNull(slices, "slices is null");
        this.label = "nixl peer " + requireNonNull(name, "name is null");
        this.transport = requireNonNull(transport, "transport is null");
        this.capabilities = Set.copyOf(capabilities);
        this.sources = List.copyOf(sources);
        this.remote = requireNonNull(remote, "remote is null");
        this.link = requireNonNull(link, "link is null");
        this.flushTimeout = config.flushTimeout();
        long perPage = slices.bytesPerPage();
        this.staged = config.staging();
        if (perPage > config.stagingBytes()) {
            throw new IllegalArgumentException("nixl: one page of every region is " + perPage + " bytes, more than the "
                    + config.stagingBytes() + "-byte staging buffer; raise handoff.plugins.nixl.staging-buffer");
        }
        this.slots = staged ? new StagingSlots(link.staging().byteSize(), perPage) : null;
        this.directBatchBytes = config.stagingBytes();
    }

    @Override
    public String transport()
    {
        return transport;
    }

    @Override
    public PageGeometry receiverGeometry()
    {
        return remote.geometry();
    }

    @Override
    public Set<TransferCapability> capabilities()
    {
        return capabilities;
    }

    /** Whether the UCX resources were released (the backend may then clean up the context). */
    synchronized boolean released()
    {
        return released;
    }

    @Override
    public void send(PlanWork work)
    {
        TransferPlan plan = work.plan();
        synchronized (this) {
            if (released) {
                work.failed(new TransferFailure(label + " is closed; room " + plan.room() + " chunk " + plan.chunk()
                        + " was not sent", true));
                return;
            }
            sending = true;
        }
        try {
            if (broken != null) {
                work.failed(new TransferFailure(label + " is unusable since an earlier plan failed (" + broken
                        + "); room " + plan.room() + " chunk " + plan.chunk() + " was not sent", true));
                return;
            }
            try {
                work.completed(staged ? sendStaged(work) : sendDirect(work));
            }
            catch (TransferFailure failure) {
                work.failed(failure);
            }
            catch (RuntimeException e) {
                // A bug: the core reports the plan unsettled (a put may be in flight), and no later plan trusts this connection.
                broken = e.toString();
                throw e;
            }
        }
        finally {
            synchronized (this) {
                sending = false;
            }
        }
    }

    /**
     * Releases the endpoint, worker and staging buffer: on the transfer thread after its last plan, or from the
     * backend's close for a peer whose transfer thread is gone. Never under a plan being sent (UCX would abort the
     * process): then the transfer thread releases them when it ends.
     */
    @Override
    public synchronized void close()
    {
        if (released || sending) {
            return;
        }
        link.release(flushTimeout.toMillis());
        released = true;
    }

    /**
     * Staging mode: the plan in batches of one staging slot each. Per batch: gather its pages of every region into the
     * slot, report each page, wait until the previous batch's puts completed locally (its slot is then free for the
     * next gather), put each piece of this batch from the slot. So batch k+1 is gathered while batch k's puts are in
     * flight; one flush at the end proves the plan landed.
     */
    private long sendStaged(PlanWork work)
            throws TransferFailure
    {
        TransferPlan plan = work.plan();
        MemorySegment staging = link.staging();
        PieceBatches batches = new PieceBatches(plan, slices, slots.slotBytes());
        slots.reset();
        try {
            work.reading();
        }
        catch (RuntimeException e) {
            throw new TransferFailure("sending room " + plan.room() + " chunk " + plan.chunk() + " stopped before its first page: " + e, true);
        }
        long bytes = 0;
        while (batches.hasNext()) {
            if (work.stopped()) {
                throw settleThen(plan, label + " was closed while sending room " + plan.room() + " chunk " + plan.chunk()
                        + "; pages before " + batches.endPage() + " landed, nothing after");
            }
            batches.next();
            long slot = slots.advance();
            if (slots.count() == 1) {
                awaitLocal(plan);
            }
            for (int piece = 0; piece < batches.pieces(); piece++) {
                MemorySegment.copy(sources.get(batches.region(piece)).segment(), batches.sourceOffset(piece), staging,
                        slot + batches.stagingOffset(piece), batches.bytes(piece));
            }
            for (int page = batches.firstPage(); page < batches.endPage(); page++) {
                try {
                    work.pageDone(page);
                }
                catch (RuntimeException e) {
                    throw settleThen(plan, "sending room " + plan.room() + " chunk " + plan.chunk() + " stopped at page " + page + " ("
                            + e + "); pages before " + batches.firstPage() + " landed, nothing after");
                }
            }
            if (slots.count() == 2) {
                awaitLocal(plan);
            }
            for (int piece = 0; piece < batches.pieces(); piece++) {
                if (!link.put(slot + batches.stagingOffset(piece), batches.bytes(piece), batches.remoteRegion(piece), batches.remoteOffset(piece))) {
                    break;
                }
            }
            if (link.failure() != null) {
                break;
            }
            bytes += batches.batchBytes();
        }
        flush(plan);
        return bytes;
    }

    /**
     * Direct mode (FORWARD_SYNC): waits on the producer fence itself, then puts each piece straight from the registered
     * source pool, in batches of at most {@code staging-buffer} bytes, each flushed before its pages are reported (a
     * reported page is in the receiver's pool). The core holds the source pages until the plan is reported.
     */
    private long sendDirect(PlanWork work)
            throws TransferFailure
    {
        TransferPlan plan = work.plan();
        PieceBatches batches = new PieceBatches(plan, slices, directBatchBytes);
        try {
            work.awaitFence();
        }
        catch (RuntimeException e) {
            throw new TransferFailure("sending room " + plan.room() + " chunk " + plan.chunk() + " stopped before its first page: " + e, true);
        }
        long bytes = 0;
        while (batches.hasNext()) {
            if (work.stopped()) {
                throw new TransferFailure(label + " was closed while sending room " + plan.room() + " chunk " + plan.chunk()
                        + "; pages before " + batches.endPage() + " landed, nothing after", true);
            }
            batches.next();
            for (int piece = 0; piece < batches.pieces(); piece++) {
                int region = batches.region(piece);
                if (!link.putFromSource(sources.get(region).segment(), batches.sourceOffset(piece), batches.bytes(piece), region,
                        batches.remoteRegion(piece), batches.remoteOffset(piece))) {
                    break;
                }
            }
            flush(plan);
            bytes += batches.batchBytes();
            for (int page = batches.firstPage(); page < batches.endPage(); page++) {
                try {
                    work.pageDone(page);
                }
                catch (RuntimeException e) {
                    throw new TransferFailure("sending room " + plan.room() + " chunk " + plan.chunk() + " stopped at page " + page + " ("
                            + e + "); pages before " + batches.endPage() + " landed, nothing after", true);
                }
            }
        }
        return bytes;
    }

    /** Waits until every put posted so far completed locally; a failure or a timeout fails the plan as a flush would. */
    private void awaitLocal(TransferPlan plan)
            throws TransferFailure
    {
        switch (link.awaitLocal(flushTimeout.toNanos())) {
            case LANDED -> {
            }
            case FAILED -> flush(plan);
            case UNSETTLED -> throw unsettled(plan);
        }
    }

    /** Flushes every put posted so far; returns once they landed, else fails the plan (and this connection). */
    private void flush(TransferPlan plan)
            throws TransferFailure
    {
        switch (link.flush(flushTimeout.toNanos())) {
            case LANDED -> {
                if (link.failure() != null) {
                    throw failed(plan);
                }
            }
            case FAILED -> throw failed(plan);
            case UNSETTLED -> throw unsettled(plan);
        }
    }

    /** The plan stops part way: settle what is in flight first, so the failure can say whether it is settled. */
    private TransferFailure settleThen(TransferPlan plan, String reason)
    {
        try {
            flush(plan);
        }
        catch (TransferFailure failure) {
            return failure;
        }
        return new TransferFailure(reason, true);
    }

    private TransferFailure failed(TransferPlan plan)
    {
        broken = link.failure();
        return new TransferFailure(label + ": room " + plan.room() + " chunk " + plan.chunk() + " failed: " + link.failure(), true);
    }

    private TransferFailure unsettled(TransferPlan plan)
    {
        broken = "a flush did not complete within flush-timeout " + flushTimeout;
        return new TransferFailure(label + ": the puts of room " + plan.room() + " chunk " + plan.chunk()
                + " did not complete at the receiver within flush-timeout " + flushTimeout + "; they may still land", false);
    }

    @Override
    public String toString()
    {
        return label + " (" + transport + ", " + remote.regions().size() + " regions)";
    }
}
