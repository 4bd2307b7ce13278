package io.handoff.cli;

import org.apache.logging.log4j.LogManager;
import org.apache.logging.log4j.Logger;

import java.util.Optional;

/**
 * A server started by a supervisor ({@code handoff up}) ends with it: when the process named by
 * {@value #PARENT_PID} ends, however it ends (kill -9 included), this process exits as on SIGTERM, through the same
 * graceful stop. Without the variable nothing is watched.
 */
public final class ParentWatch
{
    public static final String PARENT_PID = "HANDOFF_PARENT_PID";
    private static final Logger log = LogManager.getLogger(ParentWatch.class);

    private ParentWatch() {}

    /** Watches the process {@value #PARENT_PID} names, if it names one; refuses a value that is not a pid. */
    public static void fromEnvironment()
    {
        String text = System.getenv(PARENT_PID);
        if (text == null || text.isBlank()) {
            return;
        }
        long pid;
        try {
            pid = Long.parseLong(text.strip());
        }
        catch (NumberFormatException e) {
            throw new IllegalArgumentException(PARENT_PID + " = '" + text + "' is not a process id; unset it, or set it to the pid of the process this server should end with");
        }
        Optional<ProcessHandle> parent = ProcessHandle.of(pid);
        if (parent.isEmpty() || !parent.get().isAlive()) {
            log.warn("the process this server was started for ({} = {}) has already ended; exiting", PARENT_PID, pid);
            System.exit(Main.FAILURE);
        }
        parent.get().onExit().thenRun(() -> {
            log.warn("the process this server was started for ({} = {}) ended; stopping", PARENT_PID, pid);
            // on a thread of its own: exit runs the shutdown hooks, which wait for the graceful stop
            Thread.ofPlatform().name("handoff-parent-gone").start(() -> System.exit(Main.OK));
        });
    }
}
