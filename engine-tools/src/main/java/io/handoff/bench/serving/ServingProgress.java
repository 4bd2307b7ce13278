package io.handoff.bench.serving;

import java.io.PrintWriter;
import java.util.Locale;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;

import static java.util.Objects.requireNonNull;

/**
 * The run's progress on stderr: requests done of the total, failed, elapsed time and request rate; a bar redrawn in place
 * when stderr is a terminal, else a line every few seconds (a log file gets no control characters).
 */
final class ServingProgress
        implements Consumer<Sample>
{
    private static final long LINE_EVERY_NANOS = TimeUnit.SECONDS.toNanos(5);
    private static final int BAR_WIDTH = 30;

    private final PrintWriter err;
    private final boolean terminal;
    private final int total;
    private final long start = System.nanoTime();
    private long lastLine = start;
    private int done;
    private int failed;

    ServingProgress(PrintWriter err, boolean terminal, int total)
    {
        this.err = requireNonNull(err, "err is null");
        this.terminal = terminal;
        this.total = total;
    }

    @Override
    public synchronized void accept(Sample sample)
    {
        done++;
        failed += sample.completed() ? 0 : 1;
        long now = System.nanoTime();
        if (terminal) {
            int filled = BAR_WIDTH * done / Math.max(1, total);
            err.print("\r[" + "#".repeat(filled) + " ".repeat(BAR_WIDTH - filled) + "] " + summary(now));
            if (done == total) {
                err.println();
            }
            err.flush();
        }
        else if (now - lastLine >= LINE_EVERY_NANOS || done == total) {
            lastLine = now;
            err.println("handoff bench serving: " + summary(now));
            err.flush();
        }
    }

    private String summary(long now)
    {
        double seconds = (now - start) / 1e9;
        return String.format(Locale.ROOT, "%d/%d requests  failed %d  %.1f s  %.2f req/s", done, total, failed, seconds, seconds > 0 ? done / seconds : 0);
    }
}
