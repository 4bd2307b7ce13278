package io.handoff.plugin.nixl;

import java.lang.System.Logger;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

import static io.handoff.plugin.nixl.UcpStructs.REQUEST_MEMH;
import static io.handoff.plugin.nixl.UcpStructs.REQUEST_OP_ATTR_MASK;
import static io.handoff.plugin.nixl.UcpStructs.REQUEST_PARAM;
import static io.handoff.plugin.nixl.UcpStructs.UCP_OP_ATTR_FIELD_MEMH;
import static io.handoff.plugin.nixl.UcpStructs.UCS_ERR_BUSY;
import static io.handoff.plugin.nixl.UcpStructs.UCS_INPROGRESS;
import static io.handoff.plugin.nixl.UcpStructs.UCS_OK;
import static java.lang.System.Logger.Level.WARNING;
import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;

/**
 * A sender's UCX connection to one receiver: its own worker, an endpoint to the receiver's worker, the receiver's
 * unpacked remote keys, and what puts read from: a registered staging buffer (staging mode) or the sender's
 * registered source regions (direct mode; the backend owns those registrations). Created on the connecting thread,
 * then used and released by the peer's transfer thread only (the worker is serialized, not thread-safe).
 */
final class UcxLink
{
    private static final Logger log = System.getLogger(UcxLink.class.getName());
    private static final int SPINS = 128;
    private static final int MAX_SLEEP_MILLIS = 100;

    /** How a batch of puts ended. */
    enum Settlement
    {
        /** Every put completed at the receiver. */
        LANDED,
        /** A put or the flush failed, and nothing of the batch is still in flight. */
        FAILED,
        /** The flush did not complete in time: puts may still land. */
        UNSETTLED
    }

    private final Ucp ucp;
    private final MemorySegment context;
    private final Arena arena;
    private final MemorySegment worker;
    private final MemorySegment endpoint;
    private final List<MemorySegment> rkeys;
    private final long[] remoteBases;
    private final MemorySegment staging;
    private final MemorySegment stagingMemh;
    private final MemorySegment putParam;
    private final MemorySegment[] sourceParams;
    private final MemorySegment plainParam;
    private final MemorySegment pollfd;
    private final int eventFd;
    private long[] requests = new long[64];
    private int requestCount;
    private String failure;

    private UcxLink(Ucp ucp, MemorySegment context, Arena arena, MemorySegment worker, MemorySegment endpoint, List<MemorySegment> rkeys,
            long[] remoteBases, MemorySegment staging, MemorySegment stagingMemh, List<MemorySegment> sourceMemhs)
    {
        this.ucp = ucp;
        this.context = context;
        this.arena = arena;
        this.worker = worker;
        this.endpoint = endpoint;
        this.rkeys = rkeys;
        this.remoteBases = remoteBases;
        this.staging = staging;
        this.stagingMemh = stagingMemh;
        // Puts name the staging registration, so UCX need not look the buffer up in its registration cache.
        // Direct puts name their source region's registration the same way; the parameters are built once, not per put.
        this.putParam = stagingMemh == null ? null : memhParam(arena, stagingMemh);
        this.sourceParams = new MemorySegment[sourceMemhs.size()];
        for (int i = 0; i < sourceParams.length; i++) {
            sourceParams[i] = memhParam(arena, sourceMemhs.get(i));
        }
        this.plainParam = arena.allocate(REQUEST_PARAM);
        this.pollfd = Ucp.allocatePollfd(arena);
        this.eventFd = ucp.eventFd(worker);
    }

    private static MemorySegment memhParam(Arena arena, MemorySegment memh)
    {
        MemorySegment param = arena.allocate(REQUEST_PARAM);
        param.set(JAVA_INT, REQUEST_OP_ATTR_MASK, UCP_OP_ATTR_FIELD_MEMH);
        param.set(ADDRESS, REQUEST_MEMH, memh);
        return param;
    }

