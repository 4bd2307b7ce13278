package io.handoff.http.base.security;

import java.net.InetAddress;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Optional;
import java.util.function.LongSupplier;

import static java.util.Objects.requireNonNull;

/**
 * {@code handoff.server.rate-limit}: a token bucket per client address. A bucket holds up to {@code burst}
 * requests and refills at {@code perSecond}; a request that finds it empty is refused with the time until the
 * next token. The clock is injected so that tests drive refills without waiting.
 *
 * <p>Memory is bounded: at most {@link #MAX_ADDRESSES} buckets, the least recently used dropped first. A dropped
 * address starts again with a full bucket, which only an attacker with that many addresses can exploit, and
 * such an attacker gets around any per-address limit anyway.
 */
public final class RateLimiter
{
    static final int MAX_ADDRESSES = 65_536;

    /** What an address has saved up, in nanoseconds of refill (exact integers: a test's clock gives exact answers). */
    private static final class Bucket
    {
        long credit;
        long refilledAt;

        Bucket(long credit, long refilledAt)
        {
            this.credit = credit;
            this.refilledAt = refilledAt;
        }
    }

    private final double perSecond;
    private final int burst;
    private final long nanosPerRequest;
    private final long capacity;
    private final LongSupplier nanoClock;
    private final Map<InetAddress, Bucket> buckets = new LinkedHashMap<>(1024, 0.75f, true)
    {
        @Override
        protected boolean removeEldestEntry(Map.Entry<InetAddress, Bucket> eldest)
        {
            return size() > MAX_ADDRESSES;
        }
    };

    /** A limiter that lets every request through. */
    public static RateLimiter off()
    {
        return new RateLimiter(0, 1, System::nanoTime);
    }

    /**
     * @param perSecond requests per second per address; 0 turns the limiter off
     * @param burst requests an address may send at once after being quiet
     */
    public RateLimiter(double perSecond, int burst, LongSupplier nanoClock)
    {
        if (!(perSecond >= 0) || Double.isInfinite(perSecond)) {
            throw new IllegalArgumentException("rate limit must be a finite number of requests per second, at least 0, was " + perSecond);
        }
        if (burst < 1) {
            throw new IllegalArgumentException("rate-limit burst must be at least 1, was " + burst);
        }
        this.perSecond = perSecond;
        this.burst = burst;
        this.nanoClock = requireNonNull(nanoClock, "nanoClock is null");
        this.nanosPerRequest = perSecond == 0 ? 0 : Math.max(1, Math.round(1e9 / perSecond));
        long full;
        try {
            full = Math.multiplyExact(nanosPerRequest, burst);
        }
        catch (ArithmeticException e) {
            full = Long.MAX_VALUE;
        }
        this.capacity = full;
    }

    public boolean enabled()
    {
        return perSecond > 0;
    }

    public double perSecond()
    {
        return perSecond;
    }

    public int burst()
    {
        return burst;
    }

    /** Takes one request's worth for {@code address}: empty when the request may go on, else how long until it could. */
    public Optional<Duration> acquire(InetAddress address)
    {
        requireNonNull(address, "address is null");
        if (!enabled()) {
            return Optional.empty();
        }
        long now = nanoClock.getAsLong();
        synchronized (buckets) {
            Bucket bucket = buckets.computeIfAbsent(address, ignored -> new Bucket(capacity, now));
            long elapsed = Math.max(0, now - bucket.refilledAt);
            bucket.credit = capacity - bucket.credit <= elapsed ? capacity : bucket.credit + elapsed;
            bucket.refilledAt = now;
            if (bucket.credit >= nanosPerRequest) {
                bucket.credit -= nanosPerRequest;
                return Optional.empty();
            }
            return Optional.of(Duration.ofNanos(nanosPerRequest - bucket.credit));
        }
    }
}
