package io.handoff.core.transfer;

import io.handoff.spi.transfer.PlanWork;
import io.handoff.spi.transfer.TransferFailure;
import io.handoff.spi.transfer.TransferPlan;


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
        if (link.violation() != null) {
            throw new TransferFailure(link.label() + " was fenced before room " + plan.room() + " chunk " + plan.chunk()
                    + " was read (" + link.violation() + "); nothing was sent", true);
        }
        if (plan.fence().isDone() && plan.fence().failed()) {
            throw new TransferFailure("the forward step " + plan.fence().step() + " that wrote room " + plan.room() + " chunk " + plan.chunk()
                    + " failed; nothing was sent", true);
        }
        if (!plan.fence().isDone()) {
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
    public int pagesBeforeWatch(int pageIndex, int count)
    {
        TransferHooks hooks = link.hooks();
        for (int page = 0; page < count; page++) {
            if (hooks.watchesPage(plan.room(), pageIndex + page)) {
                return page + 1;
            }
        }
        return count;
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

    /**
     * {@code send} threw a runtime exception: a bug. The plan fails unsettled (the backend may have handed writes to
     * its transport before it threw); after a report, throwing is a violation of its own.
     */
    void thrown(String reason)
    {
        boolean reported;
        synchronized (this) {
            reported = outcome != null;
            if (reported && !delivered && violation == null) {
                violation = reason + ", after it had reported the plan's outcome (transfer protocol violation)";
            }
        }
        if (!reported) {
            report(new Outcome(-1, new TransferFailure(reason, false)), null);
        }
    }

    synchronized boolean readingStarted()
    {
        return reading;
    }

    synchronized String violation()
    {
        return violation;
    }

    /** Who took the plan's outcome: the transfer thread ({@code mine}) or, after the report timeout, the watchdog. */
    record Taken(boolean mine, Outcome outcome) {}

    /** Whether the outcome is in, or the watchdog took the plan: the transfer thread may settle it now. */
    synchronized boolean hasOutcome()
    {
        return outcome != null || delivered;
    }

    /** Takes the outcome now, reported or not; {@code mine} is false when it was taken already. */
    synchronized Taken take()
    {
        if (delivered) {
            return new Taken(false, null);
        }
        delivered = true;
        return new Taken(true, outcome);
    }

    private final java.util.concurrent.CountDownLatch expiryHandled = new java.util.concurrent.CountDownLatch(1);

    /** The watchdog has failed the plan and fenced the link. */
    void expiryHandled()
    {
        expiryHandled.countDown();
    }

    /** Waits until the watchdog, which took this plan, has failed it and fenced the link. */
    void awaitExpiryHandled()
            throws InterruptedException
    {
        expiryHandled.await();
    }

    /** The watchdog's claim at the report timeout: true when nothing was reported and nobody took the plan yet. */
    synchronized boolean expire()
    {
        if (delivered || outcome != null) {
            return false;
        }
        delivered = true;
        return true;
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
                late = null;
            }
            else {
                late = secondOrLate();
            }
        }
        if (late == null) {
            // Outside this plan's lock: the link's lock is never taken while holding it.
            link.arrived();
        }
        else if (!late.isEmpty()) {
            // The plan was already delivered: nothing the backend does on this link can be trusted any more.
            link.fence(late);
        }
    }

    /** A report after the first (called holding this plan's lock): recorded as a violation while the plan is not delivered (""), else the reason to fence the link. */
    private String secondOrLate()
    {
        String second = link.label() + " reported a second outcome for room " + plan.room() + " chunk " + plan.chunk()
                + " (transfer protocol violation)";
        if (!delivered) {
            if (violation == null) {
                violation = second;
            }
            return "";
        }
        return outcome == null ? link.label() + " reported an outcome for room " + plan.room() + " chunk " + plan.chunk()
                + " after the report timeout (transfer protocol violation)" : second;
    }
}