    /**
     * Connects to the receiver of {@code remote}; undoes what it did if a step fails.
     *
     * @param stagingBytes the staging buffer to register, or 0 for none (direct mode)
     * @param sourceMemhs the registrations of the source regions direct puts read, in region order; empty in staging mode
     */
    static UcxLink connect(Ucp ucp, MemorySegment context, Descriptor remote, long stagingBytes, List<MemorySegment> sourceMemhs)
    {
        Arena arena = Arena.ofShared();
        MemorySegment worker = null;
        MemorySegment endpoint = null;
        List<MemorySegment> rkeys = new ArrayList<>();
        MemorySegment stagingMemh = null;
        try {
            MemorySegment staging = stagingBytes == 0 ? null : arena.allocate(stagingBytes, 4096);
            worker = ucp.createWorker(context);
            endpoint = ucp.createEndpoint(worker, remote.workerAddress());
            long[] bases = new long[remote.regions().size()];
            for (int i = 0; i < bases.length; i++) {
                rkeys.add(ucp.unpackRkey(endpoint, remote.regions().get(i).rkey()));
                bases[i] = remote.regions().get(i).base();
            }
            stagingMemh = staging == null ? null : ucp.memMap(context, staging);
            return new UcxLink(ucp, context, arena, worker, endpoint, List.copyOf(rkeys), bases, staging, stagingMemh, sourceMemhs);
        }
        catch (RuntimeException e) {
            if (stagingMemh != null) {
                ucp.memUnmap(context, stagingMemh);
            }
            rkeys.forEach(ucp::destroyRkey);
            if (endpoint != null) {
                // Nothing was sent on it: a bounded close without a caller-visible wait.
                finishQuietly(ucp, worker, ucp.closeEndpoint(endpoint, arena.allocate(REQUEST_PARAM)), 1_000);
            }
            if (worker != null) {
                ucp.destroyWorker(worker);
            }
            arena.close();
            throw e;
        }
    }

    /** The staging buffer; null in direct mode. */
    MemorySegment staging()
    {
        return staging;
    }

    /**
     * Starts a put of {@code bytes} at {@code stagingOffset} to {@code remoteOffset} of the receiver's region
     * {@code region}; returns false (and posts nothing more) once a put failed.
     */
    boolean put(long stagingOffset, long bytes, int region, long remoteOffset)
    {
        return post(staging.address() + stagingOffset, bytes, region, remoteOffset, putParam);
    }

    /**
     * Starts a put of {@code bytes} at {@code sourceOffset} of the registered source region {@code region} (direct
     * mode) to the same region of the receiver at {@code remoteOffset}; returns false once a put failed.
     */
    boolean putFromSource(MemorySegment source, long sourceOffset, long bytes, int region, long remoteOffset)
    {
        return putFromSource(source, sourceOffset, bytes, region, region, remoteOffset);
    }

    /** The same into receiver region {@code remoteRegion}, which a head slice between layouts numbers apart from the source's. */
    boolean putFromSource(MemorySegment source, long sourceOffset, long bytes, int region, int remoteRegion, long remoteOffset)
    {
        return post(source.address() + sourceOffset, bytes, remoteRegion, remoteOffset, sourceParams[region]);
    }

    private boolean post(long from, long bytes, int region, long remoteOffset, MemorySegment param)
    {
        if (failure != null) {
            return false;
        }
        long status = ucp.put(endpoint, MemorySegment.ofAddress(from), bytes, remoteBases[region] + remoteOffset, rkeys.get(region), param);
        if (Ucp.isError(status)) {
            failure = "ucp_put_nbx to region " + region + " failed: " + ucp.statusString(Ucp.errorStatus(status));
            return false;
        }
        if (status != 0) {
            if (requestCount == requests.length) {
                requests = Arrays.copyOf(requests, requestCount * 2);
            }
            requests[requestCount++] = status;
        }
        return true;
    }

    /**
     * Waits (progressing, bounded by {@code timeoutNanos}) until every put posted so far completed locally, so the
     * memory it read may be written again (not that it landed: only a flush proves that), and frees their requests.
     * LANDED here means "locally complete"; UNSETTLED keeps the unfinished requests for the flush.
     */
    Settlement awaitLocal(long timeoutNanos)
    {
        long deadline = System.nanoTime() + timeoutNanos;
        int kept = 0;
        for (int i = 0; i < requestCount; i++) {
            int status = await(requests[i], deadline);
            if (status == UCS_INPROGRESS) {
                requests[kept++] = requests[i];
                continue;
            }
            if (status != UCS_OK) {
                recordFailure("a put failed: " + ucp.statusString(status));
            }
            ucp.freeRequest(requests[i]);
        }
        requestCount = kept;
        if (kept > 0) {
            return Settlement.UNSETTLED;
        }
        return failure == null ? Settlement.LANDED : Settlement.FAILED;
    }

