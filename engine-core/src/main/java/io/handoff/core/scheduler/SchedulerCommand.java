package io.handoff.core.scheduler;

import io.handoff.core.kv.ReleaseProof;
import io.handoff.trace.FailureCause;

import java.util.Optional;
import java.util.concurrent.CompletableFuture;

/**
 * What other threads tell the scheduler thread. Every change to a request, the page pool or the prefix
 * cache arrives as one of these, so that thread stays their only writer.
 */
sealed interface SchedulerCommand
{
    record Submit(ScheduledRequest request) implements SchedulerCommand {}

    /** Abort {@code rid} for {@code cause}; {@code error} (or null) says more. */
    record Abort(String rid, FailureCause cause, String error) implements SchedulerCommand {}

    record Audit(CompletableFuture<Void> done) implements SchedulerCommand {}

    /** Drop every cached prefix, unless requests run or wait (then touch nothing); the outcome completes {@code done}. */
    record FlushCache(CompletableFuture<CacheFlush> done) implements SchedulerCommand {}

    record Shutdown() implements SchedulerCommand {}

    /** The prompt's KV arrived; {@code logprobs}: the prefill's (first token and prompt), present iff the request asked. */
    record KvArrived(String rid, int firstToken, Optional<Logprobs> logprobs) implements SchedulerCommand {}

    record KvFailed(String rid, FailureCause cause, String reason) implements SchedulerCommand {}

    /** Something a finished request's release waits for completed. */
    record Wake() implements SchedulerCommand {}

    /** Every request, waiting or running, fails for {@code cause} (the engine can run no step any more). */
    record FailAll(FailureCause cause, String error) implements SchedulerCommand {}

    /** A peer's proof (or its failure) that quarantined prompt pages are no longer written; quarantined at {@code sinceNanos}. */
    record ProofArrived(int[] pages, ReleaseProof proof, Throwable failure, long sinceNanos) implements SchedulerCommand {}
}
