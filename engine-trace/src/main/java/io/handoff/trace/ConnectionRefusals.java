package io.handoff.trace;

import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Consumer;
import java.util.function.LongSupplier;

import static java.util.Objects.requireNonNull;

/**
 * Connections a listener dropped or refused (a control port, a transfer data port, an HTTP port), counted by listener and
 * reason for {@code handoff_connections_refused_total{listener,reason}}, and logged rate-limited: the first
 * {@value #LOGGED_PER_WINDOW} refusals of a peer address on a listener within a window are logged one by one, the rest
 * of that window are counted, and one summary line says how many there were ({@link #flush}, or the next refusal after
 * the window). A flood of bad connections is a few lines a minute per address, never one line per connection, and never
 * silence. Peer-supplied text is escaped and bounded ({@link PeerText}).
 *
 * <p>It logs through the sink its owner gives (a logger's warn), so it depends on no logging library.
 */
public final class ConnectionRefusals
{
    public static final Duration WINDOW = Duration.ofMinutes(1);
    public static final int LOGGED_PER_WINDOW = 3;
    // peers remembered for rate limiting; beyond this the oldest window is summarized and forgotten
    private static final int MAX_PEERS = 4096;

    /** One counter of the metric. */
    public record Key(String listener, String reason) {}

    private static final class Window
    {
        final long startNanos;
        int logged;
        long suppressed;
        final Map<String, Long> suppressedReasons = new TreeMap<>();

        Window(long startNanos)
        {
            this.startNanos = startNanos;
        }
    }

    private final Consumer<String> log;
    private final LongSupplier clock;
    private final long windowNanos;
    private final Map<Key, AtomicLong> counts = new ConcurrentHashMap<>();
    // Guarded by itself: (listener, peer) -> the current window.
    private final LinkedHashMap<String, Window> windows = new LinkedHashMap<>();

    public ConnectionRefusals(Consumer<String> log)
    {
        this(log, System::nanoTime, WINDOW);
    }

    public ConnectionRefusals(Consumer<String> log, LongSupplier clock, Duration window)
    {
        this.log = requireNonNull(log, "log is null");
        this.clock = requireNonNull(clock, "clock is null");
        this.windowNanos = requireNonNull(window, "window is null").toNanos();
        if (windowNanos <= 0) {
            throw new IllegalArgumentException("window must be positive, was " + window);
        }
    }

    /**
     * Counts one connection that {@code listener} dropped or refused, and logs it unless this peer already had its
     * share of lines in the current window.
     *
     * @param listener what refused it, a short metric label: "control", "transfer", "http"
     * @param peerHost the peer's address without the port (each connection has a new one)
     * @param reason a short metric label: "limit", "hello-timeout", "malformed", "auth", ...
     * @param detail what happened, for the log line; may come from the peer (it is escaped and bounded here)
     */
    public void refused(String listener, String peerHost, String reason, String detail)
    {
        requireNonNull(listener, "listener is null");
        requireNonNull(reason, "reason is null");
        counts.computeIfAbsent(new Key(listener, reason), k -> new AtomicLong()).incrementAndGet();
        String peer = PeerText.clean(peerHost, 100);
        long now = clock.getAsLong();
        List<String> lines = new ArrayList<>(2);
        synchronized (windows) {
            String key = listener + " " + peer;
            Window window = windows.get(key);
            if (window != null && now - window.startNanos >= windowNanos) {
                summary(key, window).ifPresent(lines::add);
                windows.remove(key);
                window = null;
            }
            if (window == null) {
                window = new Window(now);
                windows.put(key, window);
                evictOldest(lines);
            }
            if (window.logged < LOGGED_PER_WINDOW) {
                window.logged++;
                lines.add(listener + " listener refused a connection from " + peer + " (" + reason + "): " + PeerText.clean(detail, 400));
            }
            else {
                window.suppressed++;
                window.suppressedReasons.merge(reason, 1L, Long::sum);
            }
        }
        lines.forEach(log);
    }

    /** Logs the summary of every window that has ended, and forgets it; call now and then (a listener's tick). */
    public void flush()
    {
        long now = clock.getAsLong();
        List<String> lines = new ArrayList<>();
        synchronized (windows) {
            for (var it = windows.entrySet().iterator(); it.hasNext(); ) {
                Map.Entry<String, Window> entry = it.next();
                if (now - entry.getValue().startNanos >= windowNanos) {
                    summary(entry.getKey(), entry.getValue()).ifPresent(lines::add);
                    it.remove();
                }
            }
        }
        lines.forEach(log);
    }

    /** Every counter so far, by listener and reason. */
    public Map<Key, Long> counts()
    {
        Map<Key, Long> out = new TreeMap<>((a, b) -> a.listener().equals(b.listener()) ? a.reason().compareTo(b.reason())
                : a.listener().compareTo(b.listener()));
        counts.forEach((key, count) -> out.put(key, count.get()));
        return out;
    }

    /** All refusals of one listener. */
    public long total(String listener)
    {
        long total = 0;
        for (Map.Entry<Key, AtomicLong> entry : counts.entrySet()) {
            if (entry.getKey().listener().equals(listener)) {
                total += entry.getValue().get();
            }
        }
        return total;
    }

    private void evictOldest(List<String> lines)
    {
        while (windows.size() > MAX_PEERS) {
            var oldest = windows.entrySet().iterator();
            Map.Entry<String, Window> entry = oldest.next();
            summary(entry.getKey(), entry.getValue()).ifPresent(lines::add);
            oldest.remove();
        }
    }

    private Optional<String> summary(String key, Window window)
    {
        if (window.suppressed == 0) {
            return Optional.empty();
        }
        int space = key.indexOf(' ');
        return Optional.of(key.substring(0, space) + " listener refused " + window.suppressed + " more connection(s) from "
                + key.substring(space + 1) + " within " + windowNanos / 1_000_000_000 + " s that were not logged one by one: "
                + window.suppressedReasons);
    }
}