    /**
     * Flushes the endpoint (a flush completes when every earlier put completed at the receiver), driving this
     * worker's progress until it did or {@code timeoutNanos} passed, and frees the puts' requests.
     */
    Settlement flush(long timeoutNanos)
    {
        long deadline = System.nanoTime() + timeoutNanos;
        long flush = ucp.flush(endpoint, plainParam);
        boolean settled = true;
        if (Ucp.isError(flush)) {
            recordFailure("ucp_ep_flush_nbx failed: " + ucp.statusString(Ucp.errorStatus(flush)));
        }
        else if (flush != 0) {
            int status = await(flush, deadline);
            if (status == UCS_INPROGRESS) {
                settled = false;
            }
            else if (status != UCS_OK) {
                recordFailure("flushing the puts failed: " + ucp.statusString(status));
            }
            ucp.freeRequest(flush);
        }
        // After the flush every put is complete; after a failed flush, wait for each (bounded by the same deadline).
        for (int i = 0; i < requestCount; i++) {
            int status = await(requests[i], deadline);
            if (status == UCS_INPROGRESS) {
                settled = false;
            }
            else if (status != UCS_OK) {
                recordFailure("a put failed: " + ucp.statusString(status));
            }
            // An unfinished request is released by UCX when it completes.
            ucp.freeRequest(requests[i]);
        }
        requestCount = 0;
        if (!settled) {
            return Settlement.UNSETTLED;
        }
        return failure == null ? Settlement.LANDED : Settlement.FAILED;
    }

    /** Why the last batch failed, if it did. */
    String failure()
    {
        return failure;
    }

    /**
     * Releases everything, in the order UCX needs: remote keys, the endpoint (closed with a flush, bounded by
     * {@code timeoutMillis}), the worker, then the staging registration and memory.
     */
    void release(long timeoutMillis)
    {
        rkeys.forEach(ucp::destroyRkey);
        long close = ucp.closeEndpoint(endpoint, plainParam);
        if (Ucp.isRequest(close)) {
            if (await(close, System.nanoTime() + timeoutMillis * 1_000_000) == UCS_INPROGRESS) {
                log.log(WARNING, "nixl: closing an endpoint did not finish within " + timeoutMillis + " ms; the receiver may be gone");
            }
            // An unfinished close is cancelled with the worker below.
            ucp.freeRequest(close);
        }
        ucp.destroyWorker(worker);
        if (stagingMemh != null) {
            ucp.memUnmap(context, stagingMemh);
        }
        arena.close();
    }

    private void recordFailure(String reason)
    {
        if (failure == null) {
            failure = reason;
        }
    }

    /** Progresses until the request finished or the deadline passed; returns its status (UCS_INPROGRESS when not finished). */
    private int await(long request, long deadline)
    {
        int idle = 0;
        while (true) {
            int status = ucp.requestStatus(request);
            if (status != UCS_INPROGRESS) {
                return status;
            }
            if (ucp.progress(worker) != 0) {
                idle = 0;
                continue;
            }
            long left = deadline - System.nanoTime();
            if (left <= 0) {
                return UCS_INPROGRESS;
            }
            if (++idle < SPINS) {
                // Yield rather than spin: with more busy threads than cores, a spinning poller would hold the core its peer needs.
                Thread.yield();
                continue;
            }
            // Nothing to do for a while (a slow receiver): sleep on the worker's event fd instead of spinning a core.
            if (ucp.arm(worker) == UCS_ERR_BUSY) {
                continue;
            }
            ucp.awaitReadable(pollfd, eventFd, (int) Math.max(1, Math.min(MAX_SLEEP_MILLIS, left / 1_000_000)));
            idle = 0;
        }
    }

    /** Waits (progressing, bounded) for a request and frees it; for the clean-up of a failed connect. */
    private static boolean finishQuietly(Ucp ucp, MemorySegment worker, long request, long timeoutMillis)
    {
        if (!Ucp.isRequest(request)) {
            return true;
        }
        long deadline = System.nanoTime() + timeoutMillis * 1_000_000;
        boolean finished;
        while (!(finished = ucp.requestStatus(request) != UCS_INPROGRESS) && System.nanoTime() < deadline) {
            ucp.progress(worker);
        }
        ucp.freeRequest(request);
        return finished;
    }
}
