package io.handoff.http.base.security;

import org.junit.jupiter.api.Test;

import java.net.InetAddress;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicLong;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** The token buckets, driven by a clock the test moves. */
class RateLimiterTest
{
    private final AtomicLong now = new AtomicLong(1_000_000_000L);
    private final InetAddress alice = address(10, 0, 0, 1);
    private final InetAddress bob = address(10, 0, 0, 2);

    @Test
    void anAddressMaySendItsBurstThenIsToldWhenTheNextTokenComes()
    {
        RateLimiter limiter = new RateLimiter(2, 3, now::get);

        assertThat(limiter.acquire(alice)).isEmpty();
        assertThat(limiter.acquire(alice)).isEmpty();
        assertThat(limiter.acquire(alice)).isEmpty();
        assertThat(limiter.acquire(alice)).contains(Duration.ofMillis(500));

        now.addAndGet(Duration.ofMillis(200).toNanos());
        assertThat(limiter.acquire(alice)).contains(Duration.ofMillis(300));
    }

    @Test
    void tokensComeBackAtTheRateAndNeverBeyondTheBurst()
    {
        RateLimiter limiter = new RateLimiter(2, 3, now::get);
        for (int i = 0; i < 3; i++) {
            limiter.acquire(alice);
        }

        now.addAndGet(Duration.ofMillis(500).toNanos());
        assertThat(limiter.acquire(alice)).isEmpty();
        assertThat(limiter.acquire(alice)).isPresent();

        now.addAndGet(Duration.ofHours(1).toNanos());
        for (int i = 0; i < 3; i++) {
            assertThat(limiter.acquire(alice)).as("request %d after an hour of quiet", i).isEmpty();
        }
        assertThat(limiter.acquire(alice)).isPresent();
    }

    @Test
    void eachAddressHasItsOwnBucket()
    {
        RateLimiter limiter = new RateLimiter(1, 1, now::get);

        assertThat(limiter.acquire(alice)).isEmpty();
        assertThat(limiter.acquire(alice)).isPresent();
        assertThat(limiter.acquire(bob)).isEmpty();
    }

    @Test
    void aFractionalRateWaitsLongerThanASecond()
    {
        RateLimiter limiter = new RateLimiter(0.25, 1, now::get);

        assertThat(limiter.acquire(alice)).isEmpty();
        assertThat(limiter.acquire(alice)).contains(Duration.ofSeconds(4));
    }

    @Test
    void offLetsEverythingThrough()
    {
        RateLimiter limiter = RateLimiter.off();
        assertThat(limiter.enabled()).isFalse();
        for (int i = 0; i < 10_000; i++) {
            assertThat(limiter.acquire(alice)).isEmpty();
        }
    }

    @Test
    void theBucketsAreBoundedAndTheLeastRecentlySeenAddressGoesFirst()
    {
        RateLimiter limiter = new RateLimiter(1, 1, now::get);
        limiter.acquire(alice);
        for (int i = 0; i < RateLimiter.MAX_ADDRESSES; i++) {
            limiter.acquire(address(11, (i >> 16) & 0xff, (i >> 8) & 0xff, i & 0xff));
        }

        // alice's empty bucket was dropped: she starts again with a full one
        assertThat(limiter.acquire(alice)).isEmpty();
        assertThat(limiter.acquire(alice)).isPresent();
    }

    @Test
    void aNegativeRateOrAnEmptyBurstIsRefused()
    {
        assertThatThrownBy(() -> new RateLimiter(-1, 1, now::get)).hasMessageContaining("at least 0, was -1.0");
        assertThatThrownBy(() -> new RateLimiter(Double.NaN, 1, now::get)).hasMessageContaining("was NaN");
        assertThatThrownBy(() -> new RateLimiter(1, 0, now::get)).hasMessageContaining("burst must be at least 1, was 0");
    }

    private static InetAddress address(int a, int b, int c, int d)
    {
        return InetAddress.ofLiteral(a + "." + b + "." + c + "." + d);
    }
}
