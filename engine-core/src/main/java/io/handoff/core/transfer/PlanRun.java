package io.handoff.core.transfer;

import io.handoff.spi.transfer.PlanWork;
import io.handoff.spi.transfer.TransferFailure;
import io.handoff.spi.transfer.TransferPlan;

import java.time.Duration;

import static java.util.Objects.requireNonNull;

/**
 * One plan as a backend sees it ({@link PlanWork}), and the core's record of how the backend used it: the first
 * outcome reported is the plan's; a second one, a read before the producer fence on a FORWARD_SYNC connection, or
 * a completion without having said it reads, is a protocol violation that the link turns into a failed plan and a
 * fenced peer.
 */
final class PlanRun
        implements PlanWork
{
    record Outcome(long bytes, TransferFailure failure) {}

    private final TransferLink link;
    private final TransferPlan plan;
    private final boolean forwardSync;
    private Outcome outcome;
    private String violation;
    private boolean reading;
    // Set once the link took the outcome: a report after that can only be a second one, and fences the link at once.
    private boolean delivered;

    PlanRun(TransferLink link, TransferPlan plan, boolean forwardSync)
    {
        this.link = requireNonNull(link, "link is null");
        this.plan = requireNonNull(plan, "plan is null");
        this.forwardSync = forwardSync;
    }

    @Override
    public TransferPlan plan()
    {
        return plan;
    }

    @Override
    public void awaitFence()
            throws TransferFailure
    {
        if (forwardSync) {
            link.awaitFence(plan);
        }
        reading();
    }

    @Override
    public void reading()
            throws TransferFailure
    {
        if (!plan.fence().isDone() || plan.fence().failed()) {
            String reason = link.label() + " began reading room " + plan.room() + " chunk " + plan.chunk() + " before the fence of forward step "
                    + plan.fence().step() + " was done, though its connection declares FORWARD_SYNC (transfer protocol violation, I1)";
            synchronized (this) {
                if (violation == null) {
                    violation = reason;
                }
            }
            throw new TransferFailure(reason + "; the backend must send nothing", true);
        }
        synchronized (this) {
            reading = true;
        }
        link.hooks().beforeReadingChunk(plan.room(), plan.chunk());
    }

    @Override
    public void pageDone(int pageIndex)
    {
        link.hooks().afterPage(plan.room(), pageIndex);
    }

    @Override
    public boolean stopped()
    {
        return link.isClosed();
    }

    @Override
    public void completed(long bytes)
    {
        if (bytes < 0) {
            report(null, link.label() + " reported " + bytes + " bytes moved for room " + plan.room() + " chunk " + plan.chunk()
                    + " (transfer protocol violation)");
            return;
        }
        String missingRead = forwardSync && !readingStarted()
                ? link.label() + " completed room " + plan.room() + " chunk " + plan.chunk() + " without calling reading() or awaitFence() "
                        + "first, though its connection declares FORWARD_SYNC (transfer protocol violation, I1)"
                : null;
        report(new Outcome(bytes, null), missingRead);
    }

    @Override
    public void failed(TransferFailure failure)
    {
        requireNonNull(failure, "failure is null");
        report(new Outcome(-1, failure), null);
    }

    /** {@code send} threw a runtime exception: a bug; the plan fails, unsettled once reading began. */
    void thrown(String reason)
    {
        report(new Outcome(-1, new TransferFailure(reason, !readingStarted())), null);
    }

    synchronized boolean readingStarted()
    {
        return reading;
    }

    synchronized String violation()
    {
        return violation;
    }

    /** Waits up to {@code timeout} for the outcome; null when none came. Afterwards every report is a second one. */
    Outcome awaitOutcome(Duration timeout)
            throws InterruptedException
    {
        long deadline = System.nanoTime() + timeout.toNanos();
        synchronized (this) {
            while (outcome == null) {
                long left = deadline - System.nanoTime();
                if (left <= 0) {
                    break;
                }
                java.util.concurrent.TimeUnit.NANOSECONDS.timedWait(this, left);
            }
            delivered = true;
            return outcome;
        }
    }

    private void report(Outcome reported, String broken)
    {
        String late;
        synchronized (this) {
            if (outcome == null && !delivered) {
                outcome = reported == null ? new Outcome(-1, new TransferFailure(broken, false)) : reported;
                if (broken != null && violation == null) {
                    violation = broken;
                }
                notifyAll();
                return;
            }
            String second = link.label() + " reported a second outcome for room " + plan.room() + " chunk " + plan.chunk()
                    + " (transfer protocol violation)";
            if (!delivered) {
                if (violation == null) {
                    violation = second;
                }
                return;
            }
            late = outcome == null ? link.label() + " reported an outcome for room " + plan.room() + " chunk " + plan.chunk()
                    + " after the report timeout (transfer protocol violation)" : second;
        }
        // The plan was already delivered: nothing the backend does on this link can be trusted any more.
        link.fence(late);
    }
}
