package io.handoff.core.disagg.control;

/**
 * Whether a process runs on this host: what a prefill consults to answer a decode's {@link ControlMessage.ProcessQuery}.
 * Tests pass their own, so that a dead or live predecessor needs no real process.
 */
@FunctionalInterface
public interface ProcessCheck
{
    /** The processes of this host, through {@link ProcessHandle}. */
    ProcessCheck SYSTEM = (pid, startMillis) -> ProcessHandle.of(pid)
            .filter(ProcessHandle::isAlive)
            .map(process -> {
                long started = startMillis(process);
                // a pid now held by a process that started at another time was reused: the one asked about is gone
                return started == ControlMessage.HelloResult.UNKNOWN_START || started == startMillis;
            })
            .orElse(false);

    /**
     * Whether process {@code pid} that started at {@code startMillis} may still run here: false only when it certainly
     * does not (no such pid, or the pid belongs to a process that started at another time).
     */
    boolean mayRun(long pid, long startMillis);

    /** When {@code process} started, in epoch milliseconds, or {@link ControlMessage.HelloResult#UNKNOWN_START}. */
    static long startMillis(ProcessHandle process)
    {
        return process.info().startInstant().map(java.time.Instant::toEpochMilli).orElse(ControlMessage.HelloResult.UNKNOWN_START);
    }
}
