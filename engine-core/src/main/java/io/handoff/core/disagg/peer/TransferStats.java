package io.handoff.core.disagg.peer;

import java.util.concurrent.atomic.AtomicLong;

/**
 * What moved and how long the link was busy, for {@code /metrics} and the demo's GB/s: busy time counts
 * wall time with at least one plan in flight, so concurrent plans are not double counted.
 */
public final class TransferStats
{
    private final AtomicLong bytes = new AtomicLong();
    private final AtomicLong plansCompleted = new AtomicLong();
    private final AtomicLong plansFailed = new AtomicLong();
    private final AtomicLong roomsSucceeded = new AtomicLong();
    private final AtomicLong roomsFailed = new AtomicLong();
    private final AtomicLong messagesIgnored = new AtomicLong();
    private final AtomicLong earlyBytes = new AtomicLong();
    private final AtomicLong kvReadyNanos = new AtomicLong();
    private final AtomicLong kvReadyRooms = new AtomicLong();
    private int inFlight;
    private long busySince;
    private long busyNanos;

    /** One posted plan's share of the busy time: it starts when the plan can move (its fence done) and ends with its outcome. */
    public final class Plan
    {
        private boolean started;
        private boolean ended;

        public void start()
        {
            synchronized (TransferStats.this) {
                if (!started && !ended) {
                    started = true;
                    if (inFlight++ == 0) {
                        busySince = System.nanoTime();
                    }
                }
            }
        }

        public void end(long planBytes, boolean completed)
        {
            synchronized (TransferStats.this) {
                if (ended) {
                    return;
                }
                ended = true;
                if (started && --inFlight == 0) {
                    busyNanos += System.nanoTime() - busySince;
                }
            }
            outcome(planBytes, completed);
        }
    }

    public Plan plan()
    {
        return new Plan();
    }

    private void outcome(long planBytes, boolean completed)
    {
        if (completed) {
            bytes.addAndGet(planBytes);
            plansCompleted.incrementAndGet();
        }
        else {
            plansFailed.incrementAndGet();
        }
    }

    public void earlyBytes(long planBytes)
    {
        earlyBytes.addAndGet(planBytes);
    }

    /** A room's KV was all in the decode's memory and its aux record sent, this long after the last chunk's forward completed. */
    public void kvReady(long nanosAfterLastForward)
    {
        kvReadyNanos.addAndGet(nanosAfterLastForward);
        kvReadyRooms.incrementAndGet();
    }

    public double kvReadySeconds()
    {
        return kvReadyNanos.get() / 1e9;
    }

    public long kvReadyRooms()
    {
        return kvReadyRooms.get();
    }

    public void roomEnded(boolean success)
    {
        (success ? roomsSucceeded : roomsFailed).incrementAndGet();
    }

    public void ignored()
    {
        messagesIgnored.incrementAndGet();
    }

    public long bytes()
    {
        return bytes.get();
    }

    /** Bytes of plans posted before the forward of their room's last chunk had completed. */
    public long earlyBytes()
    {
        return earlyBytes.get();
    }

    public synchronized double busySeconds()
    {
        long busy = busyNanos + (inFlight > 0 ? System.nanoTime() - busySince : 0);
        return busy / 1e9;
    }

    public long plansCompleted()
    {
        return plansCompleted.get();
    }

    public long plansFailed()
    {
        return plansFailed.get();
    }

    public long roomsSucceeded()
    {
        return roomsSucceeded.get();
    }

    public long roomsFailed()
    {
        return roomsFailed.get();
    }

    public long messagesIgnored()
    {
        return messagesIgnored.get();
    }
}
