package io.handoff.router;

import java.time.Duration;
import java.util.random.RandomGenerator;

import static java.util.Objects.requireNonNull;

/**
 * How many attempts a request whose transfer failed for a retryable cause gets, what each is called on the servers,
 * and the pause before each retry ({@link Backoff}, waited out by a {@link Sleeper}).
 */
final class RetryPlan
{
    private final int maxAttempts;
    private final Backoff backoff;
    private final Sleeper sleeper;

    RetryPlan(RouterConfig.Retry config, RandomGenerator random, Sleeper sleeper)
    {
        requireNonNull(config, "config is null");
        this.maxAttempts = config.maxAttempts();
        this.backoff = new Backoff(config.initialBackoff(), config.maxBackoff(), random);
        this.sleeper = requireNonNull(sleeper, "sleeper is null");
    }

    int maxAttempts()
    {
        return maxAttempts;
    }

    /** Whether attempt {@code attempt} (1 for the first) is the last one allowed. */
    boolean last(int attempt)
    {
        return attempt >= maxAttempts;
    }

    /** The rid attempt {@code attempt} runs under on the servers: the client's, then {@code <rid>-retry<n>} (the first's may still be in their books). */
    static String rid(String rid, int attempt)
    {
        return attempt == 1 ? rid : rid + PairedRequests.RETRY_SUFFIX + (attempt - 1);
    }

    /** Waits out the pause before attempt {@code attempt} (2 for the first retry). */
    void pauseBefore(int attempt)
            throws InterruptedException
    {
        Duration delay = backoff.delay(attempt - 1);
        if (!delay.isZero()) {
            sleeper.sleep(delay);
        }
    }
}
