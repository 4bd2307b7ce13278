package io.handoff.cluster;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import java.util.function.Consumer;
import java.util.function.Predicate;

import static org.junit.jupiter.api.Assertions.fail;

/** A membership listener that records every view handed over, and waits (with a deadline) for one that matches. */
final class Views
        implements Consumer<MembershipView>
{
    private final List<MembershipView> views = new ArrayList<>();
    private Thread listenerThread;
    private boolean concurrent;

    @Override
    public synchronized void accept(MembershipView view)
    {
        if (listenerThread == null) {
            listenerThread = Thread.currentThread();
        }
        concurrent |= listenerThread != Thread.currentThread();
        views.add(view);
        notifyAll();
    }

    synchronized List<MembershipView> all()
    {
        return List.copyOf(views);
    }

    /** Whether every view came from one thread. */
    synchronized boolean oneThread()
    {
        return !concurrent;
    }

    /** The first view from now on (or already recorded) that matches, waiting up to {@code timeout}. */
    synchronized MembershipView await(String what, Predicate<MembershipView> condition, Duration timeout)
            throws InterruptedException
    {
        long deadline = System.nanoTime() + timeout.toNanos();
        while (true) {
            Optional<MembershipView> match = views.isEmpty() ? Optional.empty() : Optional.of(views.getLast()).filter(condition);
            if (match.isPresent()) {
                return match.get();
            }
            long left = deadline - System.nanoTime();
            if (left <= 0) {
                fail("no membership view " + what + " within " + timeout + "; the last views: " + views.subList(Math.max(0, views.size() - 3), views.size()));
            }
            TimeUnit.NANOSECONDS.timedWait(this, left);
        }
    }

    /** Waits until {@code condition} holds, polling it, for at most {@code timeout}. */
    static void await(String what, BooleanSupplier condition, Duration timeout)
            throws InterruptedException
    {
        long deadline = System.nanoTime() + timeout.toNanos();
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() > deadline) {
                fail("not " + what + " within " + timeout);
            }
            Thread.sleep(20);
        }
    }
}
