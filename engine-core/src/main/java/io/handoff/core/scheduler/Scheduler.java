package io.handoff.core.scheduler;

import io.handoff.core.fault.FaultInjector;
import io.handoff.core.kv.KvGeometry;
import io.handoff.core.kv.KvPool;
import io.handoff.core.kv.ReqToTokenTable;
import io.handoff.core.model.ByteTokenizer;
import io.handoff.core.model.ModelRunner;
import io.handoff.core.prefix.PrefixCache;
import io.handoff.spi.attention.AttentionBackend;
import io.handoff.trace.FailureCause;
import io.handoff.trace.TimelineEvent;
import io.handoff.trace.Timelines;

import java.time.Duration;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicInteger;

import static java.util.Objects.requireNonNull;

/**
 * Continuous batching with chunked prefill over one model, one KV pool and one prefix cache.
 *
 * <p>One scheduler thread ({@link StepLoop}) owns every request's state, the page pool, {@code req_to_token}
 * and the prefix cache; forward steps run on the {@link ComputeStream}. In overlap mode step {@code k+1} is
 * scheduled while step {@code k} still runs; a decode whose input token step {@code k} is still sampling
 * reads it on the compute thread, which runs steps in order.
 *
 * <p>Admission ({@link PageReservations}) reserves every page a request can need (prompt plus
 * {@code max_new_tokens}), less what the prefix cache already holds, so running requests never run out of
 * pages and nothing is ever preempted. {@link BatchPlanner} chooses each step's decodes and prompt chunks.
 * A finished or aborted request's pages return only after the last step that touches them has completed
 * (however long that takes: never on a timer), and its result is delivered after that, and after
 * {@link #stats()} shows them back.
 *
 * <p>This class is the composition and the thread-safe face: every call from another thread becomes a
 * {@link SchedulerCommand} in the loop's inbox.
 */
