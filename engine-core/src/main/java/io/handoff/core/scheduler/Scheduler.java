package io.handoff.core.scheduler;

import io.handoff.core.fault.FaultInjector;
import io.handoff.core.fault.FaultPoint;
import io.handoff.core.kv.KvPool;
import io.handoff.core.kv.PagePool;
import io.handoff.core.kv.ReleaseProof;
import io.handoff.core.kv.ReqToTokenTable;
import io.handoff.core.model.ByteTokenizer;
import io.handoff.core.model.Transformer;
import io.handoff.core.prefix.PrefixCache;
import io.handoff.core.prefix.PrefixInsert;
import io.handoff.core.prefix.PrefixMatch;
import io.handoff.spi.attention.AttentionBackend;
import org.apache.logging.log4j.LogManager;
import org.apache.logging.log4j.Logger;

import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Deque;
import java.util.Iterator;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentLinkedDeque;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicInteger;

import static java.util.Objects.requireNonNull;

/**
 * Continuous batching with chunked prefill over one model, one KV pool and one prefix cache.
 *
 * <p>One scheduler thread owns every request's state, the page pool, {@code req_to_token} and the prefix
 * cache; forward steps run on the {@link ComputeStream}. In overlap mode step {@code k+1} is scheduled
 * while step {@code k} still runs; a decode whose input token step {@code k} is still sampling reads it on
 * the compute thread, which runs steps in order.
 *
 * <p>Admission reserves every page a request can need (prompt plus {@code max_new_tokens}), less what
 * the prefix cache already holds, so running requests never run out of pages and nothing is ever
 * preempted. A finished or aborted request's pages return only after the last step that touches them
 * has completed (however long that takes: never on a timer), and its result is delivered after that,
 * and after {@link #stats()} shows them back.
 */
