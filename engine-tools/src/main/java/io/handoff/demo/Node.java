package io.handoff.demo;

import java.time.Duration;
import java.util.List;
import java.util.Optional;

/** A server the demo started, in its own process or as threads of this one. */
public interface Node
{
    NodeSpec spec();

    /** Empty while it runs; once it has ended, how ("exited with code 1"). */
    Optional<String> ended();

    /** It ended because the address it was to listen on was taken ({@link io.handoff.cli.Main#ADDRESS_IN_USE}). */
    boolean endedForTakenAddress();

    /** Where its output goes, for people: a log file, or this process's stderr. */
    String logLocation();

    /** The last {@code lines} lines of its output, when they can be read. */
    List<String> logTail(int lines);

    /** Asks it to stop the way SIGTERM does (finish or abort in-flight requests, free every page); does not wait. */
    void terminate();

    /** Waits at most {@code timeout} for it to end; true when it has. */
    boolean awaitEnd(Duration timeout)
            throws InterruptedException;

    /** Ends it now (SIGKILL), with whatever it started. */
    void kill();
}
