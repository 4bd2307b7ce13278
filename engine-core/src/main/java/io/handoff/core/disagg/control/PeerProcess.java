package io.handoff.core.disagg.control;

import io.handoff.trace.PeerText;
import java.io.IOException;
import java.net.InetAddress;
import java.nio.file.Files;
import java.nio.file.Path;

import static java.util.Objects.requireNonNull;

/**
 * One server process as its hello answer names it: its host id ({@code host name/kernel boot id}, see
 * {@link #localHostId}), pid, start time (epoch milliseconds, or {@link ControlMessage.HelloResult#UNKNOWN_START})
 * and incarnation. Two processes with the same pid are told apart by the start time (pids are reused) and by the
 * incarnation (drawn at every start).
 */
public record PeerProcess(String hostId, long pid, long startMillis, String incarnation)
{
    private static final String LOCAL_HOST_ID = computeHostId();

    public PeerProcess
    {
        hostId = PeerText.printable(requireNonNull(hostId, "hostId is null"));
        incarnation = PeerText.printable(requireNonNull(incarnation, "incarnation is null"));
    }

    /** This process, as incarnation {@code incarnation}. */
    public static PeerProcess current(String incarnation)
    {
        ProcessHandle self = ProcessHandle.current();
        return new PeerProcess(LOCAL_HOST_ID, self.pid(), ProcessCheck.startMillis(self), incarnation);
    }

    /** The host name part of the host id. */
    public String hostName()
    {
        int slash = hostId.indexOf('/');
        return slash < 0 ? hostId : hostId.substring(0, slash);
    }

    /** The kernel boot id part of the host id; empty when the host did not report one. */
    public String bootId()
    {
        int slash = hostId.indexOf('/');
        return slash < 0 ? "" : hostId.substring(slash + 1);
    }

    /** Whether the answer named this process at all (an accepted hello answer does; a bare {@code ACCEPTED} does not). */
    public boolean known()
    {
        return !hostId.isEmpty() && pid > 0;
    }

    @Override
    public String toString()
    {
        return "process " + pid + " on " + hostId + (incarnation.isEmpty() ? "" : " (incarnation " + incarnation + ")");
    }

    /** This host's id: its name and, where the kernel has one, its boot id ({@code name/boot-id}). */
    public static String localHostId()
    {
        return LOCAL_HOST_ID;
    }

    private static String computeHostId()
    {
        String host;
        try {
            host = InetAddress.getLocalHost().getHostName();
        }
        catch (IOException e) {
            host = "unknown-host";
        }
        String boot = "";
        try {
            Path bootId = Path.of("/proc/sys/kernel/random/boot_id");
            if (Files.isReadable(bootId)) {
                boot = Files.readString(bootId).strip();
            }
        }
        catch (IOException e) {
            boot = "";
        }
        return boot.isEmpty() ? host : host + "/" + boot;
    }
}
