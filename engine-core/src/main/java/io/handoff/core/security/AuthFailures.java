package io.handoff.core.security;

import io.handoff.trace.PeerText;
import org.apache.logging.log4j.LogManager;
import org.apache.logging.log4j.Logger;

import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.LongSupplier;

import static java.util.Objects.requireNonNull;

/**
 * Peers refused for not authenticating (or for breaking the protocol before they did): a counter for
 * {@code /metrics}, and a warning at most once per peer address per interval, naming how many were not logged. A
 * flood of bad connections is one line a minute per address, not one line per connection; the first failure of an
 * address is always logged at once.
 */
public final class AuthFailures
{
    public static final Duration LOG_INTERVAL = Duration.ofMinutes(1);
    // addresses remembered for rate limiting; beyond this the oldest is forgotten (and may log again early)
    private static final int MAX_PEERS = 4096;
    private static final Logger log = LogManager.getLogger(AuthFailures.class);

    private record Window(long startNanos, long suppressed) {}

    private final AtomicLong total = new AtomicLong();
    private final LongSupplier clock;
    private final long intervalNanos;
    private final Map<String, Window> windows = new LinkedHashMap<>(16, 0.75f, true)
    {
        @Override
        protected boolean removeEldestEntry(Map.Entry<String, Window> eldest)
        {
            return size() > MAX_PEERS;
        }
    };

    public AuthFailures()
    {
        this(System::nanoTime, LOG_INTERVAL);
    }

    public AuthFailures(LongSupplier clock, Duration interval)
    {
        this.clock = requireNonNull(clock, "clock is null");
        this.intervalNanos = requireNonNull(interval, "interval is null").toNanos();
    }

    /**
     * Counts one refused peer and logs it unless this address was logged within the interval for the same kind of
     * refusal (so a flood of one kind does not hide a wrong secret from the same address).
     *
     * @param what what refused it, e.g. "the control endpoint"
     * @param peerAddress the peer's address (host, without the port: each connection has a new port)
     * @param kind the class of refusal, e.g. an {@link AuthenticationException.Failure} name
     */
    public void refused(String what, String peerAddress, String kind, String reason)
    {
        total.incrementAndGet();
        String peer = PeerText.clean(peerAddress, 100);
        String key = peer + " " + kind;
        long now = clock.getAsLong();
        long suppressed;
        synchronized (windows) {
            Window window = windows.get(key);
            if (window != null && now - window.startNanos() < intervalNanos) {
                windows.put(key, new Window(window.startNanos(), window.suppressed() + 1));
                return;
            }
            suppressed = window == null ? 0 : window.suppressed();
            windows.put(key, new Window(now, 0));
        }
        log.warn("{} refused peer {}: cluster authentication failed: {}{}", what, peer, PeerText.clean(reason, 400),
                suppressed == 0 ? "" : " (" + suppressed + " more refusals like it from this address in the previous "
                        + intervalNanos / 1_000_000_000 + " s were not logged)");
    }

    /** A refusal of an authentication failure, logged per address and kind of failure. */
    public void refused(String what, String peerAddress, AuthenticationException failure)
    {
        refused(what, peerAddress, failure.failure().name(), failure.getMessage());
    }

    /** Counts a failure the caller reports itself (this node's own attempt to authenticate to a peer). */
    public void failed()
    {
        total.incrementAndGet();
    }

    /** Every refusal counted so far. */
    public long total()
    {
        return total.get();
    }
}
