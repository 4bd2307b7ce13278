package io.handoff.core.fault;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import static java.util.Objects.requireNonNull;

/**
 * A test's script of faults: at a point whose coordinates match, park until released, delay, or fail.
 * Races are opened deterministically by parking one side at a named point and acting while it waits,
 * never by sleeping and hoping.
 *
 * <pre>
 *   FaultPlan plan = new FaultPlan();
 *   FaultPlan.Gate gate = plan.park(FaultPoint.FORWARD_AFTER_LAYER, step -> step == 3, layer -> layer == 1);
 *   ... start the work ...
 *   gate.awaitParked(Duration.ofSeconds(10));   // the forward is now stopped after layer 1 of step 3
 *   ... observe, or race something against it ...
 *   gate.release();
 * </pre>
 */
public final class FaultPlan
        implements FaultInjector
{
    /** Matches one coordinate. */
    @FunctionalInterface
    public interface Match
    {
        Match ANY = value -> true;

        boolean test(long value);

        static Match is(long expected)
        {
            return value -> value == expected;
        }
    }

    private sealed interface Action
            permits Park, Delay, Fail {}

    private record Park(Gate gate) implements Action {}

    private record Delay(Duration duration) implements Action {}

    private record Fail() implements Action {}

    private record Rule(FaultPoint point, Match a, Match b, Action action, AtomicInteger remaining) {}

    private final List<Rule> rules = new CopyOnWriteArrayList<>();

    /** Parks every thread that reaches a matching point until the returned gate is released. */
    public Gate park(FaultPoint point, Match a, Match b)
    {
        Gate gate = new Gate(point);
        rules.add(new Rule(point, a, b, new Park(gate), new AtomicInteger(Integer.MAX_VALUE)));
        return gate;
    }

    /** Delays matching points. For slowing a peer down in end-to-end runs, never for ordering a race. */
    public void delay(FaultPoint point, Match a, Match b, Duration duration)
    {
        rules.add(new Rule(point, a, b, new Delay(requireNonNull(duration, "duration is null")), new AtomicInteger(Integer.MAX_VALUE)));
    }

    /** Fails the first {@code times} matching hits with {@link InjectedFault}. */
    public void fail(FaultPoint point, Match a, Match b, int times)
    {
        rules.add(new Rule(point, a, b, new Fail(), new AtomicInteger(times)));
    }

    @Override
    public void hit(FaultPoint point, long a, long b)
    {
        for (Rule rule : rules) {
            if (rule.point() != point || !rule.a().test(a) || !rule.b().test(b)) {
                continue;
            }
            if (rule.remaining().getAndUpdate(n -> n > 0 ? n - 1 : 0) <= 0) {
                continue;
            }
            switch (rule.action()) {
                case Park park -> park.gate().parkHere();
                case Delay delay -> sleep(delay.duration());
                case Fail ignored -> throw new InjectedFault(point, a, b);
            }
        }
    }

    private static void sleep(Duration duration)
    {
        try {
            Thread.sleep(duration);
        }
        catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted in an injected delay", e);
        }
    }

    /** Where parked threads wait. Released once, for good: later hits pass straight through. */
    public static final class Gate
    {
        private final FaultPoint point;
        private final CountDownLatch released = new CountDownLatch(1);
        private final CountDownLatch firstArrival = new CountDownLatch(1);
        private final AtomicInteger parked = new AtomicInteger();

        private Gate(FaultPoint point)
        {
            this.point = point;
        }

        private void parkHere()
        {
            if (released.getCount() == 0) {
                return;
            }
            parked.incrementAndGet();
            firstArrival.countDown();
            try {
                released.await();
            }
            catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new IllegalStateException("interrupted while parked at " + point.description(), e);
            }
            finally {
                parked.decrementAndGet();
            }
        }

        /** Waits until a thread is parked here; fails loudly if none arrives in {@code timeout}. */
        public void awaitParked(Duration timeout)
        {
            try {
                if (!firstArrival.await(timeout.toMillis(), TimeUnit.MILLISECONDS)) {
                    throw new AssertionError("nothing reached " + point.description() + " within " + timeout);
                }
            }
            catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new IllegalStateException(e);
            }
        }

        public boolean hasParked()
        {
            return firstArrival.getCount() == 0;
        }

        public int parkedNow()
        {
            return parked.get();
        }

        public void release()
        {
            released.countDown();
        }
    }
}
