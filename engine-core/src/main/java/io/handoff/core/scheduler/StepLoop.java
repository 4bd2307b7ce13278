package io.handoff.core.scheduler;

import io.handoff.core.fault.FaultInjector;
import io.handoff.core.fault.FaultPoint;
import io.handoff.core.kv.PagePool;
import io.handoff.core.kv.ReqToTokenTable;
import io.handoff.core.model.parallel.RankLostException;
import io.handoff.core.prefix.PrefixCache;
import io.handoff.trace.FailureCause;
import io.handoff.trace.FinishReason;
import io.handoff.trace.TimelineEvent;
import org.apache.logging.log4j.LogManager;
import org.apache.logging.log4j.Logger;

import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.EnumMap;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.ConcurrentLinkedDeque;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicInteger;

import static java.util.Objects.requireNonNull;

/**
 * The scheduler thread: takes commands, admits, plans a step, hands it to the compute stream, and
 * completes steps in order. In overlap mode step {@code k+1} is planned and submitted while step
 * {@code k} still runs. It owns every request's state; a finished request's result is delivered only
 * after its pages are back and the stats that show it have been published.
 */
final class StepLoop
        implements Runnable
{
    private static final Logger log = LogManager.getLogger(StepLoop.class);
    // how long a step may run before the scheduler logs that it is still waiting for it
    private static final Duration SLOW_STEP = Duration.ofMinutes(1);

    /** Collaborators of the loop; all used on the scheduler thread only. */
    record Parts(boolean overlap, FaultInjector faults, ComputeStream stream, StepExecutor executor, BatchPlanner planner,
            PageReservations reservations, KvHandoff handoff, int pageSize, PagePool pagePool, ReqToTokenTable reqToToken,
            PrefixCache prefixCache)
    {
        Parts
        {
            requireNonNull(faults, "faults is null");
            requireNonNull(stream, "stream is null");
            requireNonNull(executor, "executor is null");
            requireNonNull(planner, "planner is null");
            requireNonNull(reservations, "reservations is null");
            requireNonNull(handoff, "handoff is null");
            requireNonNull(pagePool, "pagePool is null");
            requireNonNull(reqToToken, "reqToToken is null");
            requireNonNull(prefixCache, "prefixCache is null");
        }
    }

    private record InFlight(StepPlan plan, Fence fence) {}

    private final Parts parts;
    private final BlockingQueue<SchedulerCommand> inbox;
    // submitted and not yet admitted or aborted, including submits still in the inbox; the submitter increments it
    private final AtomicInteger queued;
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
    // requests that ended for each cause (by ordinal), since start
    private final long[] failures = new long[FailureCause.values().length];

    StepLoop(Parts parts, BlockingQueue<SchedulerCommand> inbox, AtomicInteger queued)
    {
        this.parts = requireNonNull(parts, "parts is null");
        this.inbox = requireNonNull(inbox, "inbox is null");
        this.queued = requireNonNull(queued, "queued is null");
        this.stats = snapshot();
    }

    SchedulerStats stats()
    {
        return stats;
    }

    @Override
    public void run()
    {
        while (true) {
            try {
                if (!turn()) {
                    break;
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
        // after the shutdown command only audits and cache flushes can still arrive (submits are refused under submitLock)
        for (SchedulerCommand command = inbox.poll(); command != null; command = inbox.poll()) {
            handle(command);
        }
    }

    /** One turn of the loop: commands, then at most one new step, then completions and releases; false once shut down. */
    private boolean turn()
            throws InterruptedException
    {
        // once shutting down, never block on an empty inbox: nothing else will arrive to wake us
        SchedulerCommand command = idle() && !shuttingDown ? inbox.take() : inbox.poll();
        while (command != null) {
            handle(command);
            command = inbox.poll();
        }
        if (shuttingDown && idle()) {
            publish();
            return false;
        }
        Optional<StepPlan> plan = Optional.empty();
        if (!running.isEmpty() || !waiting.isEmpty()) {
            parts.faults().hit(FaultPoint.SCHEDULER_BEFORE_STEP, nextStep, 0);
            admit();
            plan = parts.planner().plan(nextStep, running);
        }
        plan.ifPresent(this::submit);
        int keep = plan.isPresent() && parts.overlap() ? 1 : 0;
        boolean progressed = false;
        while (inFlight.size() > keep) {
            // the step stays listed as in flight until its fence has completed
            complete(inFlight.peek());
            inFlight.poll();
            progressed = true;
        }
        progressed |= releaseFinished();
        publish();
        if (!progressed && plan.isEmpty() && inFlight.isEmpty() && !(waiting.isEmpty() && running.isEmpty() && releasing.isEmpty())) {
            // Nothing can run until something arrives (KV from a peer, pages back from a transfer or a
            // quarantine); every such event is a command, so wait for one instead of spinning. A turn that
            // completed a step or released pages goes round again at once: what it freed may admit a waiting
            // request (a whole batch finishing in one step used to wait out the poll with requests queued).
            SchedulerCommand next = inbox.poll(100, TimeUnit.MILLISECONDS);
            if (next != null) {
                handle(next);
            }
        }
        return true;
    }

    private boolean idle()
    {
        return waiting.isEmpty() && running.isEmpty() && inFlight.isEmpty() && releasing.isEmpty();
    }

    private void submit(StepPlan plan)
    {
        nextStep++;
        // listed before it can start, so inFlightFence never misses a running step
        inFlight.add(new InFlight(plan, plan.fence()));
        parts.stream().submit(plan.fence(), () -> parts.executor().execute(plan));
    }

    private void handle(SchedulerCommand command)
    {
        switch (command) {
            case SchedulerCommand.Submit submit -> waiting.add(submit.request());
            case SchedulerCommand.Abort abort -> abortRequest(abort.rid(), abort.cause(), abort.error());
            case SchedulerCommand.KvArrived arrived -> kvArrived(arrived.rid(), arrived.firstToken(), arrived.logprobs());
            case SchedulerCommand.KvFailed failed ->
                    findRunning(failed.rid()).ifPresent(r -> finish(r, FinishReason.ERROR, failed.reason(), failed.cause()));
            case SchedulerCommand.Wake ignored -> { }
            case SchedulerCommand.FailAll fail -> {
                for (ScheduledRequest request : List.copyOf(waiting)) {
                    abortRequest(request.request.rid(), fail.cause(), fail.error());
                }
                for (ScheduledRequest request : List.copyOf(running)) {
                    finish(request, FinishReason.ERROR, fail.error(), fail.cause());
                }
            }
            case SchedulerCommand.ProofArrived proof -> parts.reservations().proofArrived(proof);
            case SchedulerCommand.Audit audit -> {
                try {
                    audit();
                    // an audit is a barrier: what the commands before it changed is in the stats when it returns
                    stats = snapshot();
                    audit.done().complete(null);
                }
                catch (RuntimeException e) {
                    audit.done().completeExceptionally(e);
                }
            }
            case SchedulerCommand.FlushCache flush -> {
                try {
                    flush.done().complete(flushCache());
                }
                catch (RuntimeException e) {
                    flush.done().completeExceptionally(e);
                    throw e;
                }
            }
            case SchedulerCommand.Shutdown ignored -> {
                shuttingDown = true;
                for (ScheduledRequest request : List.copyOf(waiting)) {
                    abortRequest(request.request.rid(), FailureCause.ENGINE, "the engine shut down");
                }
                for (ScheduledRequest request : List.copyOf(running)) {
                    finish(request, FinishReason.ABORT, "the engine shut down", FailureCause.ENGINE);
                }
            }
        }
    }

    /**
     * Drops every cached prefix while nothing runs or waits; else touches nothing. A request still releasing counts as
     * running: it holds a lock on its prefix, and on a prefill a transfer may still read its pages. The stats are
     * published at once, so the pages show as free when the flush's caller learns of it.
     */
    private CacheFlush flushCache()
    {
        int admitted = running.size() + releasing.size();
        // queued counts submits still in the inbox too: they would be admitted into a cache they expect to reuse
        int notAdmitted = Math.max(waiting.size(), queued.get());
        if (admitted > 0 || notAdmitted > 0) {
            return CacheFlush.refused(admitted, notAdmitted, parts.pagePool().freePages());
        }
        int dropped = parts.prefixCache().evict(parts.prefixCache().cachedPages());
        stats = snapshot();
        log.info("prefix cache flushed: {} page(s) back in the free pool", dropped);
        return CacheFlush.done(dropped, parts.pagePool().freePages());
    }

    /** Publishes the stats, then delivers the results of requests released since: a result never runs ahead of the stats. */
    private void publish()
    {
        stats = snapshot();
        long now = System.nanoTime();
        for (ScheduledRequest request : delivering) {
            request.timeline.ended(request.finishReason, request.cause, request.error);
            try {
                request.result.complete(request.toResult(now));
            }
            catch (RuntimeException e) {
                request.result.completeExceptionally(e);
            }
        }
        delivering.clear();
    }

    private void abortRequest(String rid, FailureCause cause, String error)
    {
        for (Iterator<ScheduledRequest> it = waiting.iterator(); it.hasNext(); ) {
            ScheduledRequest request = it.next();
            if (request.request.rid().equals(rid)) {
                it.remove();
                queued.decrementAndGet();
                // never admitted: it holds no row and no page
                request.finishReason = FinishReason.ABORT;
                request.error = error;
                request.cause = cause;
                request.request.ticket().ifPresent(ticket -> parts.handoff().dequeued(rid, ticket, cause, error));
                counted(request);
                request.phase = ScheduledRequest.Phase.DONE;
                finishedRequests++;
                delivering.add(request);
                return;
            }
        }
        for (ScheduledRequest request : List.copyOf(running)) {
            if (request.request.rid().equals(rid)) {
                finish(request, FinishReason.ABORT, error, cause);
                return;
            }
        }
    }

    private void admit()
    {
        while (!waiting.isEmpty() && parts.reservations().hasFreeRow()) {
            ScheduledRequest request = waiting.peek();
            if (!parts.reservations().reserve(request)) {
                return; // first come, first served: later requests wait behind this one
            }
            waiting.poll();
            queued.decrementAndGet();
            promptTokens += request.promptLength();
            cachedPromptTokens += request.cachedTokens;
            running.add(request);
            request.timeline.record(TimelineEvent.ADMITTED, "cached_tokens=" + request.cachedTokens + " pages=" + request.pages.length + " receives_prompt=" + request.receivingPrompt);
            parts.handoff().admitted(view(request));
        }
    }

    private void complete(InFlight step)
    {
        StepPlan plan = step.plan();
        Throwable failure = awaitFence(step.fence());
        completedStep = plan.step();
        if (failure != null) {
            log.error("step {} failed; failing its requests", plan.step(), failure);
            String error = "forward step " + plan.step() + " failed: " + (failure.getMessage() != null ? failure.getMessage() : failure.toString());
            // a lost tensor-parallel rank fails every step from now on: say so, so that a router sends the request elsewhere
            FailureCause cause = failure instanceof RankLostException ? FailureCause.RANK_LOST : FailureCause.ENGINE;
            for (StepPlan.Chunk chunk : plan.chunks()) {
                finish(chunk.request(), FinishReason.ERROR, error, cause);
            }
            for (StepPlan.Decode decode : plan.decodes()) {
                finish(decode.request(), FinishReason.ERROR, error, cause);
            }
            return;
        }
        for (StepPlan.Chunk chunk : plan.chunks()) {
            ScheduledRequest request = chunk.request();
            if (request.phase != ScheduledRequest.Phase.RUNNING) {
                continue;
            }
            request.computedPromptTokens = chunk.to();
            request.timeline.record(TimelineEvent.FORWARD_DONE, "step=" + plan.step() + " tokens=" + chunk.from() + ".." + chunk.to() + (chunk.last() ? " last" : ""));
            parts.handoff().chunkComputed(view(request), chunk.from(), chunk.to(), plan.fence(), chunk.last(),
                    chunk.last() ? request.outputs[0] : -1, chunk.last() ? request.prefillLogprobs() : Optional.empty());
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
            request.timeline.record(TimelineEvent.FIRST_TOKEN, "token=" + token);
        }
        try {
            if (index == 0 && request.outputLogprobs != null) {
                request.listener.onPrompt(request.promptLogprobs());
            }
            request.listener.onToken(index, token, request.outputLogprobs == null ? null : request.outputLogprobs[index]);
        }
        catch (RuntimeException e) {
            log.warn("token listener of request {} failed; aborting it", request.request.rid(), e);
            finish(request, FinishReason.ABORT, "its token listener failed: " + e, FailureCause.ENGINE);
            return;
        }
        if (request.constraintError != null) {
            finish(request, FinishReason.ERROR, "the output cannot follow its grammar: " + request.constraintError, FailureCause.ENGINE);
        }
        else if (request.endIds.contains(token) || request.matcher != null && request.matcher.ends(token)) {
            finish(request, FinishReason.STOP, null, null);
        }
        else if (request.producedOutputs == request.request.maxNewTokens()) {
            finish(request, FinishReason.LENGTH, null, null);
        }
    }

    /** Ends a running request; {@code cause} is why it failed, null when it did not. */
    private void finish(ScheduledRequest request, FinishReason reason, String error, FailureCause cause)
    {
        if (request.phase != ScheduledRequest.Phase.RUNNING) {
            return;
        }
        request.finishReason = reason;
        request.error = error;
        request.cause = cause;
        request.phase = ScheduledRequest.Phase.RELEASING;
        running.remove(request);
        releasing.add(request);
    }

    /** Returns the pages of finished requests no in-flight step touches any more, then delivers their results; true if any were. */
    private boolean releaseFinished()
    {
        boolean released = false;
        for (Iterator<ScheduledRequest> it = releasing.iterator(); it.hasNext(); ) {
            ScheduledRequest request = it.next();
            if (!parts.reservations().tryRelease(request, completedStep)) {
                continue;
            }
            it.remove();
            request.phase = ScheduledRequest.Phase.DONE;
            finishedRequests++;
            counted(request);
            delivering.add(request);
            released = true;
        }
        return released;
    }

    /** Counts a request that ended for a cause, once, with its final cause (a failed handoff may have named it since it finished). */
    private void counted(ScheduledRequest request)
    {
        if (request.cause != null) {
            failures[request.cause.ordinal()]++;
        }
    }

    private void kvArrived(String rid, int firstToken, Optional<Logprobs> logprobs)
    {
        Optional<ScheduledRequest> found = findRunning(rid);
        if (found.isEmpty() || !found.get().receivingPrompt) {
            log.debug("prompt KV for {} arrived, but it is no longer waiting for it; ignored", rid);
            return;
        }
        ScheduledRequest request = found.get();
        parts.reservations().promptReceived(request);
        request.computedPromptTokens = request.promptLength();
        if (!request.receivedLogprobs(logprobs)) {
            // the decode's handoff checks their shape against the request before it commits: this is a bug, not a peer's doing
            finish(request, FinishReason.ERROR, "the prefill's log probabilities do not fit the request", FailureCause.ENGINE);
            return;
        }
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
        return request.handoffView(parts.pageSize());
    }

    private void failAll(String reason)
    {
        for (ScheduledRequest request : List.copyOf(running)) {
            finish(request, FinishReason.ERROR, reason, FailureCause.ENGINE);
        }
        while (!inFlight.isEmpty()) {
            InFlight step = inFlight.peek();
            awaitFence(step.fence());
            completedStep = step.plan().step();
            inFlight.poll();
        }
        releaseFinished();
    }

    private SchedulerStats snapshot()
    {
        return new SchedulerStats(running.size(), waiting.size() + Math.max(0, queued.get() - waiting.size()),
                parts.pagePool().accounting(), parts.prefixCache().cachedPages(), nextStep, promptTokens, cachedPromptTokens,
                generatedTokens, finishedRequests, failureCounts(), parts.reservations().quarantineTimes().snapshot());
    }

    private Map<FailureCause, Long> failureCounts()
    {
        Map<FailureCause, Long> counts = new EnumMap<>(FailureCause.class);
        for (FailureCause cause : FailureCause.values()) {
            counts.put(cause, failures[cause.ordinal()]);
        }
        return counts;
    }

    /** Checks every page is accounted for; on the scheduler thread, or on any once that thread has ended. */
    void audit()
    {
        SchedulerInvariants.check(parts.pagePool(), parts.reqToToken(), parts.prefixCache(), waiting, List.of(running, releasing));
    }

    /** The fence of step {@code step} while the loop still waits for it; empty once completed. Any thread. */
    Optional<Fence> inFlightFence(long step)
    {
        for (InFlight candidate : inFlight) {
            if (candidate.plan().step() == step) {
                return Optional.of(candidate.fence());
            }
        }
        return Optional.empty();
    }
}
