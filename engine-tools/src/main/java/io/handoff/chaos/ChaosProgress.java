package io.handoff.chaos;

import java.io.PrintWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Locale;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLongArray;

import static java.util.Objects.requireNonNull;

/**
 * The soak's progress on stderr: a bar redrawn in place when stderr is a terminal, else a line every few seconds (a
 * log file or a CI console gets no control characters).
 */
public final class ChaosProgress
{
    /** Makes the display once the number of requests is known. */
    @FunctionalInterface
    public interface Factory
    {
        ChaosProgress create(int total);
    }

    private static final long LINE_EVERY_NANOS = TimeUnit.SECONDS.toNanos(5);
    private static final int BAR_WIDTH = 30;

    private final PrintWriter err;
    private final boolean terminal;
    private final int total;
    private final long start = System.nanoTime();
    private final AtomicLongArray counts = new AtomicLongArray(RequestOutcome.Kind.values().length);
    private long lastLine = start;

    public ChaosProgress(PrintWriter err, boolean terminal, int total)
    {
        this.err = requireNonNull(err, "err is null");
        this.terminal = terminal;
        this.total = total;
    }

    /** Whether this process's stderr is a terminal (Linux: what file descriptor 2 links to). */
    public static boolean stderrIsTerminal()
    {
        try {
            String target = Files.readSymbolicLink(Path.of("/proc/self/fd/2")).toString();
            return target.startsWith("/dev/pts/") || target.startsWith("/dev/tty");
        }
        catch (Exception e) {
            return false;
        }
    }

    synchronized void ended(RequestOutcome outcome)
    {
        counts.incrementAndGet(outcome.kind().ordinal());
        long now = System.nanoTime();
        long done = done();
        // a timed soak (total 0) has no end to fill a bar towards: it prints lines
        if (terminal && total > 0) {
            int filled = (int) (BAR_WIDTH * done / Math.max(1, total));
            err.print("\r[" + "#".repeat(filled) + " ".repeat(BAR_WIDTH - filled) + "] " + summary(done, now));
            if (done == total) {
                err.println();
            }
            err.flush();
        }
        else if (now - lastLine >= LINE_EVERY_NANOS || done == total) {
            lastLine = now;
            err.println("handoff chaos: " + summary(done, now));
            err.flush();
        }
    }

    private long done()
    {
        long done = 0;
        for (int i = 0; i < counts.length(); i++) {
            done += counts.get(i);
        }
        return done;
    }

    private String summary(long done, long now)
    {
        return String.format(Locale.ROOT, "%d/%s  completed %d  aborted %d  failed %d  hung %d  %.0f s", done, total > 0 ? Integer.toString(total) : "-",
                counts.get(RequestOutcome.Kind.COMPLETED.ordinal()), counts.get(RequestOutcome.Kind.ABORTED.ordinal()),
                counts.get(RequestOutcome.Kind.FAILED.ordinal()), counts.get(RequestOutcome.Kind.HUNG.ordinal()), (now - start) / 1e9);
    }
}
