package io.handoff.core.fault;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import static java.util.Objects.requireNonNull;

/**
 * A test's script of faults: at a point whose coordinates match, park until released, delay, fail, or corrupt the
 * bytes the point guards.
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

        /**
         * A fraction {@code rate} of all values, chosen by a hash of the value and {@code seed}: the same value and seed
         * are always chosen or always not, whichever process asks, so a soak's faults fall on the same rooms every time it
         * sees the same room ids, and on about {@code rate} of them whatever the ids are.
         */
        static Match sampled(double rate, long seed)
        {
            if (!(rate > 0 && rate <= 1)) {
                throw new IllegalArgumentException("rate must be in (0, 1], got " + rate);
            }
            long threshold = (long) (rate * (1L << 53));
            long salt = mix(seed);
            return value -> (mix(value ^ salt) >>> 11) < threshold;
        }

        // SplitMix64's finalizer: every input bit moves every output bit, so consecutive room ids are not chosen together
        private static long mix(long z)
        {
            z = (z ^ (z >>> 30)) * 0xbf58476d1ce4e5b9L;
            z = (z ^ (z >>> 27)) * 0x94d049bb133111ebL;
            return z ^ (z >>> 31);
        }
    }

    private sealed interface Action
            permits Park, Delay, Fail, Corrupt {}

    private record Park(Gate gate) implements Action {}

    private record Delay(Duration duration) implements Action {}

    private record Fail() implements Action {}

    private record Corrupt() implements Action {}

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

    /**
     * Flips one bit of the first byte of what the first {@code times} matching hits carry; {@code point} must
     * {@linkplain FaultPoint#carriesBytes() carry bytes}.
     */
    public void corrupt(FaultPoint point, Match a, Match b, int times)
    {
        if (!point.carriesBytes()) {
            throw new IllegalArgumentException(point.description() + " carries no bytes to corrupt");
        }
        rules.add(new Rule(point, a, b, new Corrupt(), new AtomicInteger(times)));
    }

    @Override
    public void hit(FaultPoint point, long a, long b)
    {
        hit(point, a, b, null);
    }

    @Override
    public void hit(FaultPoint point, long a, long b, MemorySegment bytes)
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
                case Corrupt ignored -> flip(bytes);
            }
        }
    }

    @Override
    public boolean watches(FaultPoint point, long a, long b)
    {
        for (Rule rule : rules) {
            if (rule.point() == point && rule.a().test(a) && rule.b().test(b)) {
                return true;
            }
        }
        return false;
    }

    // One flipped bit: the least a checksum must catch, and what a bad link or a stray write does.
    private static void flip(MemorySegment bytes)
    {
        if (bytes != null && bytes.byteSize() > 0) {
            bytes.set(ValueLayout.JAVA_BYTE, 0, (byte) (bytes.get(ValueLayout.JAVA_BYTE, 0) ^ 1));
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