public final class Scheduler
        implements AutoCloseable
{
    private final LinkedBlockingQueue<SchedulerCommand> inbox = new LinkedBlockingQueue<>();
    // guards accepting and the enqueueing of submits, so no submit lands in the inbox after the shutdown command
    private final Object submitLock = new Object();
    private final AtomicInteger queued = new AtomicInteger();
    private final SchedulerConfig config;
    private final KvPool kv;
    private final PageReservations reservations;
    private final ComputeStream stream;
    private final StepLoop loop;
    private final Thread thread;
    private final Timelines timelines;
    private final KvHandoff handoff;
    private final int vocabSize;
    private final Set<Integer> eosTokenIds;
    private boolean accepting = true;

    public Scheduler(SchedulerConfig config, ModelRunner model, KvPool kv, PrefixCache prefixCache, AttentionBackend attention,
            FaultInjector faults)
    {
        this(config, model, kv, prefixCache, attention, faults, KvHandoff.NONE);
    }

    /** A scheduler for a byte-tokenizer model, which stops on {@link ByteTokenizer#EOS}. */
    public Scheduler(SchedulerConfig config, ModelRunner model, KvPool kv, PrefixCache prefixCache, AttentionBackend attention,
            FaultInjector faults, KvHandoff handoff)
    {
        this(config, model, kv, prefixCache, attention, faults, handoff, Set.of(ByteTokenizer.EOS));
    }

    /** @param eosTokenIds the model's end-of-sequence ids: a request stops on one (and cannot sample one below its min_new_tokens) unless it ignores EOS */
    public Scheduler(SchedulerConfig config, ModelRunner model, KvPool kv, PrefixCache prefixCache, AttentionBackend attention,
            FaultInjector faults, KvHandoff handoff, Set<Integer> eosTokenIds)
    {
        this(config, model, kv, prefixCache, attention, faults, handoff, eosTokenIds, new Timelines(Timelines.DEFAULT_REQUESTS));
    }

    /** @param timelines where each request's transitions are kept, for {@code /debug/requests} */
    public Scheduler(SchedulerConfig config, ModelRunner model, KvPool kv, PrefixCache prefixCache, AttentionBackend attention,
            FaultInjector faults, KvHandoff handoff, Set<Integer> eosTokenIds, Timelines timelines)
    {
        this.timelines = requireNonNull(timelines, "timelines is null");
        this.config = requireNonNull(config, "config is null");
        requireNonNull(model, "model is null");
        this.kv = requireNonNull(kv, "kv is null");
        requireNonNull(prefixCache, "prefixCache is null");
        requireNonNull(attention, "attention is null");
        requireNonNull(faults, "faults is null");
        this.handoff = requireNonNull(handoff, "handoff is null");
        this.eosTokenIds = Set.copyOf(eosTokenIds);
        int pageSize = kv.geometry().pageSize();
        this.vocabSize = model.config().vocabSize();
        if (config.chunkedPrefillSize() < pageSize) {
            throw new IllegalArgumentException("chunked-prefill-size " + config.chunkedPrefillSize() + " is smaller than the page size "
                    + pageSize + ": non-last chunks are page-aligned, so a chunk must hold at least one page");
        }
        ReqToTokenTable reqToToken = new ReqToTokenTable(config.maxRunningRequests(), model.config().maxContext(), pageSize);
        this.stream = new ComputeStream("handoff-compute");
        boolean probe = config.decodeMetadataProbe() != DecodeMetadataProbe.Mode.OFF;
        StepExecutor executor = new StepExecutor(model, kv, attention, faults,
                new DecodeMetadataProbe(config.decodeMetadataProbe(), kv.view(), attention::numKvSplits));
        this.reservations = new PageReservations(model.config(), pageSize, kv.pagePool(), reqToToken, prefixCache, handoff, inbox::add);
        BatchPlanner planner = new BatchPlanner(config.chunkedPrefillSize(), pageSize, probe, reqToToken, handoff, vocabSize);
        this.loop = new StepLoop(new StepLoop.Parts(config.overlap(), faults, stream, executor, planner, reservations, handoff,
                pageSize, kv.pagePool(), reqToToken, prefixCache), inbox, queued);
        this.thread = Thread.ofPlatform().name("handoff-scheduler").daemon().unstarted(loop);
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
        reservations.checkAdmissible(request);
        handoff.checkTransferable(request);
        ScheduledRequest scheduled = new ScheduledRequest(request, listener, System.nanoTime(), vocabSize, eosTokenIds);
        synchronized (submitLock) {
            if (!accepting) {
                throw new RequestRejectedException(RequestRejectedException.Kind.SHUTTING_DOWN, "the engine is shutting down");
            }
            if (queued.incrementAndGet() > config.maxQueuedRequests()) {
                queued.decrementAndGet();
                throw new RequestRejectedException(RequestRejectedException.Kind.OVERLOADED,
                        "the waiting queue is full (" + config.maxQueuedRequests() + " requests): retry later");
            }
            scheduled.timeline = timelines.begin(request.rid(), TimelineEvent.QUEUED, "prompt_tokens=" + request.promptIds().length + " max_new_tokens=" + request.maxNewTokens());
            inbox.add(new SchedulerCommand.Submit(scheduled));
        }
        request.ticket().ifPresent(ticket -> handoff.queued(request.rid(), ticket));
        return new RequestHandle(request.rid(), scheduled.result);
    }

    /**
     * Fails every request the scheduler holds, waiting or running (a decode's waiting for its KV too), with {@code cause}:
     * for an engine that can run no step any more, whose requests would otherwise wait for KV or pages they can never use.
     * Requests submitted later fail at their first step.
     */
    public void failAll(FailureCause cause, String error)
    {
        inbox.add(new SchedulerCommand.FailAll(requireNonNull(cause, "cause is null"), requireNonNull(error, "error is null")));
    }

    /** Aborts a request in any phase; unknown or finished ids are ignored. Its result reports {@link FinishReason#ABORT}. */
    public void abort(String rid)
    {
        inbox.add(new SchedulerCommand.Abort(requireNonNull(rid, "rid is null"), FailureCause.CLIENT_ABORT, null));
    }

    /**
     * Aborts a request the engine gave up on (e.g. its transfer room failed) for {@code cause}; its result reports
     * {@link FinishReason#ABORT} with that cause and {@code reason}.
     */
    public void abort(String rid, FailureCause cause, String reason)
    {
        inbox.add(new SchedulerCommand.Abort(requireNonNull(rid, "rid is null"), requireNonNull(cause, "cause is null"),
                requireNonNull(reason, "reason is null")));
    }

    /** Decode: the prompt KV of {@code rid} arrived and was verified; {@code firstToken} was sampled by the prefill. */
    public void promptKvArrived(String rid, int firstToken)
    {
        promptKvArrived(rid, firstToken, Optional.empty());
    }

    /**
     * Decode: as {@link #promptKvArrived(String, int)}, with the log probabilities the prefill computed (the first token's
     * as the only output entry, and the prompt's), present iff the request asked for them and already checked against it.
     */
    public void promptKvArrived(String rid, int firstToken, Optional<Logprobs> prefillLogprobs)
    {
        inbox.add(new SchedulerCommand.KvArrived(requireNonNull(rid, "rid is null"), firstToken,
                requireNonNull(prefillLogprobs, "prefillLogprobs is null")));
    }

    /** Decode: the prompt KV of {@code rid} will not arrive; the request fails with {@code cause} and {@code reason}. */
    public void promptKvFailed(String rid, FailureCause cause, String reason)
    {
        inbox.add(new SchedulerCommand.KvFailed(requireNonNull(rid, "rid is null"), requireNonNull(cause, "cause is null"),
                requireNonNull(reason, "reason is null")));
    }

    /**
     * Flushes the prefix cache on the scheduler thread: every cached page goes back to the free pool, unless requests
     * are running (on a decode: receiving their prompt's KV too) or waiting, in which case nothing is dropped. The
     * future completes once the scheduler thread got to it, with the stats already showing the pages free; it fails
     * when the scheduler has stopped.
     */
    public CompletableFuture<CacheFlush> flushCache()
    {
        CompletableFuture<CacheFlush> done = new CompletableFuture<>();
        if (!thread.isAlive()) {
            done.completeExceptionally(new IllegalStateException("the scheduler has stopped"));
            return done;
        }
        inbox.add(new SchedulerCommand.FlushCache(done));
        return done;
    }

    /** How it batches. */
    public SchedulerConfig config()
    {
        return config;
    }

    public SchedulerStats stats()
    {
        return loop.stats();
    }

    /** The timelines of the last requests this scheduler ran (see {@link Timelines}). */
    public Timelines timelines()
    {
        return timelines;
    }

    public int pageSize()
    {
        return kv.geometry().pageSize();
    }

    /** The shape of this scheduler's KV pool: the rows a page holds, their dtype, and so the bytes a page moves. */
    public KvGeometry kvGeometry()
    {
        return kv.geometry();
    }

    /** The data-parallel attention ranks whose parts of the pool the pages are (1 without data parallelism). */
    public int dataParallel()
    {
        return kv.pagePool().partitions();
    }

    /**
     * Checks, on the scheduler thread, that every page is accounted for: each page's refcount is the number
     * of admitted requests holding it plus one if the prefix cache holds it, pages nobody holds are free,
     * and every admitted request holds one req_to_token row. Throws {@link IllegalStateException} naming the
     * first violation. Blocks until the scheduler thread gets to it: do not call it while that thread is
     * parked at a fault point. It is also a barrier for {@link #stats()}: once it returns, the stats show what every
     * command posted before it (a proof, an abort) did. For tests and probes.
     */
    public void checkInvariants()
    {
        if (!thread.isAlive()) {
            loop.audit();
            return;
        }
        CompletableFuture<Void> done = new CompletableFuture<>();
        inbox.add(new SchedulerCommand.Audit(done));
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

    /** The fence of step {@code step} while the scheduler still waits for it; empty once completed. For tests and probes. */
    Optional<Fence> inFlightFence(long step)
    {
        return loop.inFlightFence(step);
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
            inbox.add(new SchedulerCommand.Shutdown());
        }
        try {
            thread.join(config.shutdownWait());
        }
        catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        stream.close();
    }
}