public final class Scheduler
        implements AutoCloseable
{
    private static final Logger log = LogManager.getLogger(Scheduler.class);
    // how long a step may run before the scheduler logs that it is still waiting for it
    private static final Duration SLOW_STEP = Duration.ofMinutes(1);
    private static final int[] NO_PAGES = new int[0];

    private sealed interface Command
            permits Submit, Abort, Audit, Shutdown, KvArrived, KvFailed, Wake, ProofArrived {}

    private record Submit(ScheduledRequest request) implements Command {}

    private record Abort(String rid) implements Command {}

    private record Audit(CompletableFuture<Void> done) implements Command {}

    private record Shutdown() implements Command {}

    private record KvArrived(String rid, int firstToken) implements Command {}

    private record KvFailed(String rid, String reason) implements Command {}

    /** Something a finished request's release waits for completed. */
    private record Wake() implements Command {}

    private record ProofArrived(int[] pages, ReleaseProof proof, Throwable failure) implements Command {}

    private record InFlight(StepPlan plan, Fence fence) {}

    private final SchedulerConfig config;
    private final Transformer model;
    private final KvPool kv;
    private final PagePool pagePool;
    private final ReqToTokenTable reqToToken;
    private final PrefixCache prefixCache;
    private final AttentionBackend attention;
    private final FaultInjector faults;
    private final KvHandoff handoff;
    private final ComputeStream stream;
    private final StepExecutor executor;
    private final boolean probe;
    private final Thread thread;
    private final LinkedBlockingQueue<Command> inbox = new LinkedBlockingQueue<>();
    // guards accepting and the enqueueing of submits, so no submit lands in the inbox after the shutdown command
    private final Object submitLock = new Object();
    private final AtomicInteger queued = new AtomicInteger();
    private boolean accepting = true;
    private volatile SchedulerStats stats;

    // Scheduler-thread state; inFlight is also read (never written) by inFlightFence.
    private final Deque<ScheduledRequest> waiting = new ArrayDeque<>();
    private final List<ScheduledRequest> running = new ArrayList<>();
    private final List<ScheduledRequest> releasing = new ArrayList<>();
    private final List<ScheduledRequest> delivering = new ArrayList<>();
    private final Deque<InFlight> inFlight = new ConcurrentLinkedDeque<>();
    private boolean shuttingDown;
    private long nextStep;
    private long completedStep = -1;
    private long promptTokens;
    private long cachedPromptTokens;
    private long generatedTokens;
    private long finishedRequests;

    public Scheduler(SchedulerConfig config, Transformer model, KvPool kv, PrefixCache prefixCache, AttentionBackend attention,
            FaultInjector faults)
    {
        this(config, model, kv, prefixCache, attention, faults, KvHandoff.NONE);
    }

    public Scheduler(SchedulerConfig config, Transformer model, KvPool kv, PrefixCache prefixCache, AttentionBackend attention,
            FaultInjector faults, KvHandoff handoff)
    {
        this.config = requireNonNull(config, "config is null");
        this.model = requireNonNull(model, "model is null");
        this.kv = requireNonNull(kv, "kv is null");
        this.pagePool = kv.pagePool();
        this.prefixCache = requireNonNull(prefixCache, "prefixCache is null");
        this.attention = requireNonNull(attention, "attention is null");
        this.faults = requireNonNull(faults, "faults is null");
        this.handoff = requireNonNull(handoff, "handoff is null");
        int pageSize = kv.geometry().pageSize();
        if (config.chunkedPrefillSize() < pageSize) {
            throw new IllegalArgumentException("chunked-prefill-size " + config.chunkedPrefillSize() + " is smaller than the page size "
                    + pageSize + ": non-last chunks are page-aligned, so a chunk must hold at least one page");
        }
        this.reqToToken = new ReqToTokenTable(config.maxRunningRequests(), model.config().maxContext(), pageSize);
        this.stream = new ComputeStream("handoff-compute");
        this.probe = config.decodeMetadataProbe() != DecodeMetadataProbe.Mode.OFF;
        this.executor = new StepExecutor(model, kv, attention, faults,
                new DecodeMetadataProbe(config.decodeMetadataProbe(), kv.view(), attention::numKvSplits));
        this.stats = snapshot();
        this.thread = Thread.ofPlatform().name("handoff-scheduler").daemon().unstarted(this::loop);
        thread.start();
    }

    /**
     * Queues a request. Throws {@link RequestRejectedException} at once when it can never run (too long
     * for the context or the pool), when the waiting queue is full, or when the scheduler is shutting down.
     */
    public RequestHandle submit(GenerateRequest request, TokenListener listener)
    {
        requireNonNull(request, "request is null");
        requireNonNull(listener, "listener is null");
        validate(request);
        ScheduledRequest scheduled = new ScheduledRequest(request, listener, System.nanoTime());
        synchronized (submitLock) {
            if (!accepting) {
                throw new RequestRejectedException(RequestRejectedException.Kind.SHUTTING_DOWN, "the engine is shutting down");
            }
            if (queued.incrementAndGet() > config.maxQueuedRequests()) {
                queued.decrementAndGet();
                throw new RequestRejectedException(RequestRejectedException.Kind.OVERLOADED,
                        "the waiting queue is full (" + config.maxQueuedRequests() + " requests): retry later");
            }
            inbox.add(new Submit(scheduled));
        }
        return new RequestHandle(request.rid(), scheduled.result);
    }

    private void validate(GenerateRequest request)
    {
        int vocab = model.config().vocabSize();
        for (int id : request.promptIds()) {
            if (id < 0 || id >= vocab) {
                throw new RequestRejectedException(RequestRejectedException.Kind.INVALID,
                        "token id " + id + " is outside the vocabulary [0, " + vocab + ")");
            }
        }
        int context = model.config().maxContext();
        long needed = (long) request.promptIds().length + request.maxNewTokens();
        if (needed > context) {
            throw new RequestRejectedException(RequestRejectedException.Kind.INVALID, "prompt (" + request.promptIds().length
                    + " tokens) + max_new_tokens (" + request.maxNewTokens() + ") = " + needed + " exceeds the model's context of " + context);
        }
        int pages = pagesFor(request.promptIds().length + request.maxNewTokens() - 1);
        if (pages > pagePool.totalPages()) {
            throw new RequestRejectedException(RequestRejectedException.Kind.INVALID, "the request needs " + pages
                    + " KV pages but the pool has " + pagePool.totalPages() + ": shorten it or enlarge handoff.kv.pool-pages");
        }
    }

    /** Aborts a request in any phase; unknown or finished ids are ignored. Its result reports {@link FinishReason#ABORT}. */
    public void abort(String rid)
    {
        inbox.add(new Abort(requireNonNull(rid, "rid is null")));
    }

    /** Decode: the prompt KV of {@code rid} arrived and was verified; {@code firstToken} was sampled by the prefill. */
    public void promptKvArrived(String rid, int firstToken)
    {
        inbox.add(new KvArrived(requireNonNull(rid, "rid is null"), firstToken));
    }

    /** Decode: the prompt KV of {@code rid} will not arrive; the request fails with {@code reason}. */
    public void promptKvFailed(String rid, String reason)
    {
        inbox.add(new KvFailed(requireNonNull(rid, "rid is null"), requireNonNull(reason, "reason is null")));
    }

    public SchedulerStats stats()
    {
        return stats;
    }

    public int pageSize()
    {
        return kv.geometry().pageSize();
    }

    // ---------------------------------------------------------------------------------------------
    // The loop.

    private void loop()
    {
        while (true) {
            try {
                boolean idle = waiting.isEmpty() && running.isEmpty() && inFlight.isEmpty() && releasing.isEmpty();
                // once shutting down, never block on an empty inbox: nothing else will arrive to wake us
                Command command = idle && !shuttingDown ? inbox.take() : inbox.poll();
                while (command != null) {
                    handle(command);
                    command = inbox.poll();
                }
                if (shuttingDown && running.isEmpty() && waiting.isEmpty() && inFlight.isEmpty() && releasing.isEmpty()) {
                    publish();
                    break;
                }
                StepPlan plan = null;
                if (!running.isEmpty() || !waiting.isEmpty()) {
                    faults.hit(FaultPoint.SCHEDULER_BEFORE_STEP, nextStep, 0);
                    admit();
                    plan = schedule();
                }
                if (plan != null) {
                    StepPlan submitted = plan;
                    // listed before it can start, so inFlightFence never misses a running step
                    inFlight.add(new InFlight(plan, plan.fence()));
                    stream.submit(plan.fence(), () -> executor.execute(submitted));
                }
                int keep = plan != null && config.overlap() ? 1 : 0;
                while (inFlight.size() > keep) {
                    // the step stays listed as in flight until its fence has completed
                    complete(inFlight.peek());
                    inFlight.poll();
                }
                releaseFinished();
                publish();
                if (plan == null && inFlight.isEmpty() && !(waiting.isEmpty() && running.isEmpty() && releasing.isEmpty())) {
                    // Nothing can run until something arrives (KV from a peer, pages back from a transfer or a
                    // quarantine); every such event is a command, so wait for one instead of spinning.
                    Command next = inbox.poll(100, TimeUnit.MILLISECONDS);
                    if (next != null) {
                        handle(next);
                    }
                }
            }
            catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return;
            }
            catch (RuntimeException | Error e) {
                log.error("scheduler loop failed; failing every running request", e);
                failAll("scheduler failure: " + e);
                publish();
            }
        }
        // after the shutdown command only audits can still arrive (submits are refused under submitLock)
        for (Command command = inbox.poll(); command != null; command = inbox.poll()) {
            handle(command);
        }
    }

    private void handle(Command command)
    {
        switch (command) {
            case Submit submit -> waiting.add(submit.request());
            case Abort abort -> abortRequest(abort.rid(), null);
            case KvArrived arrived -> kvArrived(arrived.rid(), arrived.firstToken());
            case KvFailed failed -> findRunning(failed.rid()).ifPresent(r -> finish(r, FinishReason.ERROR, failed.reason()));
            case Wake ignored -> { }
            case ProofArrived proof -> proofArrived(proof);
            case Audit audit -> {
                try {
                    audit();
                    audit.done().complete(null);
                }
                catch (RuntimeException e) {
                    audit.done().completeExceptionally(e);
                }
            }
            case Shutdown ignored -> {
                shuttingDown = true;
                for (ScheduledRequest request : List.copyOf(waiting)) {
                    abortRequest(request.request.rid(), "the engine shut down");
                }
                for (ScheduledRequest request : List.copyOf(running)) {
                    finish(request, FinishReason.ABORT, "the engine shut down");
                }
            }
        }
    }

    /** Publishes the stats, then delivers the results of requests released since: a result never runs ahead of the stats. */
    private void publish()
    {
        stats = snapshot();
        long now = System.nanoTime();
        for (ScheduledRequest request : delivering) {
            try {
                request.result.complete(request.toResult(now));
            }
            catch (RuntimeException e) {
                request.result.completeExceptionally(e);
            }
        }
        delivering.clear();
    }

    private void abortRequest(String rid, String error)
    {
        for (Iterator<ScheduledRequest> it = waiting.iterator(); it.hasNext(); ) {
            ScheduledRequest request = it.next();
            if (request.request.rid().equals(rid)) {
                it.remove();
                queued.decrementAndGet();
                // never admitted: it holds no row and no page
                request.finishReason = FinishReason.ABORT;
                request.error = error;
                request.phase = ScheduledRequest.Phase.DONE;
                finishedRequests++;
                delivering.add(request);
                return;
            }
        }
        for (ScheduledRequest request : List.copyOf(running)) {
            if (request.request.rid().equals(rid)) {
                finish(request, FinishReason.ABORT, error);
                return;
            }
        }
    }

    // ---------------------------------------------------------------------------------------------
    // Admission and scheduling (scheduler thread).

    private void admit()
    {
        // A free req_to_token row, not running.size(), is the bound: finished requests keep their row until released.
        while (!waiting.isEmpty() && reqToToken.freeRows() > 0) {
            ScheduledRequest request = waiting.peek();
            int[] prompt = request.request.promptIds();
            boolean receives = handoff.receivesPrompt(view(request));
            // Leave at least one prompt token to compute: its logits give the first output token. A decode
            // that receives its prompt's KV takes it all from the peer.
            PrefixMatch match = receives ? prefixCache.match(prompt, 0) : prefixCache.match(prompt, prompt.length - 1);
            pagePool.retain(match.pages());
            prefixCache.lock(match.node());
            int needed = pagesFor(request.kvPositions()) - match.pageCount();
            if (pagePool.freePages() < needed) {
                prefixCache.evictUntilFree(needed);
            }
            Optional<int[]> fresh = pagePool.freePages() >= needed ? pagePool.allocate(needed) : Optional.empty();
            if (fresh.isEmpty()) {
                prefixCache.unlock(match.node());
                pagePool.release(match.pages());
                return; // first come, first served: later requests wait behind this one
            }
            waiting.poll();
            queued.decrementAndGet();
            int[] pages = Arrays.copyOf(match.pages(), match.pageCount() + needed);
            System.arraycopy(fresh.get(), 0, pages, match.pageCount(), needed);
            request.row = reqToToken.allocateRow().orElseThrow(() -> new IllegalStateException("no free req_to_token row"));
            reqToToken.mapPages(request.row, 0, request.kvPositions(), pages);
            request.pages = pages;
            request.lockedPrefix = match.node();
            request.cachedTokens = match.length();
            request.scheduledPromptTokens = match.length();
            request.computedPromptTokens = match.length();
            request.admittedNanos = System.nanoTime();
            request.phase = ScheduledRequest.Phase.RUNNING;
            promptTokens += prompt.length;
            cachedPromptTokens += match.length();
            if (receives) {
                // Neither prefilled nor decoded here until the peer's KV lands: scheduledOutputs stays 0.
                pagePool.markReceiving(Arrays.copyOf(pages, view(request).promptPages()));
                request.receivingPrompt = true;
                request.scheduledPromptTokens = prompt.length;
            }
            running.add(request);
            handoff.admitted(view(request));
        }
    }

    private StepPlan schedule()
    {
        long step = nextStep;
        Fence fence = new Fence(step);
        List<StepPlan.Decode> decodes = new ArrayList<>();
        for (ScheduledRequest request : running) {
            if (request.prefillScheduled() && request.scheduledOutputs >= 1 && request.scheduledOutputs < request.request.maxNewTokens()) {
                int index = request.scheduledOutputs;
                int position = request.promptLength() + index - 1;
                int[] pages = probe ? Arrays.copyOf(request.pages, Math.ceilDiv(position + 1, kv.geometry().pageSize())) : NO_PAGES;
                decodes.add(new StepPlan.Decode(request, index, position, reqToToken.read(request.row, position + 1), pages));
                request.scheduledOutputs++;
                request.lastStep = step;
            }
        }
        List<StepPlan.Chunk> chunks = new ArrayList<>();
        int budget = config.chunkedPrefillSize();
        int pageSize = pageSize();
        for (ScheduledRequest request : running) {
            if (request.prefillScheduled() || budget == 0) {
                continue;
            }
            int from = request.scheduledPromptTokens;
            int remaining = request.promptLength() - from;
            int length = Math.min(remaining, budget);
            if (length < remaining) {
                // Non-last chunks end on a page boundary, so every chunk's pages are whole (what transfers send).
                length -= (from + length) % pageSize;
            }
            if (length <= 0) {
                break;
            }
            int to = from + length;
            boolean last = to == request.promptLength();
            chunks.add(new StepPlan.Chunk(request, from, to, reqToToken.read(request.row, to), last));
            handoff.chunkScheduled(view(request), from, to, fence);
            request.scheduledPromptTokens = to;
            if (last) {
                request.scheduledOutputs = 1;
            }
            request.lastStep = step;
            budget -= length;
        }
        if (chunks.isEmpty() && decodes.isEmpty()) {
            return null;
        }
        nextStep++;
        return new StepPlan(step, fence, chunks, decodes);
    }

    // ---------------------------------------------------------------------------------------------
    // Completion (scheduler thread).

    private void complete(InFlight step)
    {
        StepPlan plan = step.plan();
        Throwable failure = awaitFence(step.fence());
        completedStep = plan.step();
        if (failure != null) {
            log.error("step {} failed; failing its requests", plan.step(), failure);
            String error = "forward step " + plan.step() + " failed: " + (failure.getMessage() != null ? failure.getMessage() : failure.toString());
            for (StepPlan.Chunk chunk : plan.chunks()) {
                finish(chunk.request(), FinishReason.ERROR, error);
            }
            for (StepPlan.Decode decode : plan.decodes()) {
                finish(decode.request(), FinishReason.ERROR, error);
            }
            return;
        }
        for (StepPlan.Chunk chunk : plan.chunks()) {
            ScheduledRequest request = chunk.request();
            if (request.phase != ScheduledRequest.Phase.RUNNING) {
                continue;
            }
            request.computedPromptTokens = chunk.to();
            handoff.chunkComputed(view(request), chunk.from(), chunk.to(), plan.fence(), chunk.last(),
                    chunk.last() ? request.outputs[0] : -1);
            if (chunk.last()) {
                produced(request, 0);
            }
        }
        for (StepPlan.Decode decode : plan.decodes()) {
            if (decode.request().phase == ScheduledRequest.Phase.RUNNING) {
                produced(decode.request(), decode.index());
            }
        }
    }

    /**
     * Waits for a step however long it takes, since its pages may not be reused while it may still write
     * them; returns the step's failure, or null when it succeeded.
     */
    private static Throwable awaitFence(Fence fence)
    {
        while (true) {
            try {
                fence.await(SLOW_STEP);
                return null;
            }
            catch (TimeoutException e) {
                log.warn("step {} has run for over {}; still waiting for it before its pages can be reused", fence.step(), SLOW_STEP);
            }
            catch (RuntimeException e) {
                return e.getCause() != null ? e.getCause() : e;
            }
        }
    }

    private void produced(ScheduledRequest request, int index)
    {
        int token = request.outputs[index];
        request.producedOutputs = index + 1;
        generatedTokens++;
        if (index == 0) {
            request.firstTokenNanos = System.nanoTime();
        }
        try {
            request.listener.onToken(index, token);
        }
        catch (RuntimeException e) {
            log.warn("token listener of request {} failed; aborting it", request.request.rid(), e);
            finish(request, FinishReason.ABORT, "its token listener failed: " + e);
            return;
        }
        boolean stop = request.request.stopTokenIds().contains(token) || (token == ByteTokenizer.EOS && !request.request.ignoreEos());
        if (stop) {
            finish(request, FinishReason.STOP, null);
        }
        else if (request.producedOutputs == request.request.maxNewTokens()) {
            finish(request, FinishReason.LENGTH, null);
        }
    }

    private void finish(ScheduledRequest request, FinishReason reason, String error)
    {
        if (request.phase != ScheduledRequest.Phase.RUNNING) {
            return;
        }
        request.finishReason = reason;
        request.error = error;
        request.phase = ScheduledRequest.Phase.RELEASING;
        running.remove(request);
        releasing.add(request);
    }

    /** Returns the pages of finished requests no in-flight step touches any more, then delivers their results. */
    private void releaseFinished()
    {
        for (Iterator<ScheduledRequest> it = releasing.iterator(); it.hasNext(); ) {
            ScheduledRequest request = it.next();
            if (request.lastStep > completedStep) {
                continue;
            }
            if (request.release == null) {
                request.release = handoff.finished(view(request), request.finishReason, request.error);
            }
            if (request.release instanceof KvHandoff.AfterTransfers(CompletableFuture<Void> done) && !done.isDone()) {
                if (!request.releaseWatched) {
                    request.releaseWatched = true;
                    done.whenComplete((ignored, error) -> inbox.add(new Wake()));
                }
                continue;
            }
            it.remove();
            release(request);
            request.phase = ScheduledRequest.Phase.DONE;
            finishedRequests++;
            delivering.add(request);
        }
    }

    private void release(ScheduledRequest request)
    {
        if (request.finishReason != FinishReason.ERROR) {
            // What this request computed becomes a prefix other requests can reuse.
            int[] tokens = request.tokensWithKv();
            PrefixInsert inserted = prefixCache.insert(tokens, tokens.length, request.pages);
            if (inserted.duplicates().length > 0) {
                log.trace("request {}: {} pages duplicated cached ones", request.request.rid(), inserted.duplicates().length);
            }
        }
        prefixCache.unlock(request.lockedPrefix);
        int[] pages = request.pages;
        if (request.receivingPrompt) {
            int[] promptPages = Arrays.copyOf(pages, view(request).promptPages());
            pages = Arrays.copyOfRange(pages, promptPages.length, pages.length);
            if (request.release instanceof KvHandoff.Quarantine(CompletableFuture<ReleaseProof> proof)) {
                // A peer may still write these (I2): nobody gets them until the proof arrives, however long that takes.
                pagePool.quarantine(promptPages);
                proof.whenComplete((value, error) -> inbox.add(new ProofArrived(promptPages, value, error)));
            }
            else {
                pagePool.commitReceived(promptPages);
                pagePool.release(promptPages);
            }
        }
        pagePool.release(pages);
        reqToToken.freeRow(request.row);
        request.pages = new int[0];
    }

    private void proofArrived(ProofArrived arrived)
    {
        if (arrived.failure() != null || arrived.proof() == null) {
            log.error("no release proof for quarantined pages {}: they stay quarantined (a write may still land in them)",
                    Arrays.toString(arrived.pages()), arrived.failure());
            return;
        }
        pagePool.releaseQuarantined(arrived.pages(), arrived.proof());
    }

    private void kvArrived(String rid, int firstToken)
    {
        Optional<ScheduledRequest> found = findRunning(rid);
        if (found.isEmpty() || !found.get().receivingPrompt) {
            log.debug("prompt KV for {} arrived, but it is no longer waiting for it; ignored", rid);
            return;
        }
        ScheduledRequest request = found.get();
        pagePool.commitReceived(Arrays.copyOf(request.pages, view(request).promptPages()));
        request.receivingPrompt = false;
        request.computedPromptTokens = request.promptLength();
        request.outputs[0] = firstToken;
        request.scheduledOutputs = 1;
        produced(request, 0);
    }

    private Optional<ScheduledRequest> findRunning(String rid)
    {
        return running.stream().filter(r -> r.request.rid().equals(rid)).findFirst();
    }

    private HandoffRequest view(ScheduledRequest request)
    {
        return new HandoffRequest(request.request.rid(), request.request.ticket(), request.request.promptIds(),
                request.pages.clone(), pageSize());
    }

    private void failAll(String reason)
    {
        for (ScheduledRequest request : List.copyOf(running)) {
            finish(request, FinishReason.ERROR, reason);
        }
        while (!inFlight.isEmpty()) {
            InFlight step = inFlight.peek();
            awaitFence(step.fence());
            completedStep = step.plan().step();
            inFlight.poll();
        }
        releaseFinished();
    }

    private int pagesFor(int positions)
    {
        return Math.ceilDiv(Math.max(positions, 1), pageSize());
    }

    private SchedulerStats snapshot()
    {
        return new SchedulerStats(running.size(), waiting.size() + Math.max(0, queued.get() - waiting.size()),
                pagePool.accounting(), prefixCache.cachedPages(), nextStep, promptTokens, cachedPromptTokens, generatedTokens, finishedRequests);
    }

    /**
     * Checks, on the scheduler thread, that every page is accounted for: each page's refcount is the number
     * of admitted requests holding it plus one if the prefix cache holds it, pages nobody holds are free,
     * and every admitted request holds one req_to_token row. Throws {@link IllegalStateException} naming the
     * first violation. Blocks until the scheduler thread gets to it: do not call it while that thread is
     * parked at a fault point. For tests and probes.
     */
    public void checkInvariants()
    {
        if (!thread.isAlive()) {
            audit();
            return;
        }
        CompletableFuture<Void> done = new CompletableFuture<>();
        inbox.add(new Audit(done));
        try {
            done.get(1, TimeUnit.MINUTES);
        }
        catch (ExecutionException e) {
            throw e.getCause() instanceof IllegalStateException violation ? new IllegalStateException(violation.getMessage(), violation)
                    : new IllegalStateException("invariant check failed", e.getCause());
        }
        catch (TimeoutException e) {
            throw new IllegalStateException("the scheduler thread did not check its invariants within a minute; is it parked at a fault point?");
        }
        catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted waiting for the invariant check", e);
        }
    }

    private void audit()
    {
        SchedulerInvariants.check(pagePool, reqToToken, prefixCache, waiting, List.of(running, releasing));
    }

    /** The fence of step {@code step} while the scheduler still waits for it; empty once completed. For tests and probes. */
    Optional<Fence> inFlightFence(long step)
    {
        for (InFlight candidate : inFlight) {
            if (candidate.plan().step() == step) {
                return Optional.of(candidate.fence());
            }
        }
        return Optional.empty();
    }

    /**
     * Stops admitting, aborts waiting and running requests, waits for in-flight steps, and returns every
     * page. Results of aborted requests report {@link FinishReason#ABORT}.
     */
    @Override
    public void close()
    {
        synchronized (submitLock) {
            accepting = false;
            inbox.add(new Shutdown());
        }
        try {
            thread.join(Duration.ofMinutes(1));
        }
        catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        stream.close();
    }
}
